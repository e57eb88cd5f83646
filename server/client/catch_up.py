"""How the client library catches a table up: a ``sync`` on a gap, its pages one after the
other, live events held until the missed ones are handed on, refusals sent again for at most
``sync_retry_for`` seconds. :class:`CatchUp` is a part of :class:`server.client.Client`, which
supplies the socket (``_ask``, ``_spawn``) and the delivery (``_deliver``, ``_live_event``).

**No gap, no repeat** (PROTOCOL.md §5): the versioned events of a table are handed on in
order, each once. When one arrives ahead of the next version expected, or a ``resume`` or
``watching`` says the table moved on (a node was lost and another took the table over), the
client sends ``sync`` from the last version it handed on and holds the live events until
the answer has delivered what was missed. A ``sync`` refused with ``unavailable`` (the
table is changing hands, PROTOCOL.md §15) is sent again after its ``retry_after`` (sooner
when the table speaks again), for at most ``sync_retry_for`` seconds; one cut by a lost
socket is sent again on the next. Events past a gap are never handed on: when the client
gives up, they are dropped, and the next event (or the application's own ``sync``) starts
again. A ``sync`` answer is one page of the table's log (``next`` set when more follow): the
client delivers its events and asks for the next page itself, the application's own ``sync``
included, until the last one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from server.client.accounts import ClientError, ConnectionLost, RequestFailed, RequestTimeout
from server.client.wire import Message, TableState
from server.protocol.lean import apply_event

log = logging.getLogger("server.client.connection")

SYNC_RETRY_CODES = frozenset({"unavailable", "rate_limited"})
"""``sync`` refusals that pass: sent again after ``retry_after``."""
SYNC_RETRY_WAIT = 1.0
"""The wait before a ``sync`` is sent again when the refusal gives no ``retry_after`` (s)."""
SYNC_RETRY_WAIT_MAX = 5.0


@dataclass
class TableView:
    """What the client knows of one table: the last version handed on and the state after
    it. ``syncing``: a ``sync`` is on its way; live events wait in ``held`` until it has
    delivered what was missed."""

    table: str
    v: int = 0
    state: Message | None = None
    seated: bool = False
    watching: bool = False
    syncing: bool = False
    held: list[Message] = field(default_factory=list)
    sync_task: asyncio.Task[None] | None = field(default=None, repr=False)
    poke: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set when the table speaks while a refused ``sync`` waits to be sent again."""

    def typed_state(self) -> TableState | None:
        return None if self.state is None else TableState.from_dict(self.state)

    def apply(self, message: Message, player: str, full_states: bool) -> bool:
        """Take the versioned event ``message`` into the view (its state, or its changes
        applied; ``full_states``: the state written into a change-only event too); False
        when it was seen already."""
        v = message.get("v")
        if not isinstance(v, int) or v <= self.v:
            return False
        self.v = v
        state = message.get("state")
        if isinstance(state, dict):
            self.state = state
        elif "changes" in message and self.state is not None:
            self.state = apply_event(self.state, message)
            if full_states:
                message["state"] = self.state
        kind = message.get("type")
        if kind == "seated" and message.get("player") == player:
            self.seated = True
        elif kind == "table_closed":
            self.seated = self.watching = False
        return True

    def served(self, kind: str, v: object, state: object, catch_up: bool) -> bool:
        """A ``resume`` or ``watching`` at version ``v``: the view starts there, or takes its
        state (also at a version below the view's: the table went back, a store failover lost
        events its players were told); True when the table moved on past the view, so a
        ``sync`` must catch up."""
        if kind == "resume":
            self.seated = True
        else:
            self.watching = True
        if not isinstance(v, int) or not isinstance(state, dict):
            return False
        if self.syncing:
            self.poke.set()  # the table is served again: a waiting sync goes now
        elif self.v == 0:  # the first word of this table: the versions start here
            self.v, self.state = v, state
        elif v > self.v:
            return catch_up  # the table moved on without us
        else:  # the same version, or one below: the table went back (PROTOCOL.md §15)
            self.v, self.state = v, state
        return False

    def side_of(self, player: str) -> int | None:
        """``player``'s side in the latest state, or None."""
        for i, seat in enumerate((self.state or {}).get("seats") or ()):
            if seat is not None and seat.get("player") == player:
                return i
        return None

    def game(self) -> Message | None:
        """The latest state's game, or None."""
        game = None if self.state is None else self.state.get("game")
        return game if isinstance(game, dict) and game else None


class CatchUp:
    """The catch-up part of a client (see the module docstring)."""

    tables: dict[str, TableView]
    catch_up: bool
    sync_retry_for: float
    _closing: bool
    _connected: bool
    _generation: int

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        raise NotImplementedError

    async def _ask(self, message: Mapping[str, Any], timeout: float | None = None) -> Message:
        raise NotImplementedError

    def _deliver(self, view: TableView, message: Message) -> None:
        raise NotImplementedError

    def _live_event(self, view: TableView, message: Message) -> None:
        raise NotImplementedError

    def _synced(self, view: TableView, answer: Message) -> None:
        """Apply a ``sync`` answer (to the library's request or the application's): the
        missed events, in order, then the events held meanwhile."""
        events = [e for e in answer.get("events") or () if isinstance(e, dict)]
        fresh = [e for e in events if isinstance(e.get("v"), int) and e["v"] > view.v]
        if fresh and fresh[0]["v"] == view.v + 1:
            for missed in fresh:
                if missed["v"] != view.v + 1:
                    break  # never past a gap (an incomplete log)
                self._deliver(view, missed)
        following = answer.get("next")
        if isinstance(following, int) and following == view.v and self.catch_up:
            # One page of a longer log, delivered: the next page is asked for from here
            # (by the sync loop, which goes on while the view is syncing).
            if not view.syncing:
                self._start_sync(view)
            return
        v = answer.get("v")
        state = answer.get("state")
        since = answer.get("since")
        if isinstance(v, int) and (v >= view.v or (isinstance(since, int) and since > v)):
            # the answer's state is newer than what was delivered (a log that is not
            # ``complete``), or the table went back below what was asked for (a store
            # failover lost versions): the application rebuilds from the ``sync`` event's
            # state
            view.v = v
            if isinstance(state, dict):
                view.state = state
        if not view.syncing:
            return
        view.syncing = False
        held, view.held = view.held, []
        for live in held:
            self._live_event(view, live)  # a gap left after the answer syncs again

    def _start_sync(self, view: TableView) -> None:
        """Sync ``view`` from its last version (one task per table at a time)."""
        view.syncing = True
        if view.sync_task is None or view.sync_task.done():
            view.sync_task = self._spawn(self._sync_until_done(view))
        else:
            view.poke.set()

    async def _sync_until_done(self, view: TableView) -> None:
        loop = asyncio.get_running_loop()
        deadline = 0.0
        socket = -1
        rewatched = False
        while view.syncing and not self._closing and self.tables.get(view.table) is view:
            generation = self._generation
            if generation != socket:  # each socket gets the whole budget
                socket = generation
                deadline = loop.time() + self.sync_retry_for
            wait = 0.0
            view.poke.clear()  # the table speaking from now on wakes the wait below
            since = view.v
            try:
                # the answer is applied by the reader (_synced) before this returns
                await self._ask({"type": "sync", "table": view.table, "since": since})
                if not view.syncing or view.v > since:
                    continue  # done, unless the held events left another gap
                # answered, but the held events are still ahead of it: the server has not
                # caught up with itself yet (a table changing hands); ask again shortly
                if loop.time() >= deadline:
                    self._sync_failed(view, ClientError("the sync answers stay behind"))
                    return
                wait = 0.1
                view.poke.clear()  # (set by the held events just replayed)
            except RequestFailed as exc:
                if exc.code == "not_seated" and view.watching and not view.seated \
                        and not rewatched:
                    # A watch is per socket and per owner: the table's new owner (after a
                    # takeover) does not know this one. Watch again, then sync.
                    rewatched = True
                    with contextlib.suppress(ClientError):
                        await self._ask({"type": "watch", "table": view.table})
                    continue
                if exc.code not in SYNC_RETRY_CODES or loop.time() >= deadline:
                    self._sync_failed(view, exc)
                    return
                retry_after = exc.error.raw.get("retry_after")
                wait = float(retry_after) if isinstance(retry_after, int | float) \
                    else SYNC_RETRY_WAIT
            except RequestTimeout as exc:
                if loop.time() >= deadline:
                    self._sync_failed(view, exc)
                    return
            except ConnectionLost:
                if self._connected and self._generation != generation:
                    continue  # a new socket is open already: sync there
                return  # the next socket's reconnect syncs again (the events stay held)
            wait = min(wait, SYNC_RETRY_WAIT_MAX, max(0.0, deadline - loop.time()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await view.poke.wait()

    def _sync_failed(self, view: TableView, exc: Exception) -> None:
        """Give up catching ``view`` up: hand on the held events that follow on without a
        gap, drop the rest (the next event, or a ``sync`` the application sends, tries
        again)."""
        log.warning("sync of %s failed: %s", view.table, exc)
        view.syncing = False
        held, view.held = view.held, []
        for live in held:
            v = live.get("v")
            if isinstance(v, int) and v > view.v + 1:
                break
            self._deliver(view, live)

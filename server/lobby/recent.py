"""A table's recent-events window and the pages of ``sync`` (PROTOCOL.md §5.2), on the
table's owner node.

The last ``recent_events`` events are kept in memory as (version, msgpack bytes of the lean
form, as in the Redis log): a sync decodes them, which is rare, and bytes cost far less memory
(and garbage-collector time) than the dicts. The full form is rebuilt from the lean one when a
client asks for it: from the state before the window's first event (kept as the window
slides), or, for a page read from the Redis log, from the start of the page's game.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from server.protocol.lean import apply_event
from server.tables.records import replay_events

__all__ = ["RecentEvents", "SyncPage"]

#: Reads the events ``start + 1 .. upto`` (lean) from the table's Redis log.
ReadLog = Callable[[int, int], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class SyncPage:
    """One page of a ``sync`` answer: ``events`` after the asked ``since``; ``complete``:
    they are exactly ``since + 1 .. version``; ``next``: the ``since`` of the next page (None:
    the last page)."""

    events: list[dict[str, Any]]
    complete: bool
    next: int | None


class RecentEvents:
    """The latest events of one table (see the module docstring)."""

    def __init__(self, size: int) -> None:
        self.window: deque[tuple[int, bytes]] = deque(maxlen=size)
        # The state after the event just before ``window[0]`` (None: no state yet): the full
        # form of the recent events is rebuilt from it for a sync.
        self.base_state: dict[str, Any] | None = None
        # (v, the state after version v) the last protocol-1 sync from memory folded up to.
        self._folded: tuple[int, dict[str, Any] | None] | None = None

    def append(self, version: int, packed: bytes) -> None:
        """Keep the event ``version`` (lean, msgpack); the oldest one leaves a full window."""
        window = self.window
        if len(window) == window.maxlen:
            _, oldest = window.popleft()
            self.base_state = apply_event(self.base_state, msgpack.unpackb(oldest))
        window.append((version, packed))

    def load(self, events: Iterable[Mapping[str, Any]], upto: int) -> None:
        """Fill the window from a stored log (a table taken over): the events up to ``upto``
        from ``v=1`` or from a ``game_start`` on (earlier ones cannot be rebuilt)."""
        for event in events:
            v = int(event["v"])
            if v <= upto and (self.window or v == 1 or event.get("type") == "game_start"):
                self.append(v, msgpack.packb(event))

    def clear(self, last_state: dict[str, Any] | None) -> None:
        """Every event is in the Redis log and the table lingers finished: sync reads the log
        from now on (``last_state``: the state of the latest event)."""
        self.window.clear()
        self.base_state = last_state
        self._folded = None

    def game_log(self, game_starts: Sequence[int], version: int) -> list[bytes] | None:
        """The current game's events as logged (msgpack), from its start to ``version``, when
        the window still holds them all; else None."""
        start = max((v for v in game_starts if v <= version), default=1)
        window = self.window
        if not window or window[0][0] > start:
            return None
        return [packed for v, packed in window if v >= start]

    async def page(self, since: int, version: int, size: int, *, lean: bool,
                   game_starts: Sequence[int], read_log: ReadLog) -> SyncPage:
        """At most ``size`` events after ``since`` (the table is at ``version``), from memory
        or as one bounded range of the Redis log (``read_log``), lean or full."""
        after = min(since, version)
        upto = min(version, after + size)
        window = self.window
        events: list[dict[str, Any]]
        if after == version:
            events = []
        elif window and window[0][0] <= after + 1:
            events = [msgpack.unpackb(packed) for v, packed in window if after < v <= upto]
            if not lean:
                events = self.full(events)
        else:
            start = after
            if not lean:
                start = max((v - 1 for v in game_starts if v <= after + 1), default=after)
            events = await read_log(start, upto)
            if not lean:
                events = [e for e in self.full(events) if e["v"] > after]
        # Complete: the events are exactly after+1 .. version (each once, in order). Not when
        # the client asked from beyond the table's version (it holds versions this table does
        # not: it rebuilds from ``state``), nor when some are missing (a log trimmed, or an
        # in-memory window that does not reach the version), nor when more pages follow.
        whole = len(events) == upto - after and (
            not events or (events[0]["v"] == after + 1 and events[-1]["v"] == upto))
        complete = since <= version and whole and upto == version
        more = bool(events) and events[-1]["v"] < version
        return SyncPage(events, complete, events[-1]["v"] if more else None)

    def full(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``events`` (lean, in order) in the full form. From the window they are rebuilt
        from the state before it; from the Redis log, from the first event that carries a
        whole state (a game's start; change-only events before it keep no state)."""
        state: dict[str, Any] | None = None
        window = self.window
        if events and window and events[0]["v"] >= window[0][0]:
            first = events[0]["v"]
            # Folded on from the state a previous sync reached (still in the window), so
            # repeated syncs near the end of the window fold only what is new.
            folded = self._folded
            if folded is not None and window[0][0] - 1 <= folded[0] < first:
                after, state = folded
            else:
                after, state = window[0][0] - 1, self.base_state
            for v, packed in window:
                if v <= after:
                    continue
                if v >= first:
                    break
                state = apply_event(state, msgpack.unpackb(packed))
            self._folded = (first - 1, state)
        return replay_events(events, state)

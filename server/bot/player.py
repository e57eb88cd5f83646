"""A computer player on one client connection (``server.client``): it reads the table's
events and answers every decision awaited from its side with :func:`server.bot.strategy.
decide`, until the game (or the match) is over. The public protocol only.

The choice may run elsewhere: ``think`` is an async function (level, game, side, seed) ->
``(kind, play)``; :func:`think_here` runs it on the event loop (fine for ``random``, and
for the rungs without a search in a bot of its own process, a millisecond), :func:`think_in`
in an executor (the server's process pool, so no evaluation or search holds its event
loop). A choice slower than
``decision_timeout`` raises :class:`BotStalled`; the caller forfeits.

Each decision is a request (``act``): the client library keeps the server's message rate
and sends a decision refused ``rate_limited`` again after its ``retry_after``, so no game
stalls on a dropped message. On a client with ``auto_reconnect`` (the CLI bot's), a decision
that could not be sent because the socket dropped (a node restart) waits for the reconnect:
the library's ``sync`` then brings the decision back if it still stands. Without it,
ConnectionLost ends the game.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from server.bot.strategy import Decision, Level, decide
from server.client import (
    Client,
    ConnectionLost,
    RequestFailed,
    RequestTimeout,
    ServerError,
    TableEvent,
)

log = logging.getLogger(__name__)

Choice = tuple[str, tuple[tuple[int, int], ...] | None] | None
Think = Callable[[Level, Mapping[str, Any], int, int], Awaitable[Choice]]

GAME_ERRORS = frozenset({"not_your_turn", "wrong_phase", "game_over", "not_playing"})
"""Errors a bot may see when the server acted first (a clock ran out): not bugs."""
RETRY_CODES = frozenset({"rate_limited", "unavailable", "busy"})
"""Refusals of a decision that say nothing was done and to ask again later."""


class BotStalled(TimeoutError):
    """The bot took longer than its decision timeout."""


def choose(level: Level, game: Mapping[str, Any], side: int, seed: int) -> Choice:
    """The decision as plain data (picklable, for a process pool)."""
    return _as_choice(decide(level, game, side, random.Random(seed)))


def choose_quick(level: Level, game: Mapping[str, Any], side: int, seed: int) -> Choice:
    """:func:`choose` searching at most one roll deep (milliseconds at every level); a busy
    node's fallback."""
    return _as_choice(decide(level, game, side, random.Random(seed), quick=True))


def _as_choice(decision: Decision | None) -> Choice:
    if decision is None:
        return None
    return decision.kind, decision.play


async def think_here(level: Level, game: Mapping[str, Any], side: int, seed: int) -> Choice:
    return choose(level, game, side, seed)


def think_in(executor: Executor | None, *, quick: bool = False) -> Think:
    """A ``think`` that runs :func:`choose` (``quick``: :func:`choose_quick`) in
    ``executor`` (None: the loop's default)."""
    function = choose_quick if quick else choose

    async def think(level: Level, game: Mapping[str, Any], side: int, seed: int) -> Choice:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, function, level, dict(game), side, seed)

    return think


@dataclass
class GameLog:
    """What a bot saw of one table: for tests and the CLI."""

    table: str
    decisions: int = 0
    doubles: int = 0
    answers: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    final: dict[str, Any] | None = None


def _decision_point(state: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies the decision awaited in ``state``: the position and the match (GNU
    ids: cube, turn, dice, phase), with the phase and the side to act."""
    game = state.get("game") or {}
    return (state.get("status"), game.get("position_id"), game.get("match_id"),
            game.get("phase"), game.get("to_act"), str(game.get("dice")))


class BotPlayer:
    def __init__(self, client: Client, level: Level | str, *, seed: int | None = None,
                 think: Think = think_here, decision_timeout: float = 15.0) -> None:
        self.client = client
        self.level = Level(level)
        self.rng = random.Random(seed)
        self.think = think
        self.decision_timeout = decision_timeout

    async def play_table(self, table: str, *, idle_timeout: float | None = None) -> GameLog:
        """Play at ``table`` until its game ends (a match: until the match ends) or the
        table closes. Returns what happened; raises :class:`BotStalled` for a choice
        slower than ``decision_timeout``, ConnectionLost when the socket is gone."""
        client = self.client
        record = GameLog(table)
        acted = -1
        last: tuple[Any, ...] | None = None  # the game as of the last event with a state
        state = client.state(table)
        if state is not None and state.get("status") in ("finished", "closed"):
            record.final = state
            return record  # over before this bot came (its opponent left, say)
        if state is not None:  # the resume or game_start may have arrived already
            last = _decision_point(state)
            acted = await self._maybe_act(table, state, client.tables[table].v, acted, record)
        while True:
            event = await client.next_event(idle_timeout)
            if isinstance(event, ServerError):
                if event.table in (None, table) and event.code not in GAME_ERRORS:
                    record.errors.append(f"{event.code}: {event.message}")
                    log.warning("bot %s at %s: %s", client.player, table, event.message)
                continue
            if not isinstance(event, TableEvent) or event.table != table:
                continue
            kind = event.type
            if kind == "table_closed":
                record.final = event.raw
                return record
            if kind == "match_over" or (kind == "game_over" and self._is_last(event.raw)):
                record.final = event.raw
                return record
            # A ``sync`` answer is read as the table's view now (its pages are delivered
            # already): that state goes with the view's version, which may be past the
            # answer's own ``v``: acting on it under the answer's older version would mark
            # the decision seen but not answered.
            version = event.v
            if kind == "sync":
                state = client.state(table)
                view = client.tables.get(table)
                version = max(version, view.v) if view is not None else version
            else:
                state = event.raw.get("state")
            if kind in ("resume", "sync") and isinstance(state, dict) and \
                    state.get("status") in ("finished", "closed"):
                record.final = event.raw
                return record
            if not isinstance(state, dict):
                continue
            # An event that leaves the game as it was (a player disconnected, reconnected,
            # a watcher came) is no new decision: deciding again would send a second answer
            # to a decision already answered, arriving at a later one. After a reconnect
            # (resume, sync) the bot decides again: its answer may have been lost; after a
            # hold (resumed) too: an answer sent during it was refused.
            now = _decision_point(state)
            if now == last and kind not in ("resume", "sync", "resumed"):
                continue
            last = now
            acted = await self._maybe_act(table, state, version, acted, record)

    @staticmethod
    def _is_last(raw: Mapping[str, Any]) -> bool:
        state = raw.get("state") or {}
        match = state.get("match")
        return match is None or match.get("winner") is not None

    async def _maybe_act(self, table: str, state: Mapping[str, Any], v: int, acted: int,
                         record: GameLog) -> int:
        game = state.get("game")
        if v <= acted or state.get("status") != "playing" or not game:
            return acted
        side = self.client.side(table)
        if side is None or game.get("to_act") != side:
            return acted
        try:
            async with asyncio.timeout(self.decision_timeout):
                choice = await self.think(self.level, game, side, self.rng.getrandbits(32))
        except TimeoutError:
            raise BotStalled(f"no decision in {self.decision_timeout}s") from None
        if choice is None:
            return acted
        kind, play = choice
        record.decisions += 1
        if kind == "double":
            record.doubles += 1
        elif kind in ("take", "drop"):
            record.answers[kind] = record.answers.get(kind, 0) + 1
        try:
            # A request: the library paces it and sends it again after a ``rate_limited``
            # refusal, so no decision is lost to the message rate.
            await self.client.act(table, Decision(kind, play).to_message(table))
        except RequestFailed as exc:
            # The server acted first (a clock ran out), or the table is held or changing
            # hands (its ``resumed``/``resume`` asks again); the refusal is an event too,
            # which play_table records unless it is one of GAME_ERRORS.
            log.debug("bot %s at %s: %s refused: %s", self.client.player, table, kind, exc)
            if exc.code in RETRY_CODES:
                # Refused before it was done, with retries spent: the decision still stands.
                # A ``sync`` brings the table's state back, and the loop decides again.
                wait = exc.error.raw.get("retry_after")
                await asyncio.sleep(float(wait) if isinstance(wait, int | float) else 1.0)
                with contextlib.suppress(RequestFailed, RequestTimeout, ConnectionLost):
                    await self.client.sync(table)
                return acted
        except RequestTimeout:
            # No answer: the node is stuck or going away; the client's silence watch
            # reconnects and its ``sync`` (or ``resume``) asks again if it still stands.
            log.warning("bot %s at %s: no answer to %s", self.client.player, table, kind)
            return acted
        except ConnectionLost:
            if not self.client.auto_reconnect:
                raise
            # The client reconnects (to another node, after a restart) and syncs: the
            # ``sync`` (or the ``resume``) asks for this decision again if it still stands.
            await self.client.wait_connected()
            return acted
        return v

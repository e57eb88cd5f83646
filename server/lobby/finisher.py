"""The end of a table's games, on the table's owner node: the table driver
(:class:`server.lobby.table.Table`) hands each :class:`~server.tables.machine.FinishedGame` the
machine decides to its :class:`Finisher`. What is settled (Table42, FIBS, Boosted points or
nothing) is the machine's answer (:attr:`FinishedGame.settles`); the finisher carries it out.

The end of a game, in this order (nothing is announced before it is stored):

1. at the same time, so that the two round trips to Redis overlap: settle ratings through the
   rating store (Table42 for a Competitive single game, FIBS when a rated match ends, Boosted
   points for a Boosted game), and, in one fenced script, write the table's buffered events
   (``game_over``/``match_over`` included) and append the result to the table's results;
   each is retried on Redis errors;
2. once both are stored, and on the replicas where the masters have some
   (``server/store/replicas.py``): broadcast ``game_over`` (and ``match_over``) to players and
   watchers, then push the rating events to the players wherever they are connected;
3. put each player's ``rating``/``boosted`` event (with its ``event_id``) in that player's
   inbox, then push it live; the node that writes it to one of the player's sockets removes
   it from the inbox, and a player connected nowhere gets it at the next connection: each
   event is delivered once.

Every write a finished game needs (the result with the buffered events, the inbox, the seat
release) is retried with back-off until Redis has stored it (an outage delays the end of a
game, it loses nothing); the settlement is retried the same way in the background.

A table taken over by another node with a game ended in its log and not settled is finished
there (:meth:`Finisher.resume`): the store applies a game id once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgpack
from redis.exceptions import RedisError

from server.lobby.announce import Announcer
from server.lobby.recent import RecentEvents
from server.lobby.table_deps import TableDeps
from server.logs import game_id as log_game_id
from server.protocol.visibility import Audience
from server.rules.mat import export_mat
from server.store.persistence import Fenced
from server.store.record_budget import Party
from server.store.retry import Backoff, retry_redis
from server.tables.machine import BOOSTED, FIBS, TABLE42, FinishedGame, TableMachine
from server.tables.ratings import boosted_events, rating_events
from server.tables.records import game_events, game_record

log = logging.getLogger(__name__)

SETTLE_ATTEMPTS = 3
#: The longest wait between two tries of an end-of-game write while Redis is away.
STORE_MAX_DELAY = 1.0
#: The longest wait between two tries of a settlement Redis refused at a game's end.
LATE_SETTLE_MAX_DELAY = 30.0

Pushes = list[tuple[str, dict[str, Any]]]

__all__ = ["Finisher", "FinishingTable", "with_event_ids"]


class FinishingTable(Protocol):
    """What the finisher asks of the table whose game ended (the table's driver)."""

    def settled(self) -> None:
        """The finished game is settled, stored and announced."""
        ...

    async def wind_up(self) -> None:
        """The last game's end is fully stored: free the seats, linger, then go."""
        ...


def with_event_ids(pushes: Pushes) -> Pushes:
    """Each rating event with its ``event_id`` (``<game or match id>:<type>:<player>``): the
    inbox removes a delivered event by it, and a client may acknowledge it."""
    return [(player, {**event, "event_id": f"{event.get('game_id')}:{event.get('type')}:"
                                           f"{player}"}) for player, event in pushes]


class Finisher:
    """Ends the games of one table (see the module docstring). It keeps no reference to the
    table's driver (which holds it): the calls that need the driver are given it, so that a
    forgotten table is freed at once, not by the garbage collector."""

    def __init__(self, deps: TableDeps, machine: TableMachine, events: RecentEvents,
                 announcer: Announcer, audience: Audience) -> None:
        """``audience``: who may see the table's games (kept with each record)."""
        self.deps = deps
        self.machine = machine
        self.announcer = announcer
        self.audience = audience
        self.table_id = machine.id
        self.events = events
        # Another node owns the table now (fenced, or handed over unfinished): the writes a
        # game's end still retries here stop (the new owner makes them).
        self.gone = False
        # The last game's end is fully stored (see wind_up): a drain gives the lease up as
        # done; a finished table not yet wound up is handed on, for its peer to settle it.
        self.wound_up = False
        # A finished game's logged events (msgpack, as in the log), taken from the memory log
        # when it ends, until its record is stored (None: read them from Redis then).
        self._game_logs: dict[str, list[bytes] | None] = {}
        self._ended_at = 0.0  # perf_counter of the last game's end (metrics)

    def game_over(self, table: FinishingTable, settlement: FinishedGame, *,
                  write_result: bool = True) -> None:
        """A game of ``table`` ended (the machine's step said so): finish it in the
        background; ``game_over`` and what follows are held until it is settled and stored."""
        machine = self.machine
        self._ended_at = time.perf_counter()
        self._game_logs[settlement.game_id] = self.events.game_log(machine.game_starts,
                                                                   machine.version)
        self.announcer.keep_back_from(machine.version - (1 if settlement.match_over
                                                         and machine.match is not None else 0))
        metrics = self.deps.metrics
        metrics.games.dec()
        metrics.games_finished.inc()
        metrics.settlements_pending.inc()
        log_game_id.set(settlement.game_id)  # the task below, and its log lines, carry it
        self.deps.tasks.spawn(self._finish(table, settlement, write_result))
        log_game_id.set("")

    async def _finish(self, table: FinishingTable, settlement: FinishedGame,
                      write_result: bool = True) -> None:
        try:
            await self._settle_and_announce(table, settlement, write_result=write_result)
        except Fenced:
            log.warning("table %s: %s is finished by the table's new owner", self.table_id,
                        settlement.game_id)
        except Exception:
            log.exception("table %s: finishing %s failed", self.table_id, settlement.game_id)
        finally:
            self.deps.metrics.settlements_pending.dec()

    async def _settle_and_announce(self, table: FinishingTable, settlement: FinishedGame, *,
                                   write_result: bool = True) -> None:
        game_id = settlement.game_id
        # The result first (a fenced write, with the game's last events), then the rating:
        # a node that lost the table (paused past its lease, the game over only in its own
        # memory) is refused there (Fenced) and settles nothing. The announcements are sent
        # once both are stored. The settlement's inputs are fixed now, so a late retry does
        # not depend on the table any more.
        settle_once = self._settlement_call(settlement)
        persistence = self.deps.persistence
        if write_result:
            await self.retry(game_id, "the result", persistence.write_result, self.table_id,
                             settlement.result, ())
        settling = asyncio.ensure_future(self._settle(settle_once))
        self.deps.metrics.settlements.inc()
        if settlement.match_over:
            # Every event is in the table's Redis log now; a finished table lingers for a
            # while, and sync reads the log instead of holding the events in memory.
            self.events.clear(self.machine.last_state)
        pushes: Pushes = []
        note: dict[str, Any] | None = None
        try:
            pushes = await settling
        except (RedisError, OSError) as exc:
            # Redis is away: keep settling in the background until it is back (idempotent by
            # game id), so the rating change is delayed, never lost.
            log.warning("table %s: settlement of %s failed (%s); retrying in the background",
                        self.table_id, game_id, exc)
            self.deps.tasks.spawn(self._settle_late(game_id, settle_once))
        except Exception as exc:
            log.exception("table %s: settlement of %s failed", self.table_id, game_id)
            note = {"game_id": game_id, "rating_error": str(exc)[:200]}
        pushes = with_event_ids(pushes)
        # The record too, before game_over goes out: whoever saw the end can replay it.
        await self.retry(game_id, "the game record", self.save_record, settlement, pushes)
        # The result, the ratings and the record are on the replicas before anyone is told
        # (server/store/replicas.py): a failover then takes none of it back.
        await self.retry(game_id, "the replication", self._replicated, settlement,
                         settle_once, pushes, [])
        self.announcer.keep_back_from(None)
        # The rating events are settled in the rating store; each goes to its player's inbox
        # first, then live: the node that writes it to a socket takes it out of the inbox,
        # and a player connected nowhere gets it at the next connection (once).
        if pushes or note is not None:
            await self.retry(game_id, "the rating inbox", persistence.write_inbox, pushes,
                             table=self.table_id, note=note, game=game_id)
        self._push_ratings(pushes)
        table.settled()
        if settlement.match_over:
            await table.wind_up()

    # --- the game's record ---------------------------------------------------------------

    def _mat_texts(self) -> tuple[str, str | None]:
        """The current game, and its match so far, as .mat text (empty when it fails: a
        record without its .mat is better than none)."""
        machine = self.machine
        names = [s.name if s is not None else f"Player{i}" for i, s in enumerate(machine.seats)]
        try:
            game = machine.game
            match = machine.match
            game_text = "" if game is None else export_mat(game, names=names)
            match_text = None if match is None else export_mat(match, names=names)
        except Exception:
            log.exception("table %s: .mat export failed", self.table_id)
            return "", None
        return game_text, match_text

    async def save_record(self, settlement: FinishedGame, pushes: Pushes) -> None:
        """Store the finished game's record (its logged events, result, rating changes and
        .mat text) and index it in both players' histories: once per game id, unless a
        player's account or address used its records' budget this hour
        (``server/store/record_budget.py``). Called before the match's next game starts
        (``machine.game`` is the finished one)."""
        machine = self.machine
        table_id = self.table_id
        game_id = settlement.game_id
        seats = [s for s in machine.seats if s is not None]
        if not await self.deps.record_budget.admit(
                game_id, [Party(s.player, s.address) for s in seats]):
            self.deps.metrics.refused("records_per_hour")
            log.info("table %s: the record of %s is not kept: a player's account or address "
                     "used its records' budget this hour", table_id, game_id)
            self._game_logs.pop(game_id, None)
            return
        packed = self._game_logs.get(game_id)
        if packed is None:
            start = max((v for v in machine.game_starts if v <= machine.version), default=1)
            log_events = await self.deps.persistence.events_since(table_id, start - 1)
            packed = [msgpack.packb(e) for e in game_events(log_events, game_id)]
        changes = {player: event["change"] for player, event in pushes
                   if event.get("type") == "rating" and event.get("change") is not None}
        mat_game, mat_match = self._mat_texts()
        try:
            record = game_record(
                table=table_id, mode=str(machine.mode), match_length=machine.match_length,
                tournament_id=machine.tournament_id, result=settlement.result,
                players=[s.player for s in seats], names=[s.name or s.player for s in seats],
                events=packed, changes=changes, mat_game=mat_game, mat_match=mat_match,
                audience=self.audience)
        except Exception:
            # A fault of the record must not hold the game's end back.
            log.exception("table %s: the record of %s could not be built", table_id, game_id)
            return
        try:
            await self.deps.records.save(record)
        except (RedisError, OSError):
            raise  # retried by the caller until stored
        except Exception:
            # A record that cannot be encoded must not hold the game's end back either.
            log.exception("table %s: the record of %s could not be stored", table_id, game_id)
            return
        self._game_logs.pop(game_id, None)

    # --- writes retried until stored --------------------------------------------------------

    async def retry(self, game_id: str, what: str, write: Callable[..., Awaitable[Any]],
                    *args: Any, **kwargs: Any) -> None:
        """``await write(*args, **kwargs)``, tried again on Redis errors with back-off (up to
        ``STORE_MAX_DELAY`` between tries) until it is stored; only a node shutdown (the task
        is cancelled) stops it, and that is logged with the game id. Raises Fenced once
        another node owns the table (it makes the write)."""
        table_id = self.table_id

        def still_mine() -> None:
            if self.gone:  # another node owns the table now: it makes this write
                raise Fenced(table_id)

        def failed(tries: int, exc: Exception) -> None:
            self.deps.metrics.settlement_retries.inc()
            if tries == SETTLE_ATTEMPTS:
                log.warning("table %s: %s of %s not stored yet (%s); retrying until it is",
                            table_id, what, game_id, exc)

        try:
            await retry_redis(lambda: write(*args, **kwargs), Backoff(most=STORE_MAX_DELAY),
                              before=still_mine, failed=failed)
        except asyncio.CancelledError:
            log.error("table %s: node stopping with %s of %s NOT stored", table_id, what,
                      game_id)
            raise

    # --- the settlement ---------------------------------------------------------------------

    async def _replicated(self, settlement: FinishedGame,
                          settle_once: Callable[[], Awaitable[Pushes]], pushes: Pushes,
                          tries: list[bool]) -> None:
        """Wait until the game's end is on the replicas (``Replicas.replicated``). After a
        wait that fell short (a replica behind, maybe a failover since that lost the
        writes), the writes are made again first: each applies once by game id."""
        if tries:
            await self.deps.persistence.write_result(self.table_id, settlement.result, ())
            await settle_once()
            await self.save_record(settlement, pushes)
        tries.append(True)
        await self.deps.persistence.replicas.replicated()

    def _settlement_call(self, s: FinishedGame) -> Callable[[], Awaitable[Pushes]]:
        """One attempt at settling this game (or match), with every input fixed now: the
        rating store call for what the machine says it settles, returning the
        ``(player, event)`` pushes."""
        store = self.deps.ratings
        reason = str(s.outcome.reason)
        table = self.table_id
        settles = s.settles

        async def nothing() -> Pushes:
            return []

        if settles == TABLE42:
            async def table42() -> Pushes:
                settlement = await store.settle(
                    s.game_id, ladder=TABLE42, winner=s.winner, loser=s.loser,
                    cube=s.outcome.cube, finished_at=s.finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return table42
        if settles == FIBS:
            assert s.match_winner is not None and s.match_loser is not None
            match_winner, match_loser = s.match_winner, s.match_loser

            async def fibs() -> Pushes:
                settlement = await store.settle(
                    s.match_id, ladder=FIBS, winner=match_winner, loser=match_loser,
                    match_length=s.match_length, finished_at=s.finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return fibs
        if settles == BOOSTED:
            async def boosted() -> Pushes:
                result = await store.add_boosted_points(
                    s.game_id, winner=s.winner, loser=s.loser,
                    points=s.outcome.points, finished_at=s.finished_at,
                )
                return boosted_events(result, table=table)
            return boosted
        return nothing

    async def _settle(self, settle_once: Callable[[], Awaitable[Pushes]]) -> Pushes:
        """``settle_once()``, tried up to ``SETTLE_ATTEMPTS`` times on Redis errors."""
        return await retry_redis(settle_once, Backoff(attempts=SETTLE_ATTEMPTS))

    async def _settle_late(self, game_id: str,
                           settle_once: Callable[[], Awaitable[Pushes]]) -> None:
        """Keep trying a settlement that failed at the game's end, backing off up to
        ``LATE_SETTLE_MAX_DELAY``; once the settlement is on the replicas, store the rating
        events in the inboxes and push them.
        A node stopped before Redis came back logs the game id, so it can be settled by hand
        (the store applies a game id once, whenever it comes)."""
        persistence = self.deps.persistence
        sleep = self.deps.clock.sleep
        table_id = self.table_id

        async def pause(delay: float) -> None:
            # Back off, but try at once when the health check sees Redis come back.
            was_down = not persistence.redis_up
            waited = 0.0
            while waited < delay and not (was_down and persistence.redis_up):
                await sleep(0.1)
                waited += 0.1

        def still_mine() -> None:
            if self.gone:
                raise Fenced(table_id)

        def failed(_tries: int, exc: Exception) -> None:
            log.warning("table %s: settlement of %s still failing: %s", table_id, game_id, exc)

        try:
            await pause(0.5)
            pushes = await retry_redis(settle_once, Backoff(1.0, LATE_SETTLE_MAX_DELAY),
                                       before=still_mine, failed=failed, pause=pause)
        except Fenced:
            log.warning("table %s: %s is settled by the table's new owner", table_id, game_id)
            return
        except asyncio.CancelledError:
            log.error("table %s: node stopping with %s NOT settled: settle it again", table_id,
                      game_id)
            raise
        log.info("table %s: %s settled late", table_id, game_id)
        pushes = with_event_ids(pushes)
        tries: list[bool] = []

        async def replicated() -> None:
            # On the replicas before anyone is told, as at the game's end: after a wait that
            # fell short (a failover may have lost it), settled again first (once by id).
            if tries:
                await settle_once()
            tries.append(True)
            await persistence.replicas.replicated()

        try:
            await self.retry(game_id, "the replication", replicated)
            if pushes:
                await self.retry(game_id, "the rating inbox", persistence.write_inbox,
                                 pushes, table=table_id, note=None, game=game_id)
        except Fenced:
            log.warning("table %s: %s is told by the table's new owner", table_id, game_id)
            return
        self._push_ratings(pushes)

    def _push_ratings(self, pushes: Pushes) -> None:
        if pushes:
            self.deps.metrics.rating_delay.observe(time.perf_counter() - self._ended_at)
        for player, event in pushes:
            self.deps.delivery.deliver_rating(player, self._nodes_of(player), event)

    def _nodes_of(self, player: str) -> set[str]:
        machine = self.machine
        side = machine.side_of(player)
        if side is None:
            return set()
        seat = machine.seats[side]
        return set() if seat is None else set(seat.nodes)

    # --- the table's end ----------------------------------------------------------------------

    async def release_seats(self) -> None:
        """The table is finished (result, settlement and inbox stored: nothing left to hand
        on): give back its players' seat locks, retried until stored."""
        self.wound_up = True
        machine = self.machine
        for player in machine.seated_players():
            await self.retry(machine.game_id(), f"the seat release of {player}",
                             self.deps.persistence.release_seat, player, self.table_id)

    async def release(self, players: list[str]) -> None:
        """Give back the seat locks of ``players`` (a closed table), retried until stored."""
        for player in players:
            await self.retry(self.table_id, f"the seat release of {player}",
                             self.deps.persistence.release_seat, player, self.table_id)

    # --- after a takeover ----------------------------------------------------------------------

    async def resume(self, table: FinishingTable, settlement: FinishedGame) -> None:
        """A table rebuilt here (a takeover) whose log ends with ``settlement``'s game, not
        settled when the old owner stopped: finish what is missing, once. Done only when the
        rating events reached the inboxes too: a node may die after settling and before that
        (the store gives the same settlement back; each event keeps its event_id)."""
        stored = await self._result_stored(settlement.game_id)
        if (stored and not await self._rating_missing(settlement)
                and not await self._inbox_missing(settlement)):
            if not await self._record_stored(settlement.game_id):
                # Its node died after the settlement, before the record: written now
                # (without the rating changes, which the record would only repeat).
                await self.retry(settlement.game_id, "the game record", self.save_record,
                                 settlement, [])
            table.settled()
            if settlement.match_over:
                self.deps.tasks.spawn(table.wind_up())
        else:
            # The result and the rating are written at the same time at a game's end: a
            # node may die between the two. The store applies a game id once.
            self.game_over(table, settlement, write_result=not stored)

    async def _rating_missing(self, s: FinishedGame) -> bool:
        """Whether the rating store has no settlement of this rated game (match) yet."""
        rated_id = s.rated_id
        if rated_id is None:
            return False
        try:
            return await self.deps.ratings.settlement(rated_id) is None
        except (RedisError, OSError):
            return True  # settle again: the store gives back the same settlement

    async def _inbox_missing(self, s: FinishedGame) -> bool:
        """Whether the game's rating events may not be in the players' inboxes yet (only
        an end that settles something writes them)."""
        if s.settles is None:
            return False
        try:
            return not await self.deps.persistence.inboxed(self.table_id, s.game_id)
        except (RedisError, OSError):
            return True

    async def _record_stored(self, game_id: str) -> bool:
        try:
            return await self.deps.records.exists(game_id)
        except (RedisError, OSError):
            return False

    async def _result_stored(self, game_id: str) -> bool:
        """Whether the table's results hold ``game_id`` (its settlement was made)."""
        return await self.deps.persistence.has_result(self.table_id, game_id)

"""The bracket driver: runs the server's brackets on whichever node holds each one's lease.

Every ``tournament_tick`` seconds (a duty of the node's tick, ``server/tick.py``) each node
looks at the running brackets (a Redis set). For each, it takes or renews the bracket's lease
(``tournament_lease`` seconds, one holder at a time) and, holding it, takes one step of the
pure state machine (``bracket.py``):

1. a playing match whose table wrote its deciding result is decided (the winner goes
   through); a table gone without a result (its node stopped) makes the match ready again;
2. a ready match whose two players are both *ready* gets its table (a tournament table:
   never rated; the players get ``tournament_table``, then ``seated`` and ``game_start``);
   a player is ready when connected (a socket on a live node) and not seated at another
   live table. The table opens no sooner than ``tournament_call`` seconds after the pairing
   went out (at most half the no-show time), so that the call is seen before the table.
   Past the match's no-show deadline (counted from when its pairing went out), a player
   still not ready forfeits;
3. new pairings and decided matches are told to their players; when the podium is known it
   is awarded (public tournaments) and everyone gets ``tournament_over``. Every event is kept
   in the player's inbox first (by ``event_id``: once), the results before the step is saved.

The state is written back through ``bracket_save.lua``, which refuses a node that lost the
lease, so a restarted or second node carries on from the last saved step and loses nothing.

A bracket its runner cancelled (status ``cancelled``) takes no more steps: the holder closes
its tables (``table_closed`` with reason ``tournament_cancelled``, on whichever node each
lives), again at every tick until every one is over, then stops looking at it. No podium.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from redis.exceptions import RedisError

from server.cluster.bus import NodeBus
from server.protocol.errors import ProtocolError
from server.tables.model import TableStatus
from server.tick import Tick
from server.tournaments.bracket import Bracket, BracketError, Match, MatchStatus
from server.tournaments.events import (
    over_events,
    pairing_events,
    result_events,
    table_events,
)
from server.tournaments.service import Tournaments

log = logging.getLogger(__name__)

DUTY = "bracket-driver"
"""The name of the driver's duty on the node's tick."""

LOST = "<lost>"


def deciding_winner(results: list[dict[str, Any]], match_length: int) -> str | None:
    """The player who won a tournament table, from its stored results (None: not over)."""
    for result in results:
        if "winner" not in result:
            continue
        if match_length == 0:
            return str(result["winner"])
        match = result.get("match")
        if isinstance(match, dict) and match.get("winner") is not None:
            same = int(match["winner"]) == int(result["winner_side"])
            return str(result["winner"] if same else result["loser"])
    return None


class BracketDriver:
    def __init__(self, service: Tournaments, bus: NodeBus, node_id: str, *, period: float,
                 lease: float, tick: Tick | None = None, call: float = 0.0) -> None:
        """Steps every ``period`` seconds on ``tick`` (the node's; one of its own if not
        given)."""
        self.service = service
        self.store = service.store
        self.tables = service.tables
        self.persistence = service.persistence
        self.bus = bus
        self.node_id = node_id
        self.period = period
        self.tick = tick if tick is not None else Tick()
        self.lease = lease
        self.call = call
        self._leased: set[str] = set()

    def start(self) -> None:
        self.tick.add(DUTY, self.period, self.run_once, first=0, logger=log,
                      what="bracket driver step")

    async def stop(self) -> None:
        """Stop stepping and give the leases back (another node takes over at once)."""
        await self.tick.remove(DUTY)
        for tid in list(self._leased):
            with contextlib.suppress(RedisError, OSError):
                await self.store.release_lease(tid, self.node_id)
        self._leased.clear()

    async def run_once(self) -> None:
        for tid in await self.store.running():
            if not await self.store.take_lease(tid, self.node_id, self.lease):
                self._leased.discard(tid)
                continue
            self._leased.add(tid)
            await self.step(tid)

    async def step(self, tid: str) -> None:
        t, state = await self.store.get_with_bracket(tid)
        if t is not None and state is None and t["status"] == "open":
            return  # a start that stopped before its bracket was stored: a retry finishes it
        if t is None or state is None or state.get("awarded"):
            await self.store.done_running(tid)
            return
        if t["status"] == "cancelled":
            await self._wind_down(tid)
            return
        announced = set(state.get("announced") or ())
        reported = set(state.get("reported") or ())
        length = int(t["format"].get("length", 0))
        now = self.store.now()
        b = Bracket.from_dict(state["bracket"])
        playing = {m.table: m for m in b.matches()
                   if m.status is MatchStatus.PLAYING and m.table is not None}
        results_of = await self.store.table_results_of(list(playing))
        for table, m in playing.items():
            outcome = await self._outcome(table, length, results_of[table])
            if outcome == LOST:
                log.info("tournament %s: table %s of %s is gone; ready again", tid,
                         table, m.match)
                b = b.table_lost(m.match, now)
            elif outcome is not None:
                b = b.record_result(m.match, outcome)
        b = b.resolve(now)
        b = await self._announce(tid, b, announced, t["name"])
        b = await self._adopt_orphans(tid, b)
        for m in b.matches():
            if m.status is not MatchStatus.READY:
                continue
            a, c = m.players
            assert a is not None and c is not None
            if not self._called(b, m, now):
                continue  # the call is still on the players' screens
            ready = (await self._is_ready(a), await self._is_ready(c))
            if all(ready):
                b = await self._open(t, b, m)
            elif m.deadline is not None and now >= m.deadline:
                absent = [p for p, r in zip((a, c), ready, strict=True) if not r]
                log.info("tournament %s: %s forfeited by no-show of %s", tid, m.match, absent)
                b = b.no_show(m.match, absent)
        b = b.resolve(now)
        b = await self._announce(tid, b, announced, t["name"])
        results = []
        for m in b.matches():
            if m.is_decided and m.match not in reported:
                reported.add(m.match)
                results += result_events(tid, m)
        awarded = False
        podium = b.podium
        if podium is not None:
            t = await self.store.get(tid) or t
            if t["status"] == "cancelled":  # cancelled during this step: no podium
                return
            record = await self.service.award(t, list(podium))
            results += over_events(tid, b, record)
            awarded = True
        new_state = {"bracket": b.to_dict(), "announced": sorted(announced),
                     "reported": sorted(reported), "awarded": awarded}
        # Kept before the step is saved as reported: a node stopping in between loses none.
        await self.persistence.keep_in_inbox(results)
        if new_state != state:
            status = "finished" if awarded else "running"
            if not await self.store.save_bracket(tid, self.node_id, new_state, status):
                log.warning("tournament %s: lease lost; step not saved", tid)
                self._leased.discard(tid)
                return
        await self.service.deliver(results, inbox=False)
        if awarded:
            await self.store.done_running(tid)

    def _called(self, b: Bracket, m: Match, now: float) -> bool:
        """Whether ``m``'s call has been out long enough for its table to open."""
        if m.paired_at is None:
            return True
        return now >= m.paired_at + min(self.call, b.no_show_seconds / 2)

    async def _wind_down(self, tid: str) -> None:
        """A cancelled bracket: close every table it opened that may still be playing; once
        none is, the bracket is no longer looked at."""
        pending = [table for table in await self.store.tables(tid)
                   if not await self.tables.cancel_tournament_table(table)]
        if pending:
            log.info("tournament %s cancelled: waiting for %d table(s) to close", tid,
                     len(pending))
            return
        await self.store.done_running(tid)

    async def _adopt_orphans(self, tid: str, b: Bracket) -> Bracket:
        """A table this tournament opened whose step was never saved (the lease lost, Redis
        refusing the save, the node dying between opening and saving) is the table of the
        ready match whose two players sit at it or whose result it holds: the match goes on
        there instead of its players forfeiting as no-shows (they are seated, so never
        "ready"). One read of the tournament's tables while a match is ready."""
        ready = [m for m in b.matches() if m.status is MatchStatus.READY]
        if not ready:
            return b
        used = {table for m in b.matches() for table in m.tables}
        orphans = [table for table in await self.store.tables(tid) if table not in used]
        if not orphans:
            return b
        results_of = await self.store.table_results_of(orphans)
        for m in ready:
            a, c = m.players
            assert a is not None and c is not None  # a ready match has both players
            pair = {a, c}
            for table in orphans:
                played = any({r.get("winner"), r.get("loser")} == pair
                             for r in results_of[table])
                seated = played or all([await self.persistence.seat_of(p) == table
                                        for p in pair])
                if seated:
                    log.info("tournament %s: %s adopts table %s (its step was not saved)",
                             tid, m.match, table)
                    b = b.open_table(m.match, table)
                    orphans.remove(table)
                    break
        return b

    async def _announce(self, tid: str, b: Bracket, announced: set[str],
                        name: str) -> Bracket:
        """Send the pairing of each ready match not announced yet; its no-show deadline counts
        from now, when the pairing goes out (kept in the inbox of a player who is away)."""
        events = []
        for m in b.matches():
            if m.status is MatchStatus.READY and m.match not in announced:
                announced.add(m.match)
                b = b.paired(m.match, self.store.now())
                events += pairing_events(tid, b.get(m.match), b, name=name, call=self.call)
        await self.service.deliver(events)
        return b

    async def _open(self, t: dict[str, Any], b: Bracket, m: Match) -> Bracket:
        a, c = m.players
        assert a is not None and c is not None

        async def announce(table: str) -> None:
            await self.service.deliver(table_events(t["id"], m, table, b, name=t["name"]))

        try:
            table = await self.service.open_table(t, a, c, announce)
        except ProtocolError as exc:  # seated elsewhere just now: next tick
            log.info("tournament %s: %s not opened: %s", t["id"], m.match, exc.message)
            return b
        try:
            return b.open_table(m.match, table)
        except BracketError:  # pragma: no cover - the match was ready a moment ago
            log.exception("tournament %s: %s", t["id"], m.match)
            return b

    async def _outcome(self, table: str, length: int,
                       results: list[dict[str, Any]]) -> str | None:
        """The winner of ``table`` (``results``: its stored results), LOST when it is gone
        without one, None while it plays."""
        winner = deciding_winner(results, length)
        if winner is not None:
            return winner
        status = self.tables.table_status(table)
        if status is not None:
            return None if status is not TableStatus.CLOSED else LOST
        # Elsewhere: while its lease is not given up as done the table lives on, on its owner
        # or, once a dead owner's lease runs out, on the node that takes it over.
        lease = await self.persistence.lease(table)
        if lease is None or lease.done:
            return LOST
        return None

    async def _is_ready(self, player: str) -> bool:
        """Connected on a live node, and not seated at another live table."""
        nodes, _ = await self.persistence.presence(player)
        alive = [n for n in nodes if n == self.node_id or await self.bus.is_alive(n)]
        if not alive:
            return False
        seat = await self.persistence.seat_of(player)
        if seat is None:
            return True
        status = self.tables.table_status(seat)
        if status is not None:
            return status in (TableStatus.FINISHED, TableStatus.CLOSED)
        lease = await self.persistence.lease(seat)
        if lease is None or lease.done:
            await self.persistence.release_seat(player, seat)  # a table that is over or gone
            return True
        return False  # playing there (a dead owner's table is taken over, not lost)

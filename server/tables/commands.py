"""A table's commands (pure): what each command and each timer does to the state model, with
the parts it is made of: admission (:mod:`~server.tables.admission`), the timers
(:mod:`~server.tables.clocks`) and the event builder (:mod:`~server.tables.events`). The
module docstring of :mod:`server.tables.machine` describes the machine as a whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.messages import (
    AcceptResign,
    Double,
    Drop,
    Message,
    Play,
    RejectResign,
    Resign,
    Roll,
    TableMode,
    Take,
)
from server.rules import (
    DiceSource,
    EndReason,
    Game,
    Match,
    Outcome,
    Phase,
    ResultKind,
    RulesError,
    Side,
    format_play,
)
from server.tables import admission, clocks
from server.tables.events import EventBuilder, match_state
from server.tables.model import (
    BOT_PREFIX,
    CLOCK,
    EMPTY,
    GRACE,
    HOLD_RETRY_AFTER,
    NEXT_GAME,
    TOURNAMENT_CANCELLED,
    Deadline,
    Effects,
    FinishedGame,
    LeaveKind,
    MachineSettings,
    Seat,
    TableState,
    TableStatus,
    merged,
)
from server.tables.ratings import RatedPlayer, RatingPlan, plan_rating

log = logging.getLogger(__name__)


def _rules_error(exc: RulesError) -> ProtocolError:
    return ProtocolError(exc.code, str(exc))


class TableCommands(TableState):
    """A table's state and its commands; see :mod:`server.tables.machine`. Not thread-safe,
    never awaits."""

    def __init__(
        self,
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        tournament_id: str | None,
        created_at: float,
        settings: MachineSettings,
        dice_factory: Callable[[], DiceSource],
    ) -> None:
        super().__init__(table_id=table_id, mode=mode, match_length=match_length,
                         tournament_id=tournament_id, created_at=created_at,
                         settings=settings)
        self.events = EventBuilder()
        self.timers = clocks.Timers()
        self._dice_factory = dice_factory
        self._settle: FinishedGame | None = None  # a game the current command ended

    # --- the state -------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync)."""
        return self.events.state(self)

    def handout(self) -> dict[str, Any]:
        """The full state for a ``sync``, ``resume`` or ``watching`` answer (see
        :meth:`EventBuilder.handout`)."""
        return self.events.handout(self)

    def match_state(self) -> dict[str, Any] | None:
        return match_state(self)

    def seats_changed(self) -> None:
        """A seat was taken, or its player's connection or grace deadline changed."""
        self.events.seats_changed()

    def rated_players(self) -> tuple[RatedPlayer, RatedPlayer]:
        """The two seated players as the rating decision sees them (both seats taken)."""
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None
        return (RatedPlayer(s0.player, s0.is_guest, s0.address, s0.is_bot),
                RatedPlayer(s1.player, s1.is_guest, s1.address, s1.is_bot))

    # --- what a command did ----------------------------------------------------------------

    def _step(self) -> Effects:
        """What the current command did: its events, the timers to arm and disarm (those in
        force now against those armed, :class:`~server.tables.clocks.Timers`), a settlement."""
        out = self.events.take()
        arm, cancel = self.timers.reconcile(self)
        settle = self._settle
        if not out and not arm and not cancel and settle is None:
            return EMPTY
        self._settle = None
        return Effects(tuple(out), arm, cancel, settle)

    def _emit(self, kind: str, fields: dict[str, Any], now: float, *,
              with_state: bool = True) -> None:
        if with_state:
            clocks.sync_clock(self, now)
        self.events.emit(self, kind, fields, with_state=with_state)

    # --- game actions ----------------------------------------------------------------------

    def act(self, player: str, msg: Message, now: float) -> Effects:
        """A game action (roll, play, double, take, drop, resign and its answers) from
        ``player``. Raises ProtocolError (nothing changed) when it is not allowed."""
        side = self.side_of(player)
        if side is None:
            raise ProtocolError(
                ErrorCode.NOT_SEATED, f"you are not playing at table {self.id}", field="table"
            )
        game = self.game
        if self.status is TableStatus.FINISHED:  # the same answer during and after settling
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        if game is None or self.status is not TableStatus.PLAYING:
            raise ProtocolError(ErrorCode.NOT_PLAYING, f"no game in progress at table {self.id}")
        if self.finishing or game.is_over:
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        if self.held is not None:
            raise self._held_error()
        outcome: Outcome | None = None
        kind: str | None = None
        fields: dict[str, Any] = {"side": int(side)}
        try:
            if isinstance(msg, Play):
                before = game.position
                outcome = game.play(side, msg.play)
                chosen = game.history[-1].play
                kind = "moved"
                # The play in normal form as text (hits marked), however it was sent.
                fields["play"] = "" if chosen is None else format_play(chosen, before)
            elif isinstance(msg, Roll):
                dice = game.roll(side)
                kind = "rolled"
                fields.update(self._roll_record(side, dice))
            elif isinstance(msg, Double):
                if game.cube >= game.max_cube:
                    # Checked first: with the cube at its maximum the server rolls for the
                    # player at once, so a double can only ever arrive in the wrong phase.
                    raise ProtocolError(
                        ErrorCode.MAX_CUBE, f"the cube is at its maximum ({game.max_cube})"
                    )
                game.double(side)
                kind = "doubled"
                fields["cube"] = game.cube * 2
            elif isinstance(msg, Take):
                game.take(side)
                kind = "taken"
                fields["cube"] = game.cube
            elif isinstance(msg, Drop):
                outcome = game.drop(side)
                kind = "dropped"
                fields["cube"] = game.cube
            elif isinstance(msg, Resign):
                game.resign(side, str(msg.kind))
                resignation = game.resignation
                kind = "resign_offered"
                fields["kind"] = str(msg.kind)
                fields["points"] = game.cube * (
                    1 if resignation is None else resignation.kind.multiplier
                )
            elif isinstance(msg, AcceptResign):
                outcome = game.accept_resignation(side)
            elif isinstance(msg, RejectResign):
                game.reject_resignation(side)
                kind = "resign_rejected"
        except RulesError as exc:
            raise _rules_error(exc) from None
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        if kind is not None:
            self._emit(kind, fields, now)
        if outcome is not None:
            self._game_over(outcome, now)
        return self._step()

    def _roll_record(self, side: Side, dice: tuple[int, int]) -> dict[str, Any]:
        """``{side, dice, passed}`` for a roll just made (passed: it had no legal play)."""
        game = self.game
        assert game is not None
        passed = game.phase is not Phase.MOVE or game.turn != side
        return {"side": int(side), "dice": list(dice), "passed": passed}

    def _auto_rolls(self) -> list[dict[str, Any]]:
        """Roll for every player on roll who has no cube decision to make (the cube is not
        theirs to use), so each event's state waits for a real decision. Returns the rolls,
        in order: ``[{side, dice, passed}]``."""
        game = self.game
        assert game is not None
        rolls: list[dict[str, Any]] = []
        for _ in range(64):  # a pass-pass-pass chain is short; the bound is a safety net
            turn = game.turn
            if game.phase is not Phase.ROLL or turn is None or game.can_double(turn):
                break
            try:
                dice = game.roll(turn)
            except RulesError:
                log.exception("table %s: automatic roll failed", self.id)
                break
            rolls.append(self._roll_record(turn, dice))
        return rolls

    # --- seats -----------------------------------------------------------------------------

    def check_join(self, player: str, *, is_bot: bool) -> int | None:
        """May ``player`` sit here? The side they would take, or None when they are seated
        here already (see :func:`~server.tables.admission.check_join`). Changes nothing: the
        shell takes the player's seat lock, then calls :meth:`seat`, which checks again."""
        return admission.check_join(self, player, is_bot=is_bot)

    def seat(self, side: int, player: str, name: str, *, is_guest: bool, address: str,
             nodes: Iterable[str], now: float, is_bot: bool | None = None) -> Effects:
        """Seat ``player`` at ``side`` (the shell holds the player's seat lock); play starts
        when both seats are taken and :meth:`start` is called. Raises ProtocolError (nothing
        changed) as :func:`~server.tables.admission.check_seat` says."""
        bot = player.startswith(BOT_PREFIX) if is_bot is None else is_bot
        admission.check_seat(self, side, player, is_bot=bot)
        self.seats[side] = Seat(player, name, is_guest, address, bot, set(nodes))
        self.seats_changed()
        self._emit("seated", {"side": side, "player": player, "name": name}, now,
                   with_state=False)
        return self._step()

    def leave(self, player: str, now: float) -> tuple[LeaveKind, Effects]:
        """``player`` leaves the table (:func:`~server.tables.admission.leave_kind`): an open
        table closes (``table_closed``, reason ``left``); a game in play (or a match between
        its games) is forfeited at the current cube, and the seats are freed when the table
        ends; else only the leaver's seat is given back. Raises ProtocolError ``not_seated``
        (nothing changed)."""
        side, kind = admission.leave_kind(self, player)
        if kind is LeaveKind.CLOSE:
            self._close("left", now)
        elif kind is LeaveKind.FORFEIT:
            self._forfeit(side, EndReason.LEAVE, now)
            if not self.finishing:
                kind = LeaveKind.RELEASE
        return kind, self._step()

    def start(self, now: float, *, pair_limited: bool = False) -> Effects:
        """Both seats are filled: decide how the game is rated and start the first game.
        ``pair_limited``: the shell's pair-limit count refused this game (or match) a rating
        (``unrated_reason: "pair_limit"``)."""
        self.plan = plan_rating(self.mode, self.match_length, self.rated_players(),
                                pair_limited=pair_limited)
        self.events.plan_changed()
        self.status = TableStatus.PLAYING
        self.dice = self._dice_factory()
        if not self.is_single_game:
            self.match = Match(self.match_length, dice=self.dice)
        self._start_game(now)
        return self._step()

    def start_logged(self, now: float, *, game_no: int, plan: RatingPlan | None,
                     score: tuple[int, int], crawford_played: bool) -> Effects:
        """Start game ``game_no`` as a log recorded it (a replay, whose dice say how): under
        ``plan`` when no plan is set yet; a match not in play yet is taken up at ``score``."""
        if self.plan is None and plan is not None:
            self.plan = plan
            self.events.plan_changed()
        self.status = TableStatus.PLAYING
        self.settlement = None
        self.finishing = False
        self.next_game = None
        if self.dice is None:
            self.dice = self._dice_factory()
        if not self.is_single_game and self.match is None:
            self.match = Match.resume(self.match_length, score,
                                      crawford_played=crawford_played, dice=self.dice)
        self.game_no = game_no - 1
        self._start_game(now)
        return self._step()

    def _start_game(self, now: float) -> None:
        self.game_no += 1
        for seat in self.seats:
            if seat is not None:  # a reconnect still due from the game before counts here
                seat.presence_used = 1 if seat.announced_away else 0
        if self.match is not None:
            self.game = self.match.next_game()
        else:
            self.game = Game(dice=self.dice)
        self.strikes = [0, 0]
        game = self.game
        try:
            game.start()
        except RulesError:
            log.exception("table %s: opening roll failed", self.id)
            return
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        self._emit("game_start", {
            "game_id": self.game_id(),
            "game_no": self.game_no,
            "players": [s0.player, s1.player],
            "names": [s0.name, s1.name],
            "mode": str(self.mode),
            "match_length": self.match_length,
            "opening_rolls": [list(r) for r in game.opening_rolls],
            "rating": self.plan.to_dict(),
            "rolls": self._auto_rolls(),
        }, now)

    def use_dice(self, dice: DiceSource) -> None:
        """Roll with ``dice`` from now on (a replayed machine rolls with the logged dice)."""
        self.dice = dice
        if self.match is not None:
            self.match.use_dice(dice)
        elif self.game is not None:
            self.game.use_dice(dice)

    # --- presence --------------------------------------------------------------------------

    def connect(self, player: str, node: str, now: float) -> Effects | None:
        """``player`` has a socket on ``node`` again (None: not seated here, or closed)."""
        side = self.side_of(player)
        if side is None or self.status is TableStatus.CLOSED:
            return None
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.add(node)
        seat.logged_connected = None
        self.seats_changed()
        if self.held is not None:
            return EMPTY  # applied at resume
        if seat.grace is not None:
            announced = clocks.end_grace(seat)
            # The game is being settled: no event in between.
            if announced and not self.finishing:
                self._emit("player_reconnected", {"side": int(side), "player": seat.player},
                           now)
        return self._step()

    def disconnect(self, player: str, node: str, now: float, *,
                   lost_at: float | None = None) -> Effects:
        """``player`` has no socket on ``node`` any more; the grace period starts if that was
        the last node (``lost_at``: ``node`` was found dead then, see
        :func:`~server.tables.clocks.grace_seconds`)."""
        side = self.side_of(player)
        if side is None:
            return EMPTY
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.discard(node)
        seat.logged_connected = None
        self.seats_changed()
        if self.held is not None:
            self.held.away.add(int(side))  # applied at resume
            return EMPTY
        if seat.nodes or seat.grace is not None:
            return EMPTY
        if self.status not in (TableStatus.OPEN, TableStatus.PLAYING) or self.finishing:
            return EMPTY
        grace = clocks.grace_seconds(self.settings, now, lost_at)
        clocks.start_grace(seat, int(side), now + grace)
        if seat.presence_used + 2 > self.settings.presence_events:
            return self._step()  # the grace runs, unannounced (see server.tables.machine)
        seat.presence_used += 2
        seat.announced_away = True
        self._emit(
            "player_disconnected",
            {"side": int(side), "player": player, "deadline": seat.grace_deadline,
             "grace": grace},
            now,
        )
        return self._step()

    # --- timers ----------------------------------------------------------------------------

    def expire(self, deadline: Deadline, now: float) -> Effects:
        """``deadline`` has passed (the shell's timer fired). A deadline no longer in force
        does nothing, and so does every deadline while the table is held."""
        if self.held is not None:
            return EMPTY
        self.timers.fired(deadline)
        kind = deadline.kind
        if kind == CLOCK:
            if deadline is not self.clock:
                return EMPTY
            self.clock = None
            self._timeout(now)
        elif kind == GRACE:
            side = deadline.side
            seat = None if side is None else self.seats[side]
            if side is None or seat is None or seat.grace is not deadline:
                return EMPTY
            seat.grace = None
            seat.announced_away = False
            if not seat.nodes:
                if self.status is TableStatus.OPEN:
                    self._close("abandoned", now)
                elif self.status is TableStatus.PLAYING and not self.finishing:
                    self._forfeit(Side(side), EndReason.DISCONNECT, now)
        elif kind == NEXT_GAME:
            if deadline is not self.next_game:
                return EMPTY
            self.next_game = None
            if self.status is TableStatus.PLAYING and not self.finishing:
                self._start_game(now)
        return self._step()

    def _timeout(self, now: float) -> None:
        """The decision clock ran out: a strike, and the rules' default action (the
        ``max_strikes``-th strike forfeits)."""
        game = self.game
        side = self.clock_side
        if game is None or side is None or self.finishing or game.is_over:
            self.clock_token = None
            return
        forfeits = clocks.strike(self, side)
        seat = self.seats[side]
        fields: dict[str, Any] = {
            "side": int(side), "player": None if seat is None else seat.player,
            "strikes": self.strikes[side],
        }
        if forfeits:
            fields["action"] = "forfeit"
            self._emit("timeout", fields, now)
            self._forfeit(side, EndReason.TIMEOUT, now)
            return
        action = game.default_action()
        if action is None:
            return
        before = game.position
        fields["action"] = action.kind
        try:
            outcome = game.perform(action)
        except RulesError:
            log.exception("table %s: default action %s failed", self.id, action.kind)
            return
        if action.kind == "play" and action.play is not None:
            fields["play"] = format_play(action.play, before)
        elif action.kind == "roll":
            last = game.history[-1] if game.history else None
            passed = last is not None and last.play == () and game.dice is None
            dice = last.dice if passed and last is not None else game.dice
            fields["dice"] = None if dice is None else list(dice)
            fields["passed"] = passed
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        self._emit("timeout", fields, now)
        if outcome is not None:
            self._game_over(outcome, now)

    # --- the end of a game -----------------------------------------------------------------

    def forfeit(self, player: str, reason: EndReason, now: float) -> Effects:
        """``player`` loses the game (a match: the match) at the current cube: leaving."""
        side = self.side_of(player)
        if side is not None and self.status is TableStatus.PLAYING and not self.finishing:
            self._forfeit(side, reason, now)
        return self._step()

    def _forfeit(self, side: Side, reason: EndReason, now: float) -> None:
        game = self.game
        if game is None or self.finishing:
            return
        try:
            if self.match is not None:
                outcome = self.match.forfeit(side, reason)
            else:
                outcome = game.forfeit(side, reason)
        except RulesError:
            log.exception("table %s: forfeit failed", self.id)
            return
        if outcome is None:
            # Between two games of a match: the match is lost, no game is scored.
            self.next_game = None
            outcome = Outcome.of(side.opponent, ResultKind.SINGLE, reason, 1)
            self._game_over(outcome, now, game_counted=False)
            return
        self._game_over(outcome, now)

    def _game_over(self, outcome: Outcome, now: float, *, game_counted: bool = True) -> None:
        """The game ended: ``game_over`` (and ``match_over``) get their versions now; the
        shell settles (:class:`FinishedGame`), stores them, announces them, then calls
        :meth:`settled`."""
        clocks.stop_clock(self)
        self.finishing = True
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        seats = (s0, s1)
        winner, loser = seats[outcome.winner], seats[outcome.winner.opponent]
        match = self.match
        match_over = match is None or match.is_over
        game_id = self.game_id()
        plan = self.plan
        result: dict[str, Any] = {
            "game_id": game_id,
            "game_no": self.game_no,
            "table": self.id,
            "mode": str(self.mode),
            "winner": winner.player,
            "loser": loser.player,
            "winner_side": int(outcome.winner),
            "kind": str(outcome.kind),
            "reason": str(outcome.reason),
            "cube": outcome.cube,
            "points": outcome.points if game_counted else 0,
            "finished_at": now,
            "rating": plan.to_dict(),
            "match": self.match_state(),
        }
        match_winner = match_loser = None
        if match is not None and match_over:
            mw = seats[match.winner] if match.winner is not None else winner
            match_winner = mw.player
            match_loser = seats[1 - seats.index(mw)].player
        if match_over:
            self.status = TableStatus.FINISHED
        self._emit("game_over", {key: result[key] for key in (
            "game_id", "game_no", "winner", "loser", "winner_side", "kind", "reason", "cube",
            "points", "rating",
        )}, now)
        if match is not None and match_over:
            self._emit("match_over", {
                "match_id": self.match_id(), "winner": match_winner, "loser": match_loser,
                "score": list(match.score), "reason": str(outcome.reason),
            }, now)
        self.settlement = self._settle = FinishedGame(
            game_id=game_id, ladder=plan.ladder, boosted=plan.boosted,
            winner=winner.player, loser=loser.player, outcome=outcome, match_over=match_over,
            game_counted=game_counted, finished_at=now, result=result,
            match_id=self.match_id(), match_length=self.match_length,
            match_winner=match_winner, match_loser=match_loser,
        )

    def settled(self, now: float) -> Effects:
        """The shell has settled, stored and announced the finished game: the match's next
        game is due after ``next_game_delay``; a finished table's grace timers stop."""
        settlement = self.settlement
        self.settlement = None
        if settlement is None or settlement.match_over or self.status is not TableStatus.PLAYING:
            clocks.stop_graces(self)
            return self._step()
        # Between games a leave or a lost connection still forfeits (the match).
        self.finishing = False
        clocks.schedule_next_game(self, now)
        return self._step()

    def close(self, reason: str, now: float) -> Effects:
        """Close the table with ``table_closed``: an open table's only player left or vanished,
        or (``STORE_LOST``) the store forgot the table, when a game in progress ends with no
        result and no rating change. Trusts its caller."""
        self._close(reason, now)
        return self._step()

    def cancel_tournament(self, now: float) -> Effects:
        """The table's tournament was cancelled by its runner: close the table whatever is in
        progress (a game in play ends with no result and nothing to settle; tournament games
        are never rated). ``table_closed`` with reason ``tournament_cancelled``. A finished
        or closed table is left as it is (nothing emitted); a table of no tournament raises
        ValueError."""
        if self.tournament_id is None:
            raise ValueError(f"table {self.id} belongs to no tournament")
        if self.status in (TableStatus.FINISHED, TableStatus.CLOSED):
            return EMPTY
        self.next_game = None
        self._close(TOURNAMENT_CANCELLED, now)
        return self._step()

    def _close(self, reason: str, now: float) -> None:
        if self.status is TableStatus.CLOSED:
            return
        clocks.stop_clock(self)
        clocks.stop_graces(self)
        self._emit("table_closed", {"reason": reason}, now, with_state=False)
        self.status = TableStatus.CLOSED

    # --- a hold: the node cannot store ---------------------------------------------------

    def hold(self, now: float) -> Effects:
        """The table's node cannot store (Redis is away): every timer stops where it is, so
        nobody gets a strike, an automatic move or a forfeit meanwhile; game actions are
        refused (``unavailable``) and presence changes (:meth:`connect`, :meth:`disconnect`)
        only update the seats' nodes until :meth:`resume`. Emits nothing (nothing could be
        stored): the timers stopped come back in ``cancelled``. Does nothing to a table held
        already, finished or closed. Trusts its caller."""
        if self.held is not None or self.status not in (TableStatus.OPEN, TableStatus.PLAYING):
            return EMPTY
        self.held = clocks.hold_timers(self, now)
        return self._step()

    def resume(self, now: float, allowance: float) -> Effects:
        """The node can store again: ``resumed`` (with the state), the decision clock and each
        grace period going on with the time they had left plus ``allowance``, a match's next
        game with the time it had left; then the presence changes of the hold take effect: a
        player back gets ``player_reconnected`` (when the leave was announced), a player whose
        last socket closed during the hold starts the grace period now
        (``player_disconnected``). Does nothing to a table not held."""
        held = self.held
        if held is None:
            return EMPTY
        self.held = None
        if self.status not in (TableStatus.OPEN, TableStatus.PLAYING):
            return self._step()
        back = clocks.resume_timers(self, held, now, allowance)
        self.seats_changed()
        self._emit("resumed", {"since": held.since, "until": now}, now)
        for side, returned in back:
            announced = clocks.end_grace(returned)
            self.seats_changed()
            if announced and not self.finishing:
                self._emit("player_reconnected", {"side": side, "player": returned.player},
                           now)
        steps = [self._step()]
        for side in sorted(held.away):
            seat = self.seats[side]
            if seat is not None and not seat.nodes and seat.grace is None:
                steps.append(self.disconnect(seat.player, "", now))
        return merged(*steps)

    def _held_error(self) -> ProtocolError:
        exc = ProtocolError(ErrorCode.UNAVAILABLE,
                            f"play at table {self.id} is held: the server cannot store; retry")
        exc.retry_after = HOLD_RETRY_AFTER
        return exc

    # --- after a takeover ------------------------------------------------------------------

    def take_over(self, now: float, allowance: float,
                  present: Sequence[Iterable[str]] = (),
                  lost_at: Sequence[float | None] = ()) -> Effects:
        """This machine was rebuilt on a new owner: a player with sockets on live nodes
        (``present[side]``) is connected there, every other player is away: in grace from
        ``now``, or, when their sockets were on a node found dead at ``lost_at[side]``, in
        the node-loss grace from then (:func:`~server.tables.clocks.grace_seconds`); the player
        to act gets the time that was left on the clock at the last stored event
        (:attr:`logged_at`) plus ``allowance``. Emits nothing."""
        live = self.status in (TableStatus.OPEN, TableStatus.PLAYING) and not self.finishing
        for side, seat in enumerate(self.seats):
            if seat is None:
                continue
            seat.nodes = set(present[side]) if side < len(present) else set()
            seat.logged_connected = None
            if not live:
                continue
            if seat.nodes:
                seat.grace = None
                seat.grace_deadline = None
                seat.announced_away = False
                continue
            clocks.start_grace(seat, side, now + clocks.grace_seconds(
                self.settings, now, lost_at[side] if side < len(lost_at) else None))
            # Away because a node was lost, not by the player's doing: the return is
            # announced (the others saw the seat's grace_deadline in the state).
            seat.announced_away = True
        self.seats_changed()
        clocks.take_over_clock(self, now, allowance)
        return self._step()


__all__ = ["TableCommands"]

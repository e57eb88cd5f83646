"""The Game state machine: opening roll, rolls and plays, cube, resignation, forfeits."""

from __future__ import annotations

import json

import pytest

from server.rules import (
    EndReason,
    Game,
    IllegalActionError,
    IllegalPlayError,
    Outcome,
    Phase,
    Position,
    ResultKind,
    ScriptedDice,
    Side,
)
from server.rules.errors import DiceExhaustedError


def game(*dice: int, **kwargs: object) -> Game:
    return Game(dice=ScriptedDice(dice), **kwargs)  # type: ignore[arg-type]


def started(*dice: int, **kwargs: object) -> Game:
    """A game after the opening roll 3-1 won by side 0 and side 0's 8/5 6/5."""
    g = game(3, 1, *dice, **kwargs)
    g.start()
    g.play(Side.ZERO, "8/5 6/5")
    return g


def code_of(action: object, *args: object) -> str:
    with pytest.raises(IllegalActionError) as info:
        action(*args)  # type: ignore[operator]
    assert isinstance(info.value, ValueError)
    return info.value.code


# -- opening roll -----------------------------------------------------------------------------


def test_opening_roll_ties_reroll_and_the_higher_die_starts() -> None:
    g = game(3, 3, 2, 5)
    assert g.phase == Phase.OPENING and g.turn is None
    assert g.start() == (5, 2)
    assert g.opening_rolls == [(3, 3), (2, 5)]
    assert g.turn == Side.ONE
    assert g.phase == Phase.MOVE
    assert g.dice == (5, 2)
    assert len(g.legal_plays) == 8  # 5-2 from the start, see test_rules_perft.py


def test_start_twice_is_wrong_phase() -> None:
    g = game(6, 1)
    g.start()
    assert code_of(g.start) == "wrong_phase"


def test_scripted_dice_run_out_with_a_clear_error() -> None:
    g = game(4, 4)
    with pytest.raises(DiceExhaustedError) as info:
        g.start()
    assert info.value.code == "dice_exhausted"


def test_scripted_dice_check_their_values() -> None:
    with pytest.raises(ValueError, match=r"1\.\.6"):
        ScriptedDice([0])


# -- rolls and plays ----------------------------------------------------------------------


def test_roll_then_play_passes_the_turn() -> None:
    g = started(6, 4)
    assert (g.phase, g.turn, g.dice) == (Phase.ROLL, Side.ONE, None)
    assert g.roll(Side.ONE) == (6, 4)
    assert (g.phase, g.dice) == (Phase.MOVE, (6, 4))
    assert g.play(Side.ONE, "24/14") is None
    assert (g.phase, g.turn) == (Phase.ROLL, Side.ZERO)
    assert g.position.checkers(Side.ONE)[14] == 1


def test_out_of_turn_and_out_of_phase() -> None:
    g = started(6, 4)
    assert code_of(g.roll, Side.ZERO) == "not_your_turn"
    assert code_of(g.play, Side.ONE, "24/14") == "wrong_phase"
    g.roll(Side.ONE)
    assert code_of(g.roll, Side.ONE) == "wrong_phase"
    assert code_of(g.play, Side.ZERO, "13/7 13/9") == "not_your_turn"
    assert code_of(g.roll, 2) == "invalid_side"
    assert code_of(g.roll, True) == "invalid_side"


def test_illegal_play_is_refused_and_nothing_changes() -> None:
    g = started(6, 4)
    g.roll(Side.ONE)
    before = g.to_dict()
    with pytest.raises(IllegalPlayError) as info:
        g.play(Side.ONE, "24/18")
    assert info.value.code == "illegal_play"
    assert info.value.reason == "must_use_more_dice"
    assert g.to_dict() == before


CLOSED_OUT = Position.from_points(
    {25: 1, 6: 14},
    {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 13: 3},
)


def test_a_roll_with_no_legal_play_passes_the_turn() -> None:
    # Side 1 wins the opening (1 vs 6), plays 13/7 13/12; side 0 dances against the
    # closed board and the turn passes straight back.
    g = game(1, 6, 5, 3, position=CLOSED_OUT)
    g.start()
    assert g.turn == Side.ONE
    g.play(Side.ONE, "13/7 13/12")
    assert g.roll(Side.ZERO) == (5, 3)
    assert g.phase == Phase.ROLL and g.turn == Side.ONE and g.dice is None
    last = g.history[-1]
    assert (last.kind, last.side, last.dice, last.play) == ("play", Side.ZERO, (5, 3), ())


# -- results ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loser", "kind"),
    [
        ({1: 14}, ResultKind.SINGLE),  # one checker off
        ({7: 15}, ResultKind.GAMMON),  # none off, none in the winner's home board
        ({19: 1, 7: 14}, ResultKind.BACKGAMMON),  # one in the winner's home board
        ({25: 1, 7: 14}, ResultKind.BACKGAMMON),  # one on the bar
    ],
)
def test_bearing_off_the_last_checker_wins_single_gammon_backgammon(
    loser: dict[int, int], kind: ResultKind
) -> None:
    g = game(6, 1, position=Position.from_points({1: 1}, loser))
    g.start()
    outcome = g.play(Side.ZERO, "1/off")
    assert outcome == Outcome.of(Side.ZERO, kind, EndReason.NORMAL, 1)
    assert g.phase == Phase.OVER and g.outcome == outcome
    assert outcome.points == kind.multiplier
    assert code_of(g.roll, Side.ONE) == "game_over"
    assert code_of(g.forfeit, Side.ONE, "timeout") == "game_over"


def test_outcome_points_must_be_kind_times_cube() -> None:
    with pytest.raises(ValueError, match="kind x cube"):
        Outcome(Side.ZERO, ResultKind.GAMMON, EndReason.NORMAL, 2, 2)


def test_a_step_to_off_may_span_two_dice() -> None:
    # 6-1 from {2, 1}: "2/off" is read as 2/1/off (both dice used, one checker left).
    g = game(6, 1, position=Position.from_points({1: 1, 2: 1}, {7: 15}))
    g.start()
    assert g.play(Side.ZERO, "2/off") is None
    assert g.position.checkers(Side.ZERO)[1] == 1


def test_gammon_win_counts_the_cube() -> None:
    g = game(6, 1, position=Position.from_points({1: 1, 2: 1}, {7: 15}))
    g.start()
    outcome = g.play(Side.ZERO, "2/off 1/off")
    assert outcome == Outcome.of(Side.ZERO, ResultKind.GAMMON, EndReason.NORMAL, 1)


# -- the cube ---------------------------------------------------------------------------------


def test_centred_cube_either_side_may_double_before_rolling() -> None:
    g = started()
    assert g.can_double(Side.ONE) and not g.can_double(Side.ZERO)
    g.double(Side.ONE)
    assert g.phase == Phase.DOUBLE_OFFERED and g.to_act == Side.ZERO
    assert code_of(g.take, Side.ONE) == "not_your_turn"
    assert code_of(g.roll, Side.ONE) == "wrong_phase"
    g.take(Side.ZERO)
    assert (g.cube, g.cube_owner, g.phase, g.turn) == (2, Side.ZERO, Phase.ROLL, Side.ONE)
    # The taker owns the cube now: the doubler cannot redouble.
    assert code_of(g.double, Side.ONE) == "cannot_double"


def test_owner_redoubles_and_the_cube_passes_again() -> None:
    g = started(6, 4, 3, 1)
    g.double(Side.ONE)
    g.take(Side.ZERO)
    g.roll(Side.ONE)
    g.play(Side.ONE, "24/14")
    assert g.can_double(Side.ZERO)
    g.double(Side.ZERO)
    g.take(Side.ONE)
    assert (g.cube, g.cube_owner) == (4, Side.ONE)


def test_drop_loses_the_cube_value_before_the_double_as_a_single_game() -> None:
    g = started(6, 4)
    g.double(Side.ONE)
    g.take(Side.ZERO)  # cube 2, owned by side 0
    g.roll(Side.ONE)
    g.play(Side.ONE, "24/14")
    g.double(Side.ZERO)  # offers 4
    outcome = g.drop(Side.ONE)
    assert outcome == Outcome(Side.ZERO, ResultKind.SINGLE, EndReason.DROP, 2, 2)


def test_drop_at_a_centred_cube_is_worth_one_point() -> None:
    g = started()
    g.double(Side.ONE)
    outcome = g.drop(Side.ZERO)
    assert (outcome.winner, outcome.kind, outcome.cube, outcome.points) == (
        Side.ONE,
        ResultKind.SINGLE,
        1,
        1,
    )


def test_no_double_beyond_the_maximum_cube() -> None:
    g = started()
    side = Side.ONE
    for _ in range(6):  # 2, 4, 8, 16, 32, 64
        g.double(side)
        g.take(side.opponent)
        g.cube_owner = side  # keep the same side doubling, to reach the top quickly
    assert g.cube == 64
    assert not g.can_double(side)
    assert code_of(g.double, side) == "max_cube"


def test_max_cube_can_be_lowered() -> None:
    g = started(max_cube=2)
    g.double(Side.ONE)
    g.take(Side.ZERO)
    g.cube_owner = Side.ONE
    assert code_of(g.double, Side.ONE) == "max_cube"
    with pytest.raises(ValueError, match="power of two"):
        Game(max_cube=3)
    with pytest.raises(ValueError, match="power of two"):
        Game(max_cube=128)


def test_cube_disabled_and_crawford() -> None:
    g = started(cube_enabled=False)
    assert code_of(g.double, Side.ONE) == "cube_disabled"
    g = started(crawford=True)
    assert not g.cube_enabled
    with pytest.raises(IllegalActionError, match="Crawford"):
        g.double(Side.ONE)


def test_double_only_before_rolling() -> None:
    g = started(6, 4)
    g.roll(Side.ONE)
    assert code_of(g.double, Side.ONE) == "wrong_phase"
    assert not g.can_double(Side.ONE)


# -- resignation ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ResultKind))
def test_resignation_accepted_ends_the_game_at_its_level(kind: ResultKind) -> None:
    g = started()
    g.double(Side.ONE)
    g.take(Side.ZERO)
    g.resign(Side.ZERO, kind)
    assert g.phase == Phase.RESIGN_OFFERED and g.to_act == Side.ONE
    assert code_of(g.accept_resignation, Side.ZERO) == "not_your_turn"
    outcome = g.accept_resignation(Side.ONE)
    assert outcome == Outcome.of(Side.ONE, kind, EndReason.RESIGN, 2)
    assert outcome.points == 2 * kind.multiplier


def test_rejected_resignation_goes_back_to_where_it_was() -> None:
    g = started(6, 4)
    g.roll(Side.ONE)
    g.resign(Side.ZERO, "gammon")  # the side not on roll may resign too
    assert g.to_dict()["resignation"] == {"side": 0, "kind": "gammon", "points": 2}
    g.reject_resignation(Side.ONE)
    assert g.phase == Phase.MOVE and g.resignation is None
    g.play(Side.ONE, "24/14")


def test_resignation_errors() -> None:
    g = started()
    assert code_of(g.accept_resignation, Side.ONE) == "no_resignation"
    assert code_of(g.reject_resignation, Side.ONE) == "no_resignation"
    assert code_of(g.resign, Side.ZERO, "double") == "invalid_kind"
    g.double(Side.ONE)
    assert code_of(g.resign, Side.ZERO, "single") == "wrong_phase"


# -- forfeits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["timeout", "disconnect", "leave"])
def test_forfeit_is_a_single_loss_at_the_current_cube(reason: str) -> None:
    g = started()
    g.double(Side.ONE)
    g.take(Side.ZERO)
    outcome = g.forfeit(Side.ONE, reason)
    assert outcome == Outcome.of(Side.ZERO, ResultKind.SINGLE, EndReason(reason), 2)


def test_forfeit_while_a_double_is_offered_uses_the_cube_before_it() -> None:
    g = started()
    g.double(Side.ONE)
    outcome = g.forfeit(Side.ZERO, EndReason.DISCONNECT)
    assert (outcome.winner, outcome.cube, outcome.points) == (Side.ONE, 1, 1)


def test_forfeit_before_the_opening_roll() -> None:
    g = game()
    assert g.forfeit(Side.ONE, "leave").winner == Side.ZERO


def test_forfeit_reason_must_be_a_forfeit() -> None:
    g = started()
    assert code_of(g.forfeit, Side.ONE, "resign") == "invalid_reason"
    assert code_of(g.forfeit, Side.ONE, "bored") == "invalid_reason"


# -- clocks -----------------------------------------------------------------------------------


def test_default_actions_for_a_clock_running_out() -> None:
    g = game(3, 1, 6, 4)
    assert (g.default_action().kind, g.default_action().side) == ("start", None)  # type: ignore[union-attr]
    g.perform(g.default_action())  # type: ignore[arg-type]
    action = g.default_action()
    assert action is not None and action.kind == "play" and action.side == Side.ZERO
    assert action.play == g.legal_plays[0]
    g.perform(action)
    action = g.default_action()
    assert action is not None and (action.kind, action.side) == ("roll", Side.ONE)
    g.double(Side.ONE)
    action = g.default_action()
    assert action is not None and (action.kind, action.side) == ("take", Side.ZERO)
    g.perform(action)
    assert g.cube == 2
    g.resign(Side.ONE, "single")
    action = g.default_action()
    assert action is not None and (action.kind, action.side) == ("reject", Side.ZERO)
    g.perform(action)
    assert g.phase == Phase.ROLL
    g.forfeit(Side.ONE, "timeout")
    assert g.default_action() is None


# -- snapshot ---------------------------------------------------------------------------------


def test_snapshot_fields() -> None:
    g = game(3, 1)
    g.start()
    snap = g.to_dict()
    json.dumps(snap)  # JSON-able as it is
    assert snap["phase"] == "move" and snap["turn"] == 0 and snap["to_act"] == 0
    assert snap["board"] == list(Position.initial().board)
    assert snap["bar"] == [0, 0] and snap["off"] == [0, 0] and snap["pips"] == [167, 167]
    assert snap["dice"] == [3, 1]
    assert snap["cube"] == 1 and snap["cube_owner"] is None and snap["can_double"] is False
    legal = snap["legal_plays"]
    assert isinstance(legal, list) and len(legal) == 16 and ((8, 5), (6, 5)) in legal
    assert "8/5 6/5" in g.legal_play_texts
    assert snap["resignation"] is None and snap["outcome"] is None
    assert snap["position_id"] == "4HPwATDgc/ABMA"
    assert snap["match_id"] == "MIEFAAAAAAAE"  # see test_rules_gnubg.py
    for text, steps in zip(g.legal_play_texts, legal, strict=True):
        for sent in (text, steps, [list(step) for step in steps]):
            copy = game(3, 1)
            copy.start()
            copy.play(Side.ZERO, sent)
            assert copy.history[-1].play == steps


def test_snapshot_when_over() -> None:
    g = started()
    g.forfeit(Side.ZERO, "leave")
    snap = g.to_dict()
    assert snap["phase"] == "over" and snap["to_act"] is None and snap["legal_plays"] == []
    assert snap["outcome"] == {
        "winner": 1,
        "kind": "single",
        "reason": "leave",
        "cube": 1,
        "points": 1,
    }


def test_an_opening_roll_that_cannot_be_played_passes_too() -> None:
    g = game(6, 5, position=CLOSED_OUT)  # side 0 starts with 6-5 but is closed out
    assert g.start() == (6, 5)
    assert (g.phase, g.turn, g.dice) == (Phase.ROLL, Side.ONE, None)
    assert g.history[-1].play == ()


def test_a_dice_source_must_roll_one_to_six() -> None:
    class Loaded:
        def roll_die(self) -> int:
            return 7

    with pytest.raises(ValueError, match=r"1\.\.6"):
        Game(dice=Loaded()).start()

"""Matches to n points: score, Crawford and post-Crawford games, match winner, forfeits."""

from __future__ import annotations

import pytest

from server.rules import (
    IllegalActionError,
    Match,
    Phase,
    ResultKind,
    ScriptedDice,
    Side,
    decode_match_id,
    match_id,
)

OPENING_SIDE_ZERO = [6, 1]  # side 0 wins every opening roll


def match(length: int, games: int = 12) -> Match:
    return Match(length, dice=ScriptedDice(OPENING_SIDE_ZERO * games))


def win(m: Match, winner: Side, kind: ResultKind = ResultKind.SINGLE) -> None:
    """Start the next game and end it by the loser resigning ``kind``."""
    g = m.next_game()
    g.start()
    g.resign(winner.opponent, kind)
    g.accept_resignation(winner)


def test_score_crawford_post_crawford_and_no_cap() -> None:
    m = match(5)
    assert m.game is None and m.score == (0, 0) and not m.is_over
    win(m, Side.ZERO, ResultKind.BACKGAMMON)
    assert m.score == (3, 0) and not m.is_crawford_game
    win(m, Side.ZERO)
    assert m.score == (4, 0)
    g = m.next_game()  # side 0 is at n - 1: the Crawford game
    assert m.is_crawford_game and g.crawford and not g.cube_enabled
    g.start()
    g.play(Side.ZERO, "13/7 8/7")
    with pytest.raises(IllegalActionError) as info:
        g.double(Side.ONE)
    assert info.value.code == "cube_disabled"
    g.resign(Side.ZERO, "single")
    g.accept_resignation(Side.ONE)
    assert m.score == (4, 1)
    g = m.next_game()
    assert not m.is_crawford_game and m.is_post_crawford and g.cube_enabled
    g.start()
    g.play(Side.ZERO, "13/7 8/7")
    g.double(Side.ONE)  # the trailer doubles at once, as usual after Crawford
    g.take(Side.ZERO)
    g.forfeit(Side.ZERO, "timeout")
    assert m.score == (4, 3)
    g = m.next_game()
    assert not g.crawford  # only one Crawford game per match
    g.start()
    g.resign(Side.ONE, "gammon")
    g.accept_resignation(Side.ZERO)
    assert m.score == (6, 3)  # a gammon at 4-3 to 5 is worth 2: the score passes n
    assert m.winner == Side.ZERO and m.is_over
    with pytest.raises(IllegalActionError) as info:
        m.next_game()
    assert info.value.code == "match_over"


def test_crawford_when_the_trailer_reaches_n_minus_one_first() -> None:
    m = match(3)
    win(m, Side.ONE, ResultKind.GAMMON)
    assert m.score == (0, 2)
    assert m.next_game().crawford


def test_first_game_of_a_two_point_match_is_not_crawford() -> None:
    m = match(2)
    assert not m.next_game().crawford
    m.game.start()  # type: ignore[union-attr]
    m.game.forfeit(Side.ONE, "timeout")  # type: ignore[union-attr]
    assert m.next_game().crawford


def test_one_point_match_never_uses_the_cube() -> None:
    m = match(1)
    g = m.next_game()
    assert not g.cube_enabled and not g.crawford
    g.start()
    g.play(Side.ZERO, "13/7 8/7")
    with pytest.raises(IllegalActionError) as info:
        g.double(Side.ONE)
    assert info.value.code == "cube_disabled"


def test_next_game_needs_the_current_one_over() -> None:
    m = match(3)
    m.next_game()
    with pytest.raises(IllegalActionError) as info:
        m.next_game()
    assert info.value.code == "game_in_progress"


def test_forfeit_loses_the_match_whatever_the_score() -> None:
    m = match(7)
    win(m, Side.ONE, ResultKind.BACKGAMMON)
    g = m.next_game()
    g.start()
    outcome = m.forfeit(Side.ONE, "leave")
    assert outcome is not None and outcome.winner == Side.ZERO and outcome.points == 1
    assert g.phase == Phase.OVER
    assert m.score == (1, 3)
    assert m.winner == Side.ZERO and m.is_over
    assert m.to_dict()["forfeit"] == {"side": 1, "reason": "leave"}
    with pytest.raises(IllegalActionError):
        m.forfeit(Side.ZERO, "leave")


def test_forfeit_between_games() -> None:
    m = match(3)
    win(m, Side.ZERO)
    assert m.forfeit(Side.ZERO, "disconnect") is None
    assert m.winner == Side.ONE
    with pytest.raises(IllegalActionError) as info:
        match(3).forfeit(Side.ZERO, "resign")
    assert info.value.code == "invalid_reason"


@pytest.mark.parametrize("length", [0, -1, 100, True, 2.5])
def test_length_is_checked(length: object) -> None:
    with pytest.raises(ValueError, match="length"):
        Match(length)  # type: ignore[arg-type]


def test_match_id_carries_length_score_and_crawford() -> None:
    m = match(5)
    win(m, Side.ONE, ResultKind.GAMMON)
    win(m, Side.ONE, ResultKind.GAMMON)
    g = m.next_game()
    g.start()
    state = decode_match_id(match_id(m))
    assert state.match_length == 5 and state.score == (0, 4) and state.crawford
    assert state.game_state == "playing" and state.dice == (6, 1) and state.on_roll == Side.ZERO
    g.resign(Side.ZERO, "single")
    g.accept_resignation(Side.ONE)
    state = decode_match_id(match_id(m))
    assert state.score == (0, 5) and state.game_state == "resigned"
    snap = m.to_dict()
    assert snap["winner"] == 1 and snap["score"] == [0, 5] and snap["games"] == 3


def test_a_match_resumed_from_its_score_goes_on_with_the_crawford_rule() -> None:
    match = Match.resume(5, (4, 2), crawford_played=False, dice=ScriptedDice([6, 1]))
    assert match.score == (4, 2) and not match.is_over
    game = match.next_game()
    assert game.crawford and match.is_crawford_game  # side 0 is one point away
    later = Match.resume(5, (4, 3), crawford_played=True, dice=ScriptedDice([6, 1]))
    assert not later.next_game().crawford and later.is_post_crawford
    later.use_dice(ScriptedDice([2, 1]))
    assert later.game is not None and later.game.start() == (2, 1)

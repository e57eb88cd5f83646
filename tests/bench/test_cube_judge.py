"""The cube benchmark (bench/cube_judge.py): the match states it draws allow a double that
can matter, its snapshots read back as the intended cube state, and (where GNU Backgammon
is installed) gnubg's cubeful answers are seen from the side on roll."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.cube_judge import Case, Point, match_case, snapshot_for  # noqa: E402
from bench.gnubg_judge import GNUBG, CubeItem, JudgePool  # noqa: E402
from server.bot.cube import MatchContext  # noqa: E402
from server.bot.strategy import Level, cube_state, decide  # noqa: E402
from server.rules import Game, decode_match_id  # noqa: E402


def point_on_roll() -> Point:
    game = Game(cube_enabled=False)
    game.start()
    side = int(game.to_dict()["to_act"])  # type: ignore[call-overload]
    game.play(side, game.legal_plays[0])
    snapshot = game.to_dict()
    assert snapshot["phase"] == "roll"
    return Point(snapshot, int(snapshot["to_act"]))  # type: ignore[call-overload]


def test_match_cases_are_legal_and_live() -> None:
    rng = random.Random(5)
    for n in range(2000):
        length = (5, 7)[n % 2]
        case = match_case(0, length, rng)
        mine, theirs = case.score
        assert 0 <= mine < length and 0 <= theirs < length
        leader = length - 1
        assert not ((mine == leader) != (theirs == leader) and 0 in (mine, theirs))  # Crawford
        assert case.cube < max(length - mine, length - theirs)
        assert case.cube == (2 if case.owned else 1)


def test_snapshots_read_back_as_the_case() -> None:
    point = point_on_roll()
    side = point.side
    case = Case(0, 2, True, 7, (3, 5))
    doubler = snapshot_for(point, case, offered=False)
    assert doubler["to_act"] == side and doubler["phase"] == "roll" and doubler["can_double"]
    assert cube_state(doubler, side, side).match == MatchContext(7, 4, 2)
    assert cube_state(doubler, side, side).owned and cube_state(doubler, side, side).cube == 2
    state = decode_match_id(doubler["match_id"])
    assert state.score[side] == 3 and state.score[1 - side] == 5
    taker = snapshot_for(point, case, offered=True)
    assert taker["to_act"] == 1 - side and taker["phase"] == "double_offered"
    assert cube_state(taker, 1 - side, side) == cube_state(doubler, side, side)
    money = snapshot_for(point, Case(0, 1, False, 0, (0, 0)), offered=False)
    assert cube_state(money, side, side).match is None
    for level in Level:
        answer = decide(level, doubler, side, random.Random(1))
        assert answer is not None and answer.kind in ("double", "roll")
        reply = decide(level, taker, 1 - side, random.Random(1))
        assert reply is not None and reply.kind in ("take", "drop")


@pytest.mark.skipif(not Path(GNUBG).exists(), reason="GNU Backgammon is not installed")
def test_gnubg_cube_equities_belong_to_the_side_on_roll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # gnubg keeps a folder in its home
    # a race the side on roll cannot lose, nor win a gammon: it has 15 checkers on its 1..3
    # points, the other 15 on its 7 point
    ahead = [0] * 26
    ahead[1], ahead[2], ahead[3] = 5, 5, 5
    behind = [0] * 26
    behind[7] = 15
    pool = JudgePool(2)
    try:
        (no_double, take, drop, scale), (_nd, m_take, m_drop, m_scale) = pool.cube_equities(
            [CubeItem(ahead, behind), CubeItem(ahead, behind, 1, False, 5, (2, 2))])
    finally:
        pool.close()
    assert drop == pytest.approx(1.0) and take > drop and scale == 1.0  # double/drop
    assert no_double == pytest.approx(1.0, abs=0.02)  # a sure single win
    assert m_drop == pytest.approx(1.0) and m_take > m_drop and 0.0 < m_scale < 0.5

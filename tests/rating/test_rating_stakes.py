"""Stake previews agree with the formulas that will score the game."""

from __future__ import annotations

import json

import pytest

from rating_plugin import elo, fibs, table42
from rating_plugin.stakes import StakePreview, System, elo_stakes, fibs_stakes, table42_stakes


def test_table42_underdog_example() -> None:
    # Cube 1, 1500 against 1800: the underdog +20 / -12, the favourite +12 / -20.
    preview = table42_stakes(1500, 1800)
    assert preview.system is System.TABLE42
    assert (preview.player.win, preview.player.loss) == (20, -12)
    assert (preview.opponent.win, preview.opponent.loss) == (12, -20)
    assert (preview.cube, preview.coefficient, preview.version) == (1, 1.0, "1.3.1")
    assert preview.player.expected_score == table42.expected_score(1500, 1800)


# Each row of the rating-difference table, seen from the underdog.
@pytest.mark.parametrize(
    ("difference", "win", "loss"),
    [(0, 16, -16), (100, 18, -14), (200, 19, -13), (300, 20, -12), (400, 22, -10)],
)
def test_table42_by_difference(difference: int, win: int, loss: int) -> None:
    preview = table42_stakes(1500, 1500 + difference)
    assert (preview.player.win, preview.player.loss) == (win, loss)
    assert (preview.opponent.win, preview.opponent.loss) == (-loss, -win)


def test_table42_mixed_k_and_cube() -> None:
    preview = table42_stakes(1500, 1500, k=16, opponent_k=32)
    assert (preview.player.win, preview.player.loss) == (8, -8)
    assert (preview.opponent.win, preview.opponent.loss) == (16, -16)
    assert (preview.player.k, preview.opponent.k) == (16, 32)
    at_cube_8 = table42_stakes(1500, 1500, cube=8, k=16, opponent_k=16)
    assert (at_cube_8.player.win, at_cube_8.player.loss, at_cube_8.coefficient) == (12, -12, 1.5)
    old = table42_stakes(1500, 1500, cube=4, version="pre-1.0.5")
    assert (old.player.win, old.version) == (64, "pre-1.0.5")


def test_fibs() -> None:
    preview = fibs_stakes(1500, 1500, match_length=1, experience=150, opponent_experience=400)
    assert preview.system is System.FIBS
    assert (preview.player.win, preview.player.loss) == (7.0, -3.5 * 2)
    assert (preview.opponent.win, preview.opponent.loss) == (2.0, -2.0)
    assert (preview.player.multiplier, preview.opponent.multiplier) == (3.5, 1.0)
    assert preview.match_length == 1
    uneven = fibs_stakes(1650.5, 1500, match_length=7, experience=20, opponent_experience=320)
    win = fibs.change(1650.5, 1500, match_length=7, winner_experience=20, loser_experience=320)
    loss = fibs.change(1500, 1650.5, match_length=7, winner_experience=320, loser_experience=20)
    assert (uneven.player.win, uneven.player.loss) == (win.winner, loss.loser)
    assert (uneven.opponent.win, uneven.opponent.loss) == (loss.winner, win.loser)


def test_elo_win_draw_loss() -> None:
    preview = elo_stakes(1500, 1600, k=32)
    assert preview.system is System.ELO
    you = preview.player
    assert (f"{you.win:.2f}", f"{you.draw:.2f}", f"{you.loss:.2f}") == ("20.48", "4.48", "-11.52")
    them = preview.opponent
    assert (f"{them.win:.2f}", f"{them.draw:.2f}", f"{them.loss:.2f}") == (
        "11.52",
        "-4.48",
        "-20.48",
    )
    assert f"{you.expected_score:.4f}" == "0.3599"
    assert elo_stakes(1500, 1600, k=32, opponent_k=16).opponent.k == 16
    capped = elo_stakes(2000, 2600, k=20, max_difference=elo.FIDE_MAX_DIFFERENCE)
    assert f"{capped.player.win:.2f}" == "18.18"


def test_to_dict_is_json_ready() -> None:
    preview = table42_stakes(1500, 1800, cube=2)
    data = preview.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data == {
        "system": "table42",
        "player": {
            "rating": 1500,
            "expected_score": preview.player.expected_score,
            "win": 24,
            "loss": -13,
            "k": 32,
        },
        "opponent": {
            "rating": 1800,
            "expected_score": preview.opponent.expected_score,
            "win": 13,
            "loss": -24,
            "k": 32,
        },
        "cube": 2,
        "coefficient": table42.cube_coefficient(2),
        "version": "1.3.1",
    }
    fibs_data = fibs_stakes(1500, 1500, match_length=3, experience=0, opponent_experience=0)
    assert set(fibs_data.to_dict()) == {"system", "player", "opponent", "match_length"}
    assert set(fibs_data.to_dict()["player"]) == {  # type: ignore[call-overload]
        "rating",
        "expected_score",
        "win",
        "loss",
        "multiplier",
    }
    elo_data = elo_stakes(1500, 1500, k=20).to_dict()
    assert elo_data["player"] == {  # JSON-ready and mirror-image for equal players
        "rating": 1500,
        "expected_score": 0.5,
        "win": 10.0,
        "loss": -10.0,
        "draw": 0.0,
        "k": 20,
    }


def test_preview_is_frozen() -> None:
    preview: StakePreview = table42_stakes(1500, 1500)
    with pytest.raises(AttributeError):
        preview.cube = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        preview.player.win = 0  # type: ignore[misc]

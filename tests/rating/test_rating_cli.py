"""The rating calculator: python -m rating_plugin / table42-rating."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rating_plugin.cli import main

README_ARGS = ["table42", "1500", "1800", "--result", "win"]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    data: dict[str, object] = json.loads(out)
    return data


def test_readme_command_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(README_ARGS) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines() == [
        "Table42 Elo 1.3.1: 1500 wins against 1800 at cube 1 (coefficient 1.00)",
        "  expected score  0.3599  (36.0% to win)",
        "  change          +20  (K 32)",
        "  new rating      1520",
        "  opponent        -20 -> 1780  (K 32)",
    ]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (README_ARGS, {"change": 20, "new_rating": 1520, "opponent_change": -20, "k": 32}),
        (
            ["table42", "1800", "1500", "--result", "loss"],
            {"change": -20, "new_rating": 1780, "opponent_change": 20},
        ),
        (
            ["table42", "1500", "1500", "--result", "win", "--recent-games", "60"],
            {"change": 8, "opponent_change": -16, "k": 16, "opponent_k": 32},
        ),
        (
            ["table42", "1500", "1500", "--result", "loss", "--k", "16"],
            {"change": -8, "opponent_change": 16, "new_rating": 1492},
        ),
        (
            ["table42", "1500", "1500", "--result", "win", "--cube", "16", "--opponent-k", "16"],
            {"change": 27, "opponent_change": -13, "cube": 16},
        ),
        (
            ["table42", "1800", "1500", "--result", "win", "--version", "1.0.5"],
            {"change": 5, "version": "1.0.5"},
        ),
        (
            ["table42", "1500", "1500", "--result", "win", "--cube", "4", "--version", "pre-1.0.5"],
            {"change": 64, "coefficient": 4.0},
        ),
        (
            [
                "table42",
                "1500",
                "1500",
                "--result",
                "win",
                "--version",
                "1.2.0",
                "--opponent-recent-games",
                "80",
            ],
            {"opponent_k": 32},  # no heavy-week rule before 1.3.1
        ),
    ],
)
def test_table42_json(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: dict[str, object]
) -> None:
    data = run_json(capsys, *argv)
    assert data["system"] == "table42"
    assert {key: data[key] for key in expected} == expected


def test_fibs_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(
        capsys, "fibs", "1500", "1500", "--result", "win", "--length", "1", "--experience", "150"
    )
    assert (data["change"], data["new_rating"], data["multiplier"]) == (7.0, 1507.0, 3.5)
    assert (data["opponent_change"], data["opponent_multiplier"]) == (-2.0, 1.0)
    data = run_json(capsys, "fibs", "1500", "1500", "--result", "loss", "--length", "9")
    assert (data["change"], data["opponent_change"], data["expected_score"]) == (-6.0, 6.0, 0.5)


def test_fibs_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fibs", "1500", "1500", "--result", "win", "--experience", "150"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "+7.00  (multiplier 3.5)" in out
    assert "new rating      1507.00" in out


def test_elo(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "elo", "1500", "1600", "--result", "win", "--k", "32")
    assert f"{data['expected_score']:.4f}" == "0.3599"
    assert (f"{data['change']:.2f}", f"{data['new_rating']:.2f}") == ("20.48", "1520.48")
    assert main(["elo", "1500", "1600", "--result", "draw", "--preset", "standard"]) == 0
    out = capsys.readouterr().out
    assert "Classic Elo (K 20): 1500 draws with 1600" in out
    assert "change          +2.80" in out


@pytest.mark.parametrize(
    ("extra", "k", "change"),
    [
        (["--games", "10"], 40, "36.36"),
        (["--games", "100"], 20, "18.18"),
        (["--games", "100", "--junior"], 40, "36.36"),
        (["--games", "100", "--reached-2400"], 10, "9.09"),
    ],
)
def test_elo_fide(
    capsys: pytest.CaptureFixture[str], extra: list[str], k: int, change: str
) -> None:
    data = run_json(capsys, "elo", "2000", "2700", "--result", "win", "--preset", "fide", *extra)
    assert data["k"] == k
    assert f"{data['change']:.2f}" == change  # 700 points apart count as 400


def test_stakes(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "stakes", "table42", "1500", "1800")
    assert data["player"] == {
        "rating": 1500,
        "expected_score": pytest.approx(0.3599, abs=5e-5),
        "win": 20,
        "loss": -12,
        "k": 32,
    }
    assert main(["stakes", "table42", "1500", "1800"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Table42 Elo 1.3.1 stakes at cube 1 (coefficient 1.00), K 32 / 32"
    assert out[2].split() == ["you", "1500", "0.3599", "+20", "-12"]
    assert out[3].split() == ["opponent", "1800", "0.6401", "+12", "-20"]
    data = run_json(capsys, "stakes", "elo", "1500", "1600")
    assert f"{data['player']['draw']:.2f}" == "4.48"  # type: ignore[index]
    data = run_json(
        capsys, "stakes", "fibs", "1500", "1500", "--experience", "150", "--length", "1"
    )
    assert (data["player"]["win"], data["opponent"]["win"]) == (7.0, 2.0)  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "required: SYSTEM"),
        (["table42", "1500", "1800"], "required: --result"),
        (["table42", "1500", "1800", "--result", "draw"], "--result: invalid choice"),
        (["table42", "1500", "1800", "--result", "win", "--cube", "3"], "--cube: must be one of"),
        (["table42", "nan", "1800", "--result", "win"], "RATING: must be a finite number"),
        (["table42", "1500", "inf", "--result", "win"], "OPPONENT: must be a finite number"),
        (["table42", "1500", "x", "--result", "win"], "OPPONENT: not a number"),
        (["table42", "1500", "1800", "--result", "win", "--k", "0"], "--k: must be at least 1"),
        (["table42", "1", "2", "--result", "win", "--recent-games", "-1"], "--recent-games"),
        (["table42", "1", "2", "--result", "win", "--k", "8", "--recent-games", "1"], "--k"),
        (["table42", "1", "2", "--result", "win", "--version", "2.0"], "--version"),
        (["fibs", "1500", "1600", "--result", "win", "--length", "0"], "--length"),
        (["fibs", "1500", "1600", "--result", "win", "--length", "2.5"], "--length"),
        (["fibs", "1", "2", "--result", "win", "--experience", "-5"], "--experience"),
        (["elo", "1500", "1600", "--result", "win", "--k", "-1"], "--k: must be greater than 0"),
        (["elo", "1500", "1600", "--result", "win", "--preset", "fide"], "--games is required"),
        (["elo", "1500", "1600", "--result", "win", "--junior"], "go with --preset fide"),
        (["stakes", "table42", "1500"], "required: OPPONENT"),
        (["table42", "9" * 400, "1800", "--result", "win"], "RATING: must be a finite number"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert message in err
    assert ": error: " in err


@pytest.mark.parametrize(
    "argv", [["--help"], ["table42", "--help"], ["fibs", "--help"], ["elo", "-h"], ["stakes", "-h"]]
)
def test_help_has_examples(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv, prog="table42-rating")
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: table42-rating")
    assert "examples:" in out


def test_python_dash_m_in_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rating_plugin", *README_ARGS],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "new rating      1520" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "rating_plugin", "table42", "1500", "1800", "--result", "tie"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("python -m rating_plugin table42: error: argument --result")
    assert bad.stderr.count("\n") == 1

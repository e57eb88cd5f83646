"""The cube model's fitting tool (bench/cube_fit.py): its replay of cube_judge's accounting
on a cache, without gnubg or the network."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.cube_fit import score  # noqa: E402


def test_score_replays_the_judges_accounting() -> None:
    # One clear money double (0.85 cubeless wins): gnubg says double/drop. The model
    # doubles (no error) and drops (no error). A second point, even: no double is right
    # and not close, so it is not counted.
    cache = {
        "outputs": np.array([[0.85, 0.0, 0.0, 0.0, 0.0], [0.5, 0.1, 0.0, 0.1, 0.0]]),
        "point": np.array([0, 1]), "cube": np.array([1, 1]),
        "owned": np.array([False, False]), "length": np.array([0, 0]),
        "score": np.array([[0, 0], [0, 0]]),
        "equities": np.array([[0.8, 1.3, 1.0, 1.0], [0.0, -0.4, 1.0, 1.0]]),
    }
    money = score(cache)["money"]
    assert money["doubler"]["decisions"] == 1 and money["doubler"]["memg"] == 0.0
    assert money["taker"]["decisions"] == 1 and money["taker"]["memg"] == 0.0
    # A model that never doubles and always takes: it loses 0.2 as doubler, 0.3 as taker.
    wrong = score(cache, lambda out, state: False, lambda out, state: True)["money"]
    assert wrong["doubler"]["memg"] == pytest.approx(200.0)
    assert wrong["taker"]["memg"] == pytest.approx(300.0)

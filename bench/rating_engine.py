"""Time per call of the pure rating formulas (median of several timeit runs).

Run from the repository root, after ``python3 -m pip install -e .``:

    python3 bench/rating_engine.py            # 7 runs of 200 000 calls each
    python3 bench/rating_engine.py --runs 11 --number 500000

Target: under 2 µs per ``table42.change``, ``fibs.change`` and ``elo.update`` call.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import timeit

from rating_plugin import elo, fibs, round_half_away, stakes, table42

TARGET_US = 2.0

CASES: dict[str, tuple[str, bool]] = {
    # name: (statement, counts against the target)
    "table42.change": ("table42.change(1523, 1811, cube=4, winner_k=32, loser_k=16)", True),
    "fibs.change": (
        "fibs.change(1523.5, 1611.25, match_length=7, winner_experience=150, "
        "loser_experience=900)",
        True,
    ),
    "elo.update": ("elo.update(1500, 1600, 1, 32)", True),
    "elo.fide_update": ("elo.fide_update(2000, 2600, 0.5, rated_games=100)", False),
    "round_half_away": ("round_half_away(-2.5)", False),
    "stakes.table42_stakes": ("stakes.table42_stakes(1500, 1800, cube=2)", False),
}


def measure(statement: str, *, runs: int, number: int) -> float:
    """Median seconds per call over ``runs`` timeit runs of ``number`` calls."""
    namespace = {
        "table42": table42,
        "fibs": fibs,
        "elo": elo,
        "stakes": stakes,
        "round_half_away": round_half_away,
    }
    timer = timeit.Timer(statement, globals=namespace)
    timer.timeit(number // 10)  # warm-up
    return statistics.median(t / number for t in timer.repeat(repeat=runs, number=number))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timeit runs (default 7)")
    parser.add_argument("--number", type=int, default=200_000, help="calls per run")
    args = parser.parse_args()
    print(
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"median of {args.runs} runs x {args.number} calls"
    )
    slow = []
    for name, (statement, targeted) in CASES.items():
        per_call_us = measure(statement, runs=args.runs, number=args.number) * 1e6
        mark = "" if not targeted else ("  ok" if per_call_us < TARGET_US else "  OVER TARGET")
        print(f"{name:<24}{per_call_us:8.3f} µs/call{mark}")
        if targeted and per_call_us >= TARGET_US:
            slow.append(name)
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())

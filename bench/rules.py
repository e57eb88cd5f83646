"""Legal-play generation per (position, roll), and whole random games per second.

Run from the repository root, after ``python3 -m pip install -e .``:

    python3 bench/rules.py                    # 3000 positions, 300 games
    python3 bench/rules.py --positions 10000 --games 1000

The corpus is fixed (seeded): every position met in seeded random games, each with a
seeded roll. Each (position, roll) is timed cold (memo cleared) several times and its
fastest run kept, so a garbage-collection pause does not pose as the generator's worst
case; the single slowest raw call is printed too. Doubles and non-doubles are reported
apart. Target: median under 50 µs, worst under 5 ms.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time

from server.rules import Game, Phase, Position, Side, legal_plays
from server.rules.moves import _plays_with_keys, _results

MEDIAN_TARGET_US = 50.0
WORST_TARGET_US = 5000.0


class SeededDice:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def roll_die(self) -> int:
        return self._rng.randint(1, 6)


def corpus(size: int, seed: int = 1) -> list[tuple[Position, tuple[int, int]]]:
    """``size`` (position, roll) pairs from seeded random games (random legal plays)."""
    rng = random.Random(seed)
    items: list[tuple[Position, tuple[int, int]]] = []
    while len(items) < size:
        position = Position.initial(Side(rng.randint(0, 1)))
        while position.winner is None and len(items) < size:
            roll = (rng.randint(1, 6), rng.randint(1, 6))
            items.append((position, roll))
            # sorted: the corpus must not depend on the order the generator yields plays in
            position = position.apply(rng.choice(sorted(legal_plays(position, roll))))
    return items


def time_generation(
    items: list[tuple[Position, tuple[int, int]]], repeats: int
) -> tuple[list[float], float]:
    """Per item: the fastest of ``repeats`` cold calls, in µs; and the slowest raw call."""
    best: list[float] = []
    slowest = 0.0
    for position, roll in items:
        fastest = float("inf")
        for _ in range(repeats):
            _plays_with_keys.cache_clear()
            start = time.perf_counter_ns()
            list(legal_plays(position, roll))
            elapsed = (time.perf_counter_ns() - start) / 1000
            fastest = min(fastest, elapsed)
            slowest = max(slowest, elapsed)
        best.append(fastest)
    return best, slowest


def summary(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return (
        f"{name:<12} {len(times):>6}  median {statistics.median(times):8.1f} µs"
        f"  p99 {p99:8.1f} µs  worst {ordered[-1]:8.1f} µs"
    )


def random_games(count: int, seed: int = 2) -> tuple[float, int]:
    """Play ``count`` games with random legal plays (no cube); (seconds, turns)."""
    rng = random.Random(seed)
    turns = 0
    _plays_with_keys.cache_clear()
    _results.cache_clear()
    start = time.perf_counter()
    for index in range(count):
        game = Game(dice=SeededDice(seed * 100_000 + index))
        game.start()
        while game.phase != Phase.OVER:
            side = game.turn
            assert side is not None
            if game.phase == Phase.ROLL:
                game.roll(side)
            else:
                game.play(side, rng.choice(sorted(game.legal_plays)))
                turns += 1
    return time.perf_counter() - start, turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=3000)
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    items = corpus(args.positions)
    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"corpus: {len(items)} (position, roll) pairs from seeded random games")
    gc.collect()
    times, slowest = time_generation(items, args.repeats)
    doubles = [t for t, (_, roll) in zip(times, items, strict=True) if roll[0] == roll[1]]
    others = [t for t, (_, roll) in zip(times, items, strict=True) if roll[0] != roll[1]]
    print(summary("all rolls", times))
    print(summary("non-doubles", others))
    print(summary("doubles", doubles))
    print(f"slowest single raw call (any pause included): {slowest:.1f} µs")
    ok = statistics.median(times) < MEDIAN_TARGET_US and max(times) < WORST_TARGET_US
    print(f"target median < {MEDIAN_TARGET_US:.0f} µs, worst < {WORST_TARGET_US:.0f} µs: "
          f"{'met' if ok else 'MISSED'}")

    seconds, turns = random_games(args.games)
    print(
        f"random games: {args.games} in {seconds:.2f} s = {args.games / seconds:.1f} games/s "
        f"({turns / seconds:.0f} plays/s, {turns / args.games:.1f} plays a game; Game API "
        "with roll, checked play, no cube)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

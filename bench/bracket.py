"""Time the bracket state machine as the driver uses it: every step decodes the stored state,
changes it, resolves it and encodes it again (``from_dict`` / ``to_dict``).

    python3 bench/bracket.py                 # 8, 32 and 128 players
    python3 bench/bracket.py --players 64 --repeat 20

For each field size: the time to build and resolve a bracket, and the mean time of one driver
step (decode, open a table or record a result, resolve, encode) over a whole tournament.
"""

from __future__ import annotations

import argparse
import json
import time

from server.tournaments.bracket import Bracket, MatchStatus, build


def run(players: int) -> tuple[float, float, int]:
    names = [f"p{i:03d}" for i in range(1, players + 1)]
    t0 = time.perf_counter()
    b = build(names, no_show_seconds=60, now=0.0)
    built = time.perf_counter() - t0
    state = json.dumps(b.to_dict())
    steps = 0
    t0 = time.perf_counter()
    for _ in range(4 * players):  # bounded: a tournament has fewer steps than this
        b = Bracket.from_dict(json.loads(state))
        ready = [m for m in b.matches() if m.status in (MatchStatus.READY, MatchStatus.PLAYING)]
        if not ready:
            break
        m = ready[0]
        if m.status is MatchStatus.READY:
            b = b.open_table(m.match, "t")
        else:
            b = b.record_result(m.match, min(p for p in m.players if p is not None))
        b = b.resolve(1.0)
        state = json.dumps(b.to_dict())
        steps += 1
    stepped = time.perf_counter() - t0
    assert Bracket.from_dict(json.loads(state)).podium is not None
    return built, stepped / max(steps, 1), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, nargs="*", default=[8, 32, 128])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'players':>8} {'build ms':>10} {'step ms':>10} {'steps':>6}")
    for players in args.players:
        best = min((run(players) for _ in range(args.repeat)), key=lambda r: r[1])
        print(f"{players:>8} {best[0] * 1000:>10.2f} {best[1] * 1000:>10.3f} {best[2]:>6}")


if __name__ == "__main__":
    main()

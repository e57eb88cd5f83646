"""The node's CPU per paced move against two yardsticks in one command: the echo at the same
pace over the same sockets, and the floor (``bench/floor_server.py``, the minimal correct move
server), in alternating runs of ``bench/load.py``; optionally the instruction counts
(callgrind) and the node with ``--workers``.

Run from the repository root (about 3 minutes per 1,000-game run on a busy machine)::

    python3 bench/move_cost.py                     # 1,000 games at 2-5 s a decision, N F F N
    python3 bench/move_cost.py --workers 2         # also the node with --workers 2 (W runs)
    python3 bench/move_cost.py --workers 2 --link-off   # and W without the local link (R)
    python3 bench/move_cost.py --callgrind         # first bench/callgrind.py all
    python3 bench/move_cost.py --json out.json     # also keep every figure

The runs alternate node and floor (N F F N for ``--rounds 2``; with ``--workers`` each round
adds a run of the node with that many workers after the node's, and with ``--link-off`` one
of those workers talking through Redis only, ``TABLE42_LOCAL_LINK=0``), never two at once. Every run
measures its own echo phase at the same pace first (``--think``/``--think-max`` before each
round trip, one socket in flight per game, two sockets per game), so the echo figure is the
median over all runs. Reported: the median server CPU per move of each target, node / floor
and node / echo, and each target's capacity at 75% of a core (``bench/load.py``: linear in
CPU per move, at the measured number of games).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_json(args: list[str], timeout: float,
             env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a bench script with ``--json``; its last JSON document on stdout."""
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)
    sys.stderr.write(done.stderr[-3000:])
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}")
    text = done.stdout
    if args[0].endswith("callgrind.py"):  # one JSON line among its lines of text
        print(text, end="", flush=True)
        line = next(x for x in reversed(text.splitlines()) if x.startswith("{"))
        return dict(json.loads(line))
    return dict(json.loads(text[text.find("{"):]))


def order(rounds: int, workers: int, link_off: bool = False) -> list[str]:
    """The runs, alternating: node floor | floor node | ..., ``nodeW`` after each node (and
    ``nodeWredis``, before it in odd rounds, after it in even ones)."""
    runs: list[str] = []
    for i in range(rounds):
        pair = ["node", "floor"] if i % 2 == 0 else ["floor", "node"]
        for target in pair:
            runs.append(target)
            if target == "node" and workers > 1:
                many = [f"node{workers}", f"node{workers}redis"] if link_off \
                    else [f"node{workers}"]
                runs += many if i % 2 == 0 else many[::-1]
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="node and floor runs each")
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--think-max", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=1,
                        help="also run the node with this many --workers (W)")
    parser.add_argument("--link-off", action="store_true",
                        help="with --workers: also run the workers without the local link")
    parser.add_argument("--uvloop", type=int, choices=(0, 1), default=1)
    parser.add_argument("--callgrind", action="store_true",
                        help="first bench/callgrind.py all (--small 200 --large 1700)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"runs": []}
    lines: list[str] = []
    if args.callgrind:
        cg = run_json(["bench/callgrind.py", "all", "--small", "200", "--large", "1700",
                       "--json"], 7200)
        figures["callgrind"] = cg
        lines += ["| instructions | per move (protocol 2) | per echo round trip | ratio |",
                  "|---|---|---|---|",
                  f"| callgrind | {cg['move_protocol_2']:,} | {cg['echo']:,} | "
                  f"{cg['move_protocol_2'] / cg['echo']:.1f}× |", ""]
    common = ["bench/load.py", "--games", str(args.games), "--clients", str(args.clients),
              "--idle", "0", "--json", "--quiet", "--duration", str(args.duration),
              "--warmup", str(args.warmup), "--think", str(args.think), "--think-max",
              str(args.think_max), "--uvloop", str(args.uvloop),
              "--timeout", str(args.duration * 4 + 900)]
    per: dict[str, list[float]] = {}
    echo: list[float] = []
    rows = ["| run | target | moves/s | move RT p50 / p99 | server CPU per move | busy | "
            "echo CPU per round trip | capacity at 75% |", "|---|---|---|---|---|---|---|---|"]
    for i, name in enumerate(order(args.rounds, args.workers, args.link_off), 1):
        extra = (["--target", "floor"] if name == "floor" else
                 ["--workers", name[4:].removesuffix("redis")] if name != "node" else [])
        env = dict(os.environ, TABLE42_LOCAL_LINK="0") if name.endswith("redis") else None
        print(f"run {i}: {name} ...", file=sys.stderr, flush=True)
        r = run_json([*common, *extra], args.duration * 4 + 1000, env)
        figures["runs"].append({"name": name, **r})
        load, cap = r["load"], r["capacity"]
        per.setdefault(name, []).append(load["server_cpu_per_move_us"])
        echo.append(r["echo"]["server_cpu_per_rt_us"])
        if not load["moves"]:
            raise RuntimeError(f"run {i} ({name}) made no move: {load['errors']}")
        rows.append(f"| {i} | {name} | {load['moves_per_second']:,.0f} | "
                    f"{load['move_rt_p50_ms']:.1f} / {load['move_rt_p99_ms']:.1f} ms | "
                    f"{load['server_cpu_per_move_us']:.0f} µs | "
                    f"{load['server_utilisation'] * 100:.1f}% | "
                    f"{r['echo']['server_cpu_per_rt_us']:.0f} µs | "
                    f"{cap['games_at_75pct_busy']:,} |")
    med = {name: statistics.median(values) for name, values in per.items()}
    echo_med = statistics.median(echo)
    figures["median_cpu_per_move_us"] = med
    figures["median_echo_cpu_per_rt_us"] = echo_med
    figures["node_over_floor"] = med["node"] / med["floor"]
    figures["node_over_echo"] = med["node"] / echo_med
    lines += [*rows, "", f"Medians: node {med['node']:.0f} µs, floor {med['floor']:.0f} µs, "
                     f"echo {echo_med:.0f} µs a move; node / floor "
                     f"**{figures['node_over_floor']:.2f}×**, node / echo "
                     f"**{figures['node_over_echo']:.2f}×**."]
    if args.workers > 1:
        w = f"node{args.workers}"
        figures["workers_over_one"] = med[w] / med["node"]
        lines.append(f"With --workers {args.workers}: {med[w]:.0f} µs a move over all "
                     f"workers ({figures['workers_over_one']:.2f}× one worker's).")
        if args.link_off:
            figures["workers_redis_over_one"] = med[f"{w}redis"] / med["node"]
            lines.append(f"Without the local link: {med[w + 'redis']:.0f} µs "
                         f"({figures['workers_redis_over_one']:.2f}× one worker's).")
    print("\n".join(lines))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every figure of the lean move path in one command: instructions per move and per echo round trip
(callgrind), and server CPU per move against the echo over real sockets at full speed and at
human pace, with the capacity of one node at human pace.

Run from the repository root (valgrind installed; about 15-30 minutes on a busy machine)::

    python3 bench/move_cost.py                   # everything, a Markdown summary at the end
    python3 bench/move_cost.py --skip-callgrind  # only the socket runs (bench/load.py)
    python3 bench/move_cost.py --json out.json   # also keep every figure

It runs, one after the other (never two at once: they would share the cores):

1. ``bench/callgrind.py all`` (moves on protocol 2 and 1, and the echo; ``--small``/``--large``
   measured moves, 200 and 700 by default);
2. ``bench/load.py`` at full speed: ``--games`` (100) games, bots without pause;
3. ``bench/load.py`` at human pace: the same games, each decision 2-5 s after the event
   (``--think 2 --think-max 5``), with the capacity extrapolated as ``bench/load.py`` states.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_json(args: list[str], timeout: float) -> dict[str, Any]:
    """Run a bench script with ``--json``; its last JSON document on stdout."""
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)
    sys.stderr.write(done.stderr[-3000:])
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}")
    text = done.stdout
    if args[0].endswith("callgrind.py"):  # one JSON line among its lines of text
        print(text, end="", flush=True)
        line = next(x for x in reversed(text.splitlines()) if x.startswith("{"))
        return dict(json.loads(line))
    return dict(json.loads(text[text.find("{"):]))


def load_row(name: str, r: dict[str, Any]) -> str:
    load, echo = r["load"], r["echo"]
    return (f"| {name} | {load['moves_per_second']:,.0f} | {load['move_rt_p50_ms']:.1f} / "
            f"{load['move_rt_p99_ms']:.1f} ms | {load['server_cpu_per_move_us']:.1f} µs "
            f"({load['server_utilisation'] * 100:.0f}% busy) | "
            f"{echo['server_cpu_per_rt_us']:.1f} µs | {r['ratio']:.2f}× |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=700)
    parser.add_argument("--duration", type=float, default=20.0,
                        help="full-speed window, seconds (human pace: 3x, after 15 s)")
    parser.add_argument("--skip-callgrind", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    lines: list[str] = []
    if not args.skip_callgrind:
        cg = run_json(["bench/callgrind.py", "all", "--small", str(args.small), "--large",
                       str(args.large), "--json"], 7200)
        figures["callgrind"] = cg
        lines += ["| instructions | per move (protocol 2) | per move (protocol 1) | "
                  "per echo round trip | ratio (2 / 1) |", "|---|---|---|---|---|",
                  f"| callgrind | {cg['move_protocol_2']:,} | {cg['move_protocol_1']:,} | "
                  f"{cg['echo']:,} | {cg['move_protocol_2'] / cg['echo']:.1f}× / "
                  f"{cg['move_protocol_1'] / cg['echo']:.1f}× |", ""]
    if not args.skip_load:
        common = ["bench/load.py", "--games", str(args.games), "--clients", "3", "--idle", "0",
                  "--json", "--quiet"]
        fast = run_json([*common, "--duration", str(args.duration)], 1800)
        human = run_json([*common, "--duration", str(3 * args.duration), "--warmup", "15",
                          "--think", "2", "--think-max", "5"], 1800)
        figures["full_speed"], figures["human_pace"] = fast, human
        cap = human["capacity"]
        lines += ["| run | moves/s | move RT p50 / p99 | server CPU per move | "
                  "echo CPU per round trip | ratio |", "|---|---|---|---|---|---|",
                  load_row(f"{args.games} games, full speed", fast),
                  load_row(f"{args.games} games, 2-5 s a decision", human), "",
                  f"Capacity at human pace: {cap['games_at_75pct_busy']:,} games at 75% of a "
                  f"core ({cap['core_share_per_game'] * 1e6:.0f} µs of server CPU per game "
                  f"per second, measured at {cap['measured_games']} games, "
                  f"{cap['measured_busy'] * 100:.1f}% busy; p99 < 50 ms at the measured load: "
                  f"{'yes' if cap['p99_ok'] else 'no'})."]
    print("\n".join(lines))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

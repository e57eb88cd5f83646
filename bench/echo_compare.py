"""The aiohttp echo (``bench/echo_server.py``) against the picows echo
(``bench/echo_picows.py``) at the bots' pace over the same sockets, in alternating runs: the
WebSocket library's own CPU per round trip, the part of a node's move a switch could change.

    python3 bench/echo_compare.py                   # 2,000 sockets, 1,000 active, A B B A
    python3 bench/echo_compare.py --json out.json   # also keep every figure

Both servers run on the same event loop (``--uvloop``, default uvloop) for the whole command;
each run opens ``--sockets`` sockets to one of them from ``--clients`` client processes (the
clients of ``bench/load.py``), ``--active`` of them each making round trips of a play-shaped
msgpack frame with a pause uniform in ``--think``..``--think-max`` before each (one in flight
per socket), ``--warmup`` seconds, then ``--duration`` measured seconds: the server process's
utime + stime over the window divided by the round trips completed in it. The sockets are
closed between runs. Reported: each run, each server's median, picows / aiohttp.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import (  # noqa: E402
    Pool,
    collect,
    measure_window,
    ms,
    percentile,
    split,
)

SERVERS = {"aiohttp": "echo_server.py", "picows": "echo_picows.py"}


def start(name: str, uvloop: int) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / SERVERS[name]), "--port", "0",
                             "--uvloop", str(uvloop)], cwd=ROOT, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    ready = proc.stdout.readline().decode().split()
    if len(ready) != 2 or ready[0] != "ready":
        raise RuntimeError(f"the {name} echo did not start")
    return proc, f"ws://127.0.0.1:{ready[1]}/ws"


def one_run(pool: Pool, proc: subprocess.Popen[bytes], url: str,
            args: argparse.Namespace) -> dict[str, Any]:
    clients = len(pool.conns)
    pool.call("echo_connect", [{"url": url, "count": n} for n in split(args.sockets, clients)],
              timeout=300)
    begin = time.monotonic() + 0.5
    times = {"start": begin, "measure_from": begin + args.warmup,
             "measure_to": begin + args.warmup + args.duration}
    times["end"] = times["measure_to"] + 0.2
    for conn, n in zip(pool.conns, split(args.active, clients), strict=True):
        conn.send({"op": "echo_run", "args": dict(times, active=n, fmt="msgpack",
                                                  think=args.think, think_max=args.think_max)})
    spent = measure_window({"server": [proc.pid], "clients": pool.pids},
                           times["measure_from"], times["measure_to"])
    rts = [rt for r in collect(pool, "echo_run", args.think_max + 120)
           for rt in r["round_trips"]]
    return {"round_trips": len(rts), "per_second": len(rts) / spent["wall"],
            "rt_p50_ms": ms(percentile(rts, 0.5)), "rt_p99_ms": ms(percentile(rts, 0.99)),
            "server_cpu_per_rt_us": 1e6 * spent["server"] / max(1, len(rts)),
            "server_system_share": spent["server_system"] / max(1e-9, spent["server"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=2000)
    parser.add_argument("--active", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each server")
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--think-max", type=float, default=5.0)
    parser.add_argument("--uvloop", type=int, choices=(0, 1), default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    servers = {name: start(name, args.uvloop) for name in SERVERS}
    pool = Pool(args.clients, 1)
    runs: list[dict[str, Any]] = []
    try:
        for i in range(args.rounds):
            pair = ["aiohttp", "picows"] if i % 2 == 0 else ["picows", "aiohttp"]
            for name in pair:
                print(f"run {len(runs) + 1}: {name} ...", file=sys.stderr, flush=True)
                runs.append({"server": name, **one_run(pool, *servers[name], args)})
    finally:
        pool.close()
        for proc, _url in servers.values():
            proc.terminate()
            proc.wait(10)
    med = {name: statistics.median(r["server_cpu_per_rt_us"] for r in runs
                                   if r["server"] == name) for name in SERVERS}
    print("| run | server | round trips/s | RT p50 / p99 | server CPU per round trip |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(runs, 1):
        print(f"| {i} | {r['server']} | {r['per_second']:,.0f} | {r['rt_p50_ms']:.2f} / "
              f"{r['rt_p99_ms']:.2f} ms | {r['server_cpu_per_rt_us']:.0f} µs "
              f"({r['server_system_share'] * 100:.0f}% kernel) |")
    ratio = med["picows"] / med["aiohttp"]
    print(f"\nMedians: aiohttp {med['aiohttp']:.0f} µs, picows {med['picows']:.0f} µs a round "
          f"trip: picows / aiohttp **{ratio:.2f}×**.")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": runs, "median_us": med, "ratio": ratio},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

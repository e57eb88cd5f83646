"""Calibration and replay over long synthetic logs: time, CPU and peak memory per log size.

Run from the repository root, after ``python3 -m pip install -e .``:

    python3 bench/calibration.py                      # logs of 100k, 300k and 1M games
    python3 bench/calibration.py --sizes 1000000 --dir /tmp/t42-bench
    python3 bench/calibration.py --reuse      # keep the log drawn by the last run

It draws one synthetic log of the largest size once (``synth``: 1,000 players, 5% of them
heavy-week players, 1% late settlements, a podium award every 5,000 games), takes its first N
lines for the smaller sizes (a prefix of a log is a log), then runs the commands an operator
runs, each as its own process, exactly as typed:

    python -m rating_plugin calibrate LOG --no-progress
    python -m rating_plugin replay LOG --check --no-progress          (current rules + check)
    python -m rating_plugin replay LOG --version 1.0.5 --no-progress  (a what-if preset)

For each it reports the wall time, the process's CPU time (user + system: what the command
costs when the machine is not shared) and its peak resident memory (``ru_maxrss`` from
``wait4``). Peak memory that stays flat from 100k to 1M games shows that both commands stream
the log. Targets: calibrate 1M games under 10 s, replay 1M settlements under 60 s.

``--export N --redis-url URL`` also settles the log's first N games into a real store (under
a fresh prefix, 200 settlements in flight), times ``export`` of N/4 and N of them the same
way, checks the export with ``replay --check`` and deletes the prefix.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"calibrate": 10.0, "replay --check": 60.0, "replay --version 1.0.5": 60.0}
ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str]) -> tuple[float, float, float]:
    """Run one command; returns (wall seconds, CPU seconds, peak RSS in MB)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}): {errors}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


async def settle_log(url: str, prefix: str, path: Path, start: int, stop: int) -> float:
    """Settle games ``start`` to ``stop`` (0-based, podium awards left out) of the log at
    ``path`` into a store; returns the seconds it took."""
    import redis.asyncio as aioredis

    from rating_plugin.analysis import gamelog
    from rating_plugin.store import RatingStore

    client = aioredis.Redis.from_url(url)
    store = RatingStore(client, prefix=prefix)
    started = time.perf_counter()
    pending: list[asyncio.Future[object]] = []
    index = 0
    try:
        with path.open() as handle:
            for record in gamelog.read_jsonl(handle, str(path)):
                if index >= stop:
                    break
                if isinstance(record, gamelog.PodiumRecord):
                    continue  # awards would race their games in flight: games only
                index += 1
                if index <= start:
                    continue
                pending.append(asyncio.ensure_future(store.settle(
                    record.game_id, ladder=record.ladder, winner=record.winner,
                    loser=record.loser, cube=record.cube, match_length=record.match_length,
                    finished_at=record.finished_at, reason=record.reason)))
                if len(pending) >= 200:
                    await asyncio.gather(*pending)
                    pending.clear()
            await asyncio.gather(*pending)
    finally:
        await client.aclose()
    return time.perf_counter() - started


async def delete_prefix(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        batch: list[bytes] = []
        async for key in client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                await client.unlink(*batch)
                batch.clear()
        if batch:
            await client.unlink(*batch)
    finally:
        await client.aclose()


def bench_export(python: list[str], url: str, log: Path, folder: Path, count: int) -> None:
    prefix = f"bench-export-{os.getpid()}:"
    print()
    print("| step | settlements | wall | CPU | peak memory |")
    print("|---|---|---|---|---|")
    try:
        done = 0
        for size in (count // 4, count):
            seconds = asyncio.run(settle_log(url, prefix, log, done, size))
            print(f"| settle (200 in flight) | {done:,} to {size:,} | {seconds:.1f} s | | |",
                  flush=True)
            done = size
            out = folder / f"export-{size}.jsonl"
            wall, cpu, rss = run([*python, "export", "--redis-url", url, "--prefix", prefix,
                                  "--out", str(out)])
            print(f"| `export` | {size:,} | {wall:.1f} s | {cpu:.1f} s | {rss:.0f} MB |",
                  flush=True)
        wall, cpu, rss = run([*python, "replay", str(out), "--check", "--no-progress"])
        print(f"| `replay --check` of the export | {count:,} | {wall:.1f} s | {cpu:.1f} s | "
              f"{rss:.0f} MB |")
    finally:
        asyncio.run(delete_prefix(url, prefix))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,300000,1000000",
                        help="log sizes in games, comma-separated (default 100k, 300k, 1M)")
    parser.add_argument("--dir", default="/tmp/t42-calibration-bench",
                        help="where the logs go (about 330 bytes per game)")
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--export", type=int, default=0, metavar="N",
                        help="also settle N games into Redis and time export (default 0)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0",
                        help="the Redis for --export (a fresh key prefix, deleted after)")
    parser.add_argument("--skip-files", action="store_true",
                        help="skip the calibrate/replay runs (with --export: export only)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse a log drawn by an earlier run (same size and players)")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    if not sizes or sizes[0] < 1 or sizes[-1] > 10_000_000:
        raise SystemExit("--sizes: 1 to 10,000,000 games each")
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    python = [sys.executable, "-m", "rating_plugin"]
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")

    biggest = folder / f"games-{sizes[-1]}-{args.players}.jsonl"
    if args.reuse and biggest.exists():
        print(f"reusing {biggest} ({biggest.stat().st_size / 1e6:.0f} MB)")
    else:
        wall, cpu, rss = run([*python, "synth", "--games", str(sizes[-1]), "--players",
                              str(args.players), "--late-share", "0.01", "--podium-every",
                              "5000", "--out", str(biggest), "--no-progress"])
        print(f"synth {sizes[-1]:,} games: {wall:.1f} s wall, {cpu:.1f} s CPU, {rss:.0f} MB "
              f"peak, {biggest.stat().st_size / 1e6:.0f} MB on disk")
    logs = {sizes[-1]: biggest}
    for size in sizes[:-1]:
        path = folder / f"games-{size}.jsonl"
        with biggest.open() as source, path.open("w") as out:
            for i, line in enumerate(source):
                if i >= size:
                    break
                out.write(line)
        logs[size] = path

    commands = {
        "calibrate": ["calibrate"],
        "replay --check": ["replay", "--check"],
        "replay --version 1.0.5": ["replay", "--version", "1.0.5"],
    }
    if args.skip_files:
        if args.export:
            bench_export(python, args.redis_url, biggest, folder, args.export)
        return
    print()
    print("| command | games | wall | CPU | µs CPU per game | peak memory | target |")
    print("|---|---|---|---|---|---|---|")
    for name, extra in commands.items():
        for size in sizes:
            wall, cpu, rss = run([*python, extra[0], str(logs[size]), *extra[1:],
                                  "--no-progress"])
            target = f"< {TARGETS[name]:.0f} s" if size == 1_000_000 else ""
            print(f"| `{name}` | {size:,} | {wall:.1f} s | {cpu:.1f} s | "
                  f"{cpu / size * 1e6:.1f} | {rss:.0f} MB | {target} |", flush=True)
    if args.export:
        if not 4 <= args.export <= sizes[-1]:
            raise SystemExit(f"--export: 4 to {sizes[-1]:,} games")
        bench_export(python, args.redis_url, biggest, folder, args.export)


if __name__ == "__main__":
    main()

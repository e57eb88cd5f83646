"""Instructions per move and per echo round trip, counted by valgrind's callgrind: figures that
repeat on a shared machine, where CPU times move by ±20% from run to run.

Run from the repository root (valgrind installed; each run takes a few minutes)::

    python3 bench/callgrind.py moves                  # bench/move_path.py, seeded dice
    python3 bench/callgrind.py moves --protocol 1     # the full-state event form
    python3 bench/callgrind.py echo                   # bench/echo_server.py, play-sized frames
    python3 bench/callgrind.py all                    # the three above, one table at the end
    python3 bench/callgrind.py moves --keep /tmp/cg   # keep the profiles (callgrind_annotate)

Method: the program runs twice under ``valgrind --tool=callgrind`` with a small and a large
amount of work (``moves``: 300 and 1,300 measured moves after 300 warm-up moves (``--small``,
``--large``),
100 games, dice from a fixed seed; ``echo``: 2,000 and 12,000 round trips of a ``play``-shaped
msgpack frame over 100 sockets, the client outside valgrind); the difference of the two
total instruction counts (``I refs``) divided by the difference of the work is the cost of
one unit, start-up and shut-down cancelling out. ``moves`` counts the whole process: the
server's code (``Session.receive`` and ``Lobby.on_message``, the write-behind flush, the
event loop) and the driver's own work per move (decoding what the server wrote, choosing
the next command); there are no sockets, aiohttp or kernel in it. ``echo`` counts the echo
server's user-space instructions per round trip (aiohttp's frame reader and writer, the
event loop); the kernel's share is not counted by valgrind.

Under valgrind the program runs 50-100 times slower: ``move_path.py`` gets an hour between
its Redis health checks (a ping outlasting its timeout would mark Redis down and the node
would refuse every move), gives up after ``--stall`` seconds without a move, and each run is
killed after ``--timeout`` seconds rather than left hanging.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
MOVES = re.compile(r"\(([\d,]+) moves")


def valgrind(args: list[str], out: Path, *,
             env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def refs(stderr: str) -> int:
    found = REFS.search(stderr)
    if found is None:
        raise RuntimeError("no instruction count in valgrind's output:\n" + stderr[-2000:])
    return int(found.group(1).replace(",", ""))


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """Wait for ``proc``; kill it (and say so) when it takes longer than ``timeout``."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise RuntimeError(f"killed after {timeout:g} s:\n{out[-1500:]}\n{err[-1500:]}") from None


def moves_run(measured: int, protocol: int, work: Path, timeout: float) -> tuple[int, int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = valgrind(["bench/move_path.py", "--games", "100", "--warmup", "300", "--moves",
                     str(measured), "--seeded", "--seed", "7", "--protocol", str(protocol),
                     "--redis-check", "3600", "--stall", str(timeout / 3)],
                    work / f"moves-{measured}.out", env=env)
    out, err = finish(proc, timeout)
    found = MOVES.search(out)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(out[-2000:] + err[-2000:])
    return refs(err), int(found.group(1).replace(",", "")) + 300


async def _round_trips(url: str, total: int, sockets: int) -> None:
    import msgpack
    from websockets.asyncio.client import connect

    frame = msgpack.packb({"type": "play", "table": "kB9rMFnnuYBV", "id": 17,
                           "play": [[24, 18], [13, 8]]})
    per = total // sockets

    async def one() -> None:
        async with connect(url, max_size=None, compression=None, ping_interval=None,
                           open_timeout=60) as ws:
            for _ in range(per):
                await ws.send(frame)
                await ws.recv()

    await asyncio.gather(*(one() for _ in range(sockets)))


def echo_run(total: int, work: Path, timeout: float) -> int:
    proc = valgrind(["bench/echo_server.py", "--port", "0"], work / f"echo-{total}.out")
    assert proc.stdout is not None
    ready = proc.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        proc.kill()
        raise RuntimeError("the echo server did not start under valgrind")
    try:
        asyncio.run(asyncio.wait_for(
            _round_trips(f"ws://127.0.0.1:{ready[1]}/ws", total, 100), timeout))
    finally:
        proc.terminate()
    _, err = finish(proc, 300)
    return refs(err)


def measure_moves(protocol: int, work: Path, small: int, large: int,
                  timeout: float) -> tuple[float, str]:
    (a, n_a), (b, n_b) = (moves_run(small, protocol, work, timeout),
                          moves_run(large, protocol, work, timeout))
    per = (b - a) / (n_b - n_a)
    return per, (f"{per:,.0f} instructions per move (protocol {protocol}; "
                 f"{a:,} -> {b:,} I refs over {n_b - n_a:,} more moves)")


def measure_echo(work: Path, timeout: float) -> tuple[float, str]:
    a, b = echo_run(2000, work, timeout), echo_run(12000, work, timeout)
    per = (b - a) / 10000
    return per, (f"{per:,.0f} instructions per echo round trip "
                 f"({a:,} -> {b:,} I refs over 10,000 more round trips)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("moves", "echo", "all"))
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=2,
                        help="moves: the table-event form of the players (default 2)")
    parser.add_argument("--small", type=int, default=300, help="moves: the small run (300)")
    parser.add_argument("--large", type=int, default=1300, help="moves: the large run (1,300)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds before one valgrind run is killed (1,800)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the callgrind profiles in this directory")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="table42-callgrind-") as tmp:
        work = Path(tmp)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            work = args.keep
        if args.what in ("moves", "all"):
            protocols = [args.protocol] if args.what == "moves" else [2, 1]
            for protocol in protocols:
                per, line = measure_moves(protocol, work, args.small, args.large, args.timeout)
                figures[f"move_protocol_{protocol}"] = per
                print(line, flush=True)
        if args.what in ("echo", "all"):
            per, line = measure_echo(work, args.timeout)
            figures["echo"] = per
            print(line, flush=True)
    if "echo" in figures:
        for name, per in figures.items():
            if name != "echo":
                print(f"{name}: {per / figures['echo']:.1f}x the echo round trip")
    if args.json:
        print(json.dumps({k: round(v) for k, v in figures.items()}))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

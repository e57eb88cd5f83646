"""Instructions per move and per echo round trip, counted by valgrind's callgrind: figures that
repeat on a shared machine, where CPU times move by ±20% from run to run.

Run from the repository root (valgrind installed; each run takes a few minutes)::

    python3 bench/callgrind.py moves                  # bench/move_path.py, seeded dice
    python3 bench/callgrind.py moves --protocol 1     # the full-state event form
    python3 bench/callgrind.py echo                   # bench/echo_server.py, play-sized frames

Method: the program runs twice under ``valgrind --tool=callgrind`` with a small and a large
amount of work (``moves``: ``--moves`` 300 and 1,300 measured moves after 300 warm-up moves,
100 games, dice from a fixed seed; ``echo``: 2,000 and 12,000 round trips of a ``play``-shaped
msgpack frame over 100 sockets, the client outside valgrind); the difference of the two
total instruction counts (``I refs``) divided by the difference of the work is the cost of
one unit, start-up and shut-down cancelling out. ``moves`` counts the whole process: the
server's code (``Session.receive`` and ``Lobby.on_message``, the write-behind flush, the
event loop) and the driver's own work per move (decoding what the server wrote, choosing
the next command); there are no sockets, aiohttp or kernel in it. ``echo`` counts the echo
server's user-space instructions per round trip (aiohttp's frame reader and writer, the
event loop); the kernel's share is not counted by valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
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


def valgrind(args: list[str], out: Path, *, env: dict[str, str] | None = None,
             timeout: float = 1800) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def refs(stderr: str) -> int:
    found = REFS.search(stderr)
    if found is None:
        raise RuntimeError("no instruction count in valgrind's output:\n" + stderr[-2000:])
    return int(found.group(1).replace(",", ""))


def moves_run(measured: int, protocol: int, work: Path) -> tuple[int, int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = valgrind(["bench/move_path.py", "--games", "100", "--warmup", "300", "--moves",
                     str(measured), "--seeded", "--seed", "7", "--protocol", str(protocol)],
                    work / f"moves-{measured}.out", env=env)
    out, err = proc.communicate(timeout=1800)
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


def echo_run(total: int, work: Path) -> int:
    proc = valgrind(["bench/echo_server.py", "--port", "0"], work / f"echo-{total}.out")
    assert proc.stdout is not None
    ready = proc.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        proc.kill()
        raise RuntimeError("the echo server did not start under valgrind")
    try:
        asyncio.run(_round_trips(f"ws://127.0.0.1:{ready[1]}/ws", total, 100))
    finally:
        proc.terminate()
    _, err = proc.communicate(timeout=300)
    return refs(err)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("moves", "echo"))
    parser.add_argument("--protocol", type=int, choices=(1, 2), default=2,
                        help="moves: the table-event form of the players (default 2)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="table42-callgrind-") as tmp:
        work = Path(tmp)
        if args.what == "moves":
            (small, n_small), (large, n_large) = (moves_run(300, args.protocol, work),
                                                  moves_run(1300, args.protocol, work))
            per = (large - small) / (n_large - n_small)
            print(f"{per:,.0f} instructions per move (protocol {args.protocol}; "
                  f"{large - small:,} over {n_large - n_small:,} moves)")
        else:
            small, large = echo_run(2000, work), echo_run(12000, work)
            per = (large - small) / 10000
            print(f"{per:,.0f} instructions per echo round trip "
                  f"({large - small:,} over 10,000 round trips)")
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The write-behind's own Python per buffered event, counted by callgrind: ``append_event`` and
``mark_dirty`` for ``--tables`` tables, then one ``_queue_buffered`` (the batch of the flush
built, nothing sent), then the stored callbacks, ``--flushes`` times. No Redis round trip,
no event loop work: only the code that builds a flush, which the move harness
(``bench/move_path.py``) cannot separate from the rest of a move.

Run from the repository root (valgrind installed; about a minute each)::

    python3 bench/flush_cost.py                  # counts both sizes, prints the difference
    python3 bench/flush_cost.py --workload 10    # just the workload (what valgrind runs)

Method: the workload runs under ``valgrind --tool=callgrind`` with 10 and 110 flushes of 7
tables; the difference of the two instruction totals over the 700 more buffered events is the
cost of one event from its buffering to its stored callback. It also runs on the layout
before ownership and fencing (``server.persistence``, no epochs or callbacks) to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def workload(flushes: int, tables: int) -> None:
    sys.path.insert(0, str(ROOT))
    import redis.asyncio as aioredis

    from server.config import Settings

    # Decided by the files of this tree, not by trying the import: an editable install of
    # another checkout can answer an import this tree does not have.
    fenced = (ROOT / "server" / "store" / "persistence.py").exists()
    layout = "server.store." if fenced else "server."  # else the layout before fencing
    store: Any = importlib.import_module(layout + "persistence")
    keys_module: Any = importlib.import_module(layout + "keys")
    assert Path(store.__file__).resolve().is_relative_to(ROOT), store.__file__
    persistence = store.Persistence(aioredis.Redis.from_url("redis://127.0.0.1:1"),
                                    keys_module.Keys("bench-flush:"), Settings())
    names = [f"tbl{i:09d}" for i in range(tables)]
    if fenced:
        for name in names:
            persistence.adopt(name, 3)
    packed = b"\x85\xa4type\xa5moved\xa1v\xcd\x01\x00" + b"x" * 60
    told: list[int] = []

    def snapshot() -> dict[str, Any]:
        return {"status": "playing"}

    for version in range(1, flushes + 1):
        for name in names:
            if fenced:
                persistence.append_event(name, version, packed, told.append)
            else:
                persistence.append_event(name, packed)
            persistence.mark_dirty(name, snapshot)
        if hasattr(persistence, "buffer"):  # the write buffer in an object of its own
            from server.store.batch import Batch
            taken = persistence.buffer.queue(Batch(), asyncio.get_running_loop().time(),
                                             everything=False)
            order, versions = taken.order, taken.versions
        else:
            built = persistence._queue_buffered(store._Batch(), everything=False)
            order, versions = built[0], built[3]
        if fenced:
            for name in order:
                if name in versions:
                    persistence._tell_stored(name, versions[name])


def count(flushes: int, tables: int, work: Path) -> int:
    out = work / f"flush-{flushes}.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
         str(Path(__file__).resolve()), "--workload", str(flushes), "--tables", str(tables)],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        check=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(done.stderr[-2000:])
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=int, default=None, metavar="FLUSHES",
                        help="run the workload only (under valgrind)")
    parser.add_argument("--tables", type=int, default=7)
    args = parser.parse_args(argv)
    if args.workload is not None:
        asyncio.run(workload(args.workload, args.tables))
        return 0
    with tempfile.TemporaryDirectory(prefix="table42-flush-") as tmp:
        small, large = count(10, args.tables, Path(tmp)), count(110, args.tables, Path(tmp))
    events = 100 * args.tables
    print(f"{(large - small) / events:,.0f} instructions per buffered event "
          f"({small:,} -> {large:,} I refs over {events:,} more events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

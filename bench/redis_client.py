"""The Redis client's own CPU per call, to compare redis-py versions (run this script with
each version's interpreter: ``/tmp/rv6/bin/python bench/redis_client.py``, the repository on
``PYTHONPATH``).

Three shapes, each ``--calls`` calls, best of ``--repeat`` runs (the process's CPU time over
the calls; a run alternates the shapes so drifts of a shared machine hit all of them):

- ``evalsha``: ``await script(keys=..., args=...)`` of the node's fenced append
  (``fenced_append.lua``, one event per call), redis-py's ``Script`` over its pool;
- ``pipeline``: ``--batch`` such calls in one ``pipeline(transaction=False)``, per call;
- ``batch``: the node's write-behind path (``server.store.batch.Batch``: RESP packed by
  hand, ``send_packed_command`` and ``read_response`` on a kept connection), ``--batch``
  fenced appends per execute, per call.

Keys under a fresh prefix of the given Redis (default: an embedded one), deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redis.asyncio as aioredis  # noqa: E402

from server.store.batch import Batch  # noqa: E402
from server.store.scripts import load_script  # noqa: E402


async def bench(url: str, calls: int, repeat: int, batch_size: int,
                only: list[str] | None = None) -> dict[str, Any]:
    client = aioredis.Redis.from_url(url)
    prefix = f"rcbench{secrets.token_hex(4)}:"
    tag = f"{prefix}{{t:x}}"
    lease, log_key, snap = f"{tag}:lease", f"{tag}:events", f"{tag}:snap"
    await client.hset(lease, mapping={"epoch": "1"})
    script = client.register_script(load_script("fenced_append.lua"))
    await script(keys=[lease, log_key, snap], args=["1", 60_000, 50, "", "", b"x" * 60])
    event = b"\x85" + b"x" * 80  # a change-only event's size
    keep: list[Any] = []
    fixed = (b"EVALSHA", script.sha.encode() if isinstance(script.sha, str) else script.sha,
             b"3", lease.encode(), log_key.encode(), snap.encode(), b"1", b"60000", b"50")
    head = b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in fixed)

    async def evalsha() -> int:
        for _ in range(calls):
            await script(keys=[lease, log_key, snap], args=["1", 60_000, 50, "", "", event])
        return calls

    async def pipeline() -> int:
        for _ in range(calls // batch_size):
            async with client.pipeline(transaction=False) as pipe:
                for _ in range(batch_size):
                    await script(keys=[lease, log_key, snap],
                                 args=["1", 60_000, 50, "", "", event], client=pipe)
                await pipe.execute()
        return calls // batch_size * batch_size

    async def hand() -> int:
        for _ in range(calls // batch_size):
            b = Batch(keep)
            for _ in range(batch_size):
                b.add_headed(fixed, head, b"", b"", event)
            await b.execute(client)
        return calls // batch_size * batch_size

    shapes: dict[str, Callable[[], Awaitable[int]]] = {
        "evalsha": evalsha, "pipeline": pipeline, "batch": hand}
    if only:
        shapes = {name: shapes[name] for name in only}
    best: dict[str, float] = {}
    for _ in range(repeat):
        for name, shape in shapes.items():
            cpu = time.process_time()
            done = await shape()
            per = (time.process_time() - cpu) / done * 1e6
            best[name] = min(best.get(name, per), per)
    keys = [k async for k in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.unlink(*keys)
    if keep:
        await client.connection_pool.release(keep[0])
    await client.aclose()
    return {"redis_py": redis.__version__, "calls": calls, "batch": batch_size,
            "client_cpu_per_call_us": best}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=None, help="default: an embedded redis-server")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shapes", default="evalsha,pipeline,batch",
                        help="which shapes, comma-separated (one at a time under callgrind)")
    args = parser.parse_args(argv)
    embedded = None
    url = args.redis_url
    if url is None:
        from server.embedded_redis import EmbeddedRedis

        embedded = EmbeddedRedis().start()
        url = embedded.url
    try:
        result = asyncio.run(bench(url, args.calls, args.repeat, args.batch,
                                   args.shapes.split(",")))
    finally:
        if embedded is not None:
            embedded.stop()
    try:
        import hiredis

        result["hiredis"] = hiredis.__version__
    except ImportError:
        result["hiredis"] = None
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

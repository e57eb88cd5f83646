"""Running ``python -m server.admin`` against a test's Redis, as an operator would."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def run_admin(redis_url: str, key_prefix: str, *args: str) -> tuple[int, str, str]:
    """``python -m server.admin ARGS`` on that Redis and prefix: exit code, stdout, stderr."""
    env = {**os.environ, "REDIS_URL": redis_url, "TABLE42_KEY_PREFIX": key_prefix,
           "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server.admin", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()

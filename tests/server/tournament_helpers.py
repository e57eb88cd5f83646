"""Helpers for the tournament tests: runner keys made by the real command, HTTP calls."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import aiohttp
from server_helpers import RunningServer


async def runner_key_command(redis_url: str, key_prefix: str, *args: str) -> tuple[int, str]:
    """Run ``python -m server runner-key ...``; returns (exit code, stdout)."""
    env = {**os.environ, "REDIS_URL": redis_url, "TABLE42_KEY_PREFIX": key_prefix}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "runner-key", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, _err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def new_runner_key(redis_url: str, key_prefix: str, name: str) -> str:
    code, out = await runner_key_command(redis_url, key_prefix, "create", name)
    assert code == 0, out
    key = out.strip()
    assert key.startswith("t42rk_")
    return key


async def call(
    server: RunningServer, method: str, path: str, *, key: str | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession() as http, http.request(
        method, server.http + path, json=body, headers=headers
    ) as resp:
        return resp.status, await resp.json()


async def new_tournament(server: RunningServer, key: str, players: list[str],
                         **fields: Any) -> str:
    status, body = await call(server, "POST", "/api/tournaments", key=key,
                              body={"name": "Friday cup", **fields})
    assert status == 201, body
    tid = str(body["tournament"]["id"])
    for player in players:
        status, body = await call(server, "POST", f"/api/tournaments/{tid}/players", key=key,
                                  body={"player": player})
        assert status == 201, body
    return tid

"""The server the docs speak of: ``python3 -m server`` as README.md starts it (embedded Redis
in its default data folder), in a home folder of its own and on a free port."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from doc_blocks import ROOT
from doc_commands import answers, free_port

from rating_plugin import RatingStore
from server.config import Settings
from server.embedded_redis import socket_path
from server.store.keys import Keys
from server.store.reports import ChatReports

PASSWORD = "a long passphrase"
"""The password of the accounts the docs name (docs/http-api.md logs in with it)."""


@dataclass(frozen=True)
class DocServer:
    port: int
    store: str  # the URL of its embedded Redis
    env: dict[str, str]  # what a block of the docs runs with


def _clean_env(home: Path) -> dict[str, str]:
    """This process's environment without anything that names a store, a port or a data
    folder, with ``home`` as the home folder."""
    env = {k: v for k, v in os.environ.items()
           if k != "REDIS_URL" and not k.startswith(("TABLE42_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), TABLE42_LOG_LEVEL="WARNING")
    return env


def _register(port: int, name: str) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/register", method="POST",
        data=json.dumps({"name": name, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status in (200, 201), answer.read()


async def _as_after_play(url: str) -> None:
    """A store as after a few games on the server: a settled rated game of alice and bob
    (what the export and calibration commands read) and two open chat reports (numbers 1
    and 2, which the operator's commands of docs/operations.md resolve)."""
    client = aioredis.Redis.from_url(url)
    try:
        await RatingStore(client, prefix="t42:").settle(
            "docs-g1", ladder="table42", winner="alice", loser="bob", cube=1,
            finished_at=time.time(), reason="normal")
        reports = ChatReports(client, Keys("t42:"), Settings())
        for n in (1, 2):
            await reports.add({"at": time.time(), "table": "docs-t1", "msg": str(n),
                               "channel": "players", "from": "bob", "name": "bob",
                               "text": "a rude line", "sent_at": time.time(),
                               "reporter": "alice", "reason": "rude"})
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
def doc_server() -> Iterator[DocServer]:
    home = Path(tempfile.mkdtemp(prefix="t42home-"))
    port = free_port()
    env = _clean_env(home)
    log = (home / "server.log").open("wb")
    # Trusting loopback as a proxy, as docs/operations.md starts it to try rated play on one
    # machine (its example gives each player an address); no other block sends the header.
    proc = subprocess.Popen([sys.executable, "-m", "server", "--trusted-proxies", "127.0.0.1"],
                            cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**env, "TABLE42_PORT": str(port)})
    try:
        assert answers(proc, port), (home / "server.log").read_text()
        store = f"unix://{socket_path(home / '.local/share/table42')}?db=0"
        for name in ("alice", "bob"):
            _register(port, name)
        asyncio.run(_as_after_play(store))
        yield DocServer(port, store, env)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


"""The server the docs speak of: ``python3 -m server`` as README.md starts it (embedded Redis
in its default data folder), in a home folder of its own and on a free port."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from doc_blocks import ROOT
from doc_commands import answers, free_port

from rating_plugin import RatingStore
from server.embedded_redis import socket_path


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


async def _settle_a_game(url: str) -> None:
    """A store with a settled rated game, as after one played on the server: what the
    export and calibration commands of the docs read."""
    client = aioredis.Redis.from_url(url)
    try:
        await RatingStore(client, prefix="t42:").settle(
            "docs-g1", ladder="table42", winner="alice", loser="bob", cube=1,
            finished_at=time.time(), reason="normal")
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
def doc_server() -> Iterator[DocServer]:
    home = Path(tempfile.mkdtemp(prefix="t42home-"))
    port = free_port()
    env = _clean_env(home)
    log = (home / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "server"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**env, "TABLE42_PORT": str(port)})
    try:
        assert answers(proc, port), (home / "server.log").read_text()
        store = f"unix://{socket_path(home / '.local/share/table42')}?db=0"
        asyncio.run(_settle_a_game(store))
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


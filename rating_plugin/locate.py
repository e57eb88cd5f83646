"""Where the store a command reads lives, when no ``--redis-url`` is given.

``python -m server`` without ``REDIS_URL`` runs an embedded Redis that keeps its data in a
folder (``--data-dir``, else ``$TABLE42_DATA_DIR``, else ``$XDG_DATA_HOME/table42``, else
``~/.local/share/table42``) and serves it on the unix socket ``redis.sock`` in that folder
while the server runs. The plugin does not import the server: it follows the same folder
convention (docs/operations.md, "The embedded store") and talks to that socket.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "redis://127.0.0.1:6379/0"
#: The key prefix ``python -m server`` writes under by default.
SERVER_PREFIX = "t42:"
SOCKET_NAME = "redis.sock"


class StoreNotRunning(Exception):
    """The data folder holds a kept store, but no server is serving it."""


@dataclass(frozen=True, slots=True)
class Located:
    url: str
    #: True when the URL is the embedded store of a data folder (its keys use the server's
    #: default prefix).
    is_embedded: bool


def data_dir(given: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """The embedded store's folder: ``given``, else the server's default."""
    env = os.environ if environ is None else environ
    if given:
        return Path(given).expanduser()
    if env.get("TABLE42_DATA_DIR"):
        return Path(env["TABLE42_DATA_DIR"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "table42"


def locate(redis_url: str | None, folder: str | None,
           environ: Mapping[str, str] | None = None) -> Located:
    """``redis_url`` when given; else the running embedded store of the data folder; else
    :data:`DEFAULT_URL` when that folder holds no store at all.

    Raises :class:`StoreNotRunning` when the folder holds a kept store that no running
    server serves (reading another Redis instead would silently export the wrong data).
    """
    if redis_url:
        return Located(redis_url, is_embedded=False)
    where = data_dir(folder, environ)
    sock = where.resolve() / SOCKET_NAME
    if sock.exists():
        return Located(f"unix://{sock}?db=0", is_embedded=True)
    if folder or any(where.glob("appendonly*")) or (where / "dump.rdb").exists():
        raise StoreNotRunning(
            f"the embedded store in {where} is not running (no {SOCKET_NAME}): start "
            "`python -m server` with that data folder, or give --redis-url"
        )
    return Located(DEFAULT_URL, is_embedded=False)

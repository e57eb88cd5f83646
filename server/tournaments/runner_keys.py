"""Runner API keys: made by the operator, stored only as digests, checked in constant time.

A key is ``t42rk_<id>_<secret>``: ``id`` is 16 hex digits (it names the key's record),
``secret`` is 32 random bytes in URL-safe base64. Redis keeps, per key, its name, creation
time and the SHA-256 digest of the secret; the secret itself is printed once by
``python -m server runner-key create NAME`` and never stored. A presented key is looked up by
its id and its secret's digest compared with ``hmac.compare_digest``.

A runner is its **name**: tournaments belong to the name, so ``rotate NAME`` (a new key, the
old one dead in the same step) keeps the runner in control of everything it made. The hash
keeps ``owner:<key id>`` -> name for every key ever issued, so a tournament recorded with
the key id that made it still finds its runner after that key is gone.

A runner key is never a player token (player tokens are looked up in another key space and
never start with ``t42rk_``), and a player token never resolves here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from server.store.scripts import load_script
from server.tournaments.keys import TournamentKeys


def _script(name: str) -> str:
    return load_script(name, "server.tournaments")


PREFIX = "t42rk_"
ID_HEX = 16
SECRET_BYTES = 32
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
MAX_KEY_LENGTH = 128


class RunnerKeyError(ValueError):
    """A runner-key command is refused (bad name, name taken, unknown name)."""


@dataclass(frozen=True, slots=True)
class Runner:
    """Who a valid runner key belongs to: ``name`` owns the runner's tournaments; ``id`` is
    the key's own id."""

    id: str
    name: str
    created_at: float


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key() -> tuple[str, str, str]:
    """A fresh key: ``(key, id, digest of its secret)``."""
    key_id = secrets.token_hex(ID_HEX // 2)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    return f"{PREFIX}{key_id}_{secret}", key_id, secret_digest(secret)


def split_key(key: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed key, else None."""
    if not key.startswith(PREFIX) or len(key) > MAX_KEY_LENGTH:
        return None
    key_id, sep, secret = key[len(PREFIX):].partition("_")
    if not sep or len(key_id) != ID_HEX or not secret:
        return None
    if any(c not in "0123456789abcdef" for c in key_id):
        return None
    return key_id, secret


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise RunnerKeyError("a runner key name is 1..40 letters, digits, '_', '.' or '-', "
                             "starting with a letter or digit")
    return name


class RunnerKeys:
    """Create, list, revoke and check runner keys in Redis."""

    def __init__(self, redis: aioredis.Redis, keys: TournamentKeys, *,
                 now: Callable[[], float] = time.time) -> None:
        """``now``: the wall clock the keys' creation times are read from."""
        self._now = now
        self._redis = redis
        self._key = keys.runner_keys
        self._create = redis.register_script(_script("runner_key_create.lua"))
        self._revoke = redis.register_script(_script("runner_key_revoke.lua"))
        self._rotate = redis.register_script(_script("runner_key_rotate.lua"))

    async def create(self, name: str) -> tuple[str, Runner]:
        """A new key for ``name`` (printed once, never stored). Raises RunnerKeyError when
        the name already has a key."""
        name = validate_name(name)
        key, key_id, digest = new_key()
        created_at = self._now()
        record = json.dumps({"name": name, "digest": digest, "created_at": created_at})
        if not await self._create(keys=[self._key], args=[name, key_id, record]):
            raise RunnerKeyError(f"runner key {name!r} exists; revoke it first")
        return key, Runner(key_id, name, created_at)

    async def rotate(self, name: str) -> tuple[str, Runner, str]:
        """A new key for ``name`` and the old one dead, in one step: ``(key, runner, old key
        id)``. The runner's tournaments stay its own. Raises RunnerKeyError when ``name``
        has no key."""
        name = validate_name(name)
        key, key_id, digest = new_key()
        created_at = self._now()
        record = json.dumps({"name": name, "digest": digest, "created_at": created_at})
        old = await self._rotate(keys=[self._key], args=[name, key_id, record])
        if old is None:
            raise RunnerKeyError(f"no runner key named {name!r}; create one")
        old_id = old.decode() if isinstance(old, bytes) else str(old)
        return key, Runner(key_id, name, created_at), old_id

    async def owner_of(self, recorded: str) -> str | None:
        """The runner name a tournament's recorded ``runner`` field stands for: the key id
        that created it (records made before owners were named), else None."""
        raw = await self._redis.hget(self._key, f"owner:{recorded}")  # type: ignore[misc]
        if raw is not None:
            return raw.decode() if isinstance(raw, bytes) else str(raw)
        data = await self._redis.hget(self._key, f"id:{recorded}")  # type: ignore[misc]
        return None if data is None else str(json.loads(data)["name"])

    async def revoke(self, name: str) -> bool:
        return bool(await self._revoke(keys=[self._key], args=[validate_name(name)]))

    async def list(self) -> list[Runner]:
        raw: dict[Any, Any] = await self._redis.hgetall(self._key)  # type: ignore[misc]
        runners: list[Runner] = []
        for field, value in raw.items():
            text = field.decode() if isinstance(field, bytes) else str(field)
            if text.startswith("id:"):
                data = json.loads(value)
                runners.append(Runner(text[3:], str(data["name"]), float(data["created_at"])))
        return sorted(runners, key=lambda r: r.name)

    async def resolve(self, key: str) -> Runner | None:
        """The runner a presented key belongs to, or None (malformed, unknown, revoked)."""
        parts = split_key(key)
        if parts is None:
            return None
        key_id, secret = parts
        raw = await self._redis.hget(self._key, f"id:{key_id}")  # type: ignore[misc]
        if raw is None:
            return None
        data = json.loads(raw)
        if not hmac.compare_digest(str(data["digest"]), secret_digest(secret)):
            return None
        return Runner(key_id, str(data["name"]), float(data["created_at"]))

    async def name_of(self, key: str) -> str | None:
        """The name of the runner a presented key belongs to (None: not a live key; no
        Redis read for a token that is not shaped as a runner key)."""
        runner = await self.resolve(key)
        return None if runner is None else runner.name

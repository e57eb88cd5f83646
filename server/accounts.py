"""Accounts, guests and bearer tokens, kept in Redis.

Passwords are hashed with salted ``hashlib.scrypt`` (16-byte random salt, 32-byte key) in a
worker thread, so hashing never blocks the event loop; the cost parameters are stored with each
hash, so raising ``scrypt_n`` later keeps old accounts working. A password is never stored or
logged in clear. A login for an unknown name still runs scrypt, so timing does not tell which
names exist.

Tokens are 32 random bytes (URL-safe base64). Redis holds only their SHA-256 digest, mapped to
the identity, with an expiry: ``{prefix}{tok:<digest>}:token``. Identity on a socket comes only
from a token.

Player ids: an account's id is its name in lower case (names are unique regardless of case);
a guest's id is ``guest-`` followed by 10 hex digits. Names cannot contain ``-``, so the two
never collide.

Exception tree::

    AccountError(ProtocolError)   code: name_taken | invalid_credentials | unauthorized | busy
                                  | bad_field | missing_field
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from server.config import Settings
from server.keys import Keys
from server.protocol.errors import ErrorCode, ProtocolError

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,19}")
MIN_PASSWORD = 8
MAX_PASSWORD = 128
SALT_BYTES = 16
KEY_BYTES = 32
GUEST_PREFIX = "guest-"
BOT_PREFIX = "bot-"
"""A bot account's id: ``bot-<level>-<hex>``; only the server issues them (names cannot
contain ``-``, so no account or guest id starts like this)."""


def is_bot_id(player: str) -> bool:
    return player.startswith(BOT_PREFIX)


class AccountError(ProtocolError):
    """A register/login/token request is refused; ``code`` says why."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a token belongs to. ``player`` is the id used everywhere (ratings, seats)."""

    player: str
    name: str
    is_guest: bool
    is_bot: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"player": self.player, "name": self.name, "guest": self.is_guest,
                "bot": self.is_bot}


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    identity: Identity
    expires_at: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.identity.to_dict(), "token": self.token, "expires_at": self.expires_at}


@dataclass(frozen=True, slots=True)
class ScryptCost:
    n: int
    r: int
    p: int

    @property
    def maxmem(self) -> int:
        return 128 * self.r * (self.n + self.p + 2) + (1 << 20)


# --- pure helpers ------------------------------------------------------------------------

def validate_name(value: Any) -> str:
    """The display name, checked: 3..20 letters, digits or '_', starting with a letter."""
    if value is None:
        raise AccountError(ErrorCode.MISSING_FIELD, "field 'name' is required", field="name")
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise AccountError(
            ErrorCode.BAD_FIELD,
            "field 'name' must be 3..20 letters, digits or '_', starting with a letter",
            field="name",
        )
    return value


def validate_password(value: Any) -> str:
    if value is None:
        raise AccountError(
            ErrorCode.MISSING_FIELD, "field 'password' is required", field="password"
        )
    if not isinstance(value, str) or not MIN_PASSWORD <= len(value) <= MAX_PASSWORD:
        raise AccountError(
            ErrorCode.BAD_FIELD,
            f"field 'password' must be a string of {MIN_PASSWORD}..{MAX_PASSWORD} characters",
            field="password",
        )
    return value


def hash_password(password: str, salt: bytes, cost: ScryptCost) -> bytes:
    """scrypt(password, salt) with the given cost; CPU-heavy, call it off the event loop."""
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=cost.n, r=cost.r, p=cost.p,
        maxmem=cost.maxmem, dklen=KEY_BYTES,
    )


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def player_id_for(name: str) -> str:
    return name.lower()


# --- the store ---------------------------------------------------------------------------

class Accounts:
    """Register, log in, issue guest tokens and resolve tokens. Talks to Redis."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings) -> None:
        self._redis = redis
        self._keys = keys
        self._settings = settings
        self._cost = ScryptCost(settings.scrypt_n, settings.scrypt_r, settings.scrypt_p)
        self._hashing = asyncio.Semaphore(settings.max_concurrent_hashes)
        self._waiting = 0
        self._dummy_salt = secrets.token_bytes(SALT_BYTES)

    async def _hash(self, password: str, salt: bytes, cost: ScryptCost) -> bytes:
        # Bound the queue: scrypt is the expensive thing an anonymous client can ask for.
        if self._waiting >= 16 * self._settings.max_concurrent_hashes:
            raise AccountError(ErrorCode.BUSY, "too many logins in progress; retry shortly")
        self._waiting += 1
        try:
            async with self._hashing:
                return await asyncio.to_thread(hash_password, password, salt, cost)
        finally:
            self._waiting -= 1

    async def register(self, name: Any, password: Any) -> IssuedToken:
        """Create an account and log it in. Raises ``name_taken`` if the name is in use."""
        name = validate_name(name)
        password = validate_password(password)
        salt = secrets.token_bytes(SALT_BYTES)
        digest = await self._hash(password, salt, self._cost)
        record = {
            "name": name, "salt": salt.hex(), "hash": digest.hex(),
            "n": self._cost.n, "r": self._cost.r, "p": self._cost.p,
            "created_at": time.time(),
        }
        player = player_id_for(name)
        created = await self._redis.set(self._keys.account(player), json.dumps(record), nx=True)
        if not created:
            raise AccountError(ErrorCode.NAME_TAKEN, f"name {name!r} is taken", field="name")
        return await self._issue(Identity(player, name, False), self._settings.token_ttl)

    async def login(self, name: Any, password: Any) -> IssuedToken:
        """A fresh token for a name and password. Raises ``invalid_credentials`` otherwise."""
        if not isinstance(name, str):
            validate_name(name)  # raises missing_field / bad_field
            raise AssertionError("unreachable")
        password = validate_password(password)
        raw = None
        if NAME.fullmatch(name):
            raw = await self._redis.get(self._keys.account(player_id_for(name)))
        if raw is None:
            await self._hash(password, self._dummy_salt, self._cost)
            raise AccountError(ErrorCode.INVALID_CREDENTIALS, "unknown name or wrong password")
        record = json.loads(raw)
        cost = ScryptCost(int(record["n"]), int(record["r"]), int(record["p"]))
        digest = await self._hash(password, bytes.fromhex(record["salt"]), cost)
        if not hmac.compare_digest(digest, bytes.fromhex(record["hash"])):
            raise AccountError(ErrorCode.INVALID_CREDENTIALS, "unknown name or wrong password")
        identity = Identity(player_id_for(record["name"]), record["name"], False)
        return await self._issue(identity, self._settings.token_ttl)

    async def guest(self) -> IssuedToken:
        """A token for a new guest. Guests play, but are never rated."""
        suffix = secrets.token_hex(5)
        identity = Identity(GUEST_PREFIX + suffix, f"Guest {suffix[:4]}", True)
        return await self._issue(identity, self._settings.guest_token_ttl)

    async def bot(self, level: str) -> IssuedToken:
        """A token for a new computer player at ``level`` (marked ``bot: true`` wherever
        its identity shows). Lives ``guest_token_ttl``; revoke it when the game is over."""
        suffix = secrets.token_hex(5)
        identity = Identity(f"{BOT_PREFIX}{level}-{suffix}", f"Computer ({level})", False, True)
        return await self._issue(identity, self._settings.guest_token_ttl)

    async def resolve(self, token: str) -> Identity | None:
        """The identity a live token belongs to, or None (unknown, expired or malformed)."""
        if not token or len(token) > 256:
            return None
        raw = await self._redis.get(self._keys.token(token_digest(token)))
        if raw is None:
            return None
        data = json.loads(raw)
        return Identity(str(data["player"]), str(data["name"]), bool(data["guest"]),
                        bool(data.get("bot", False)))

    async def revoke(self, token: str) -> bool:
        """Forget a token (log out). True when it existed."""
        if not token or len(token) > 256:
            return False
        return bool(await self._redis.delete(self._keys.token(token_digest(token))))

    async def _issue(self, identity: Identity, ttl: float) -> IssuedToken:
        token = secrets.token_urlsafe(32)
        expires_at = time.time() + ttl
        await self._redis.set(
            self._keys.token(token_digest(token)),
            json.dumps(identity.to_dict()),
            px=max(1, int(ttl * 1000)),
        )
        return IssuedToken(token, identity, expires_at)

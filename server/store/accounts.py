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
import functools
import hashlib
import hmac
import importlib.resources
import json
import re
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from rating_plugin.store import Queued
from server.config import Settings
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.ids import BOT_PREFIX, GUEST_PREFIX, bot_name
from server.protocol.messages import has_lone_surrogate
from server.protocol.node_messages import Revoke, encode
from server.protocol.text import clean_text
from server.store.fairgate import FairGate, GateFull
from server.store.keys import Keys
from server.store.scripts import load_script

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,19}")
MIN_PASSWORD = 8
MAX_PASSWORD = 128
SALT_BYTES = 16
KEY_BYTES = 32


class AccountError(ProtocolError):
    """A register/login/token request is refused; ``code`` says why. ``retry_after`` (seconds)
    is set on ``rate_limited``."""


def throttled(message: str, wait: float) -> AccountError:
    err = AccountError(ErrorCode.RATE_LIMITED, message)
    err.retry_after = wait
    return err


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


def _identity(data: dict[str, Any]) -> Identity:
    """The :class:`Identity` a stored token record names (bot tokens carry ``bot``)."""
    return Identity(str(data["player"]), str(data["name"]), bool(data["guest"]),
                    bool(data.get("bot", False)))


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
    """The display name, cleaned as every text is (``server/protocol/text.py``), then checked:
    3..20 letters, digits or '_', starting with a letter."""
    if value is None:
        raise AccountError(ErrorCode.MISSING_FIELD, "field 'name' is required", field="name")
    if isinstance(value, str):
        value = clean_text(value)
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise AccountError(
            ErrorCode.BAD_FIELD,
            "field 'name' must be 3..20 letters, digits or '_', starting with a letter",
            field="name",
        )
    return value


@functools.cache
def common_passwords() -> frozenset[str]:
    """The shipped list of the most common passwords of 8+ characters (lower case;
    ``tools/make_common_passwords.py`` makes it)."""
    text = importlib.resources.files("server").joinpath("common_passwords.txt").read_text(
        "utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def _is_blank(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def validate_new_password(value: Any, name: str | None = None) -> str:
    """A password chosen now (register, change), in the spirit of NIST SP 800-63B: 8..128
    characters, not only whitespace or control characters, not one of the most common
    passwords (case-insensitive), not the account's name. No other composition rules."""
    password = validate_password(value)
    if all(_is_blank(ch) for ch in password):
        raise AccountError(ErrorCode.BAD_FIELD,
                           "field 'password' must not be only spaces or control characters",
                           field="password")
    folded = password.strip().lower()
    if folded in common_passwords() or (name is not None and folded == name.lower()):
        raise AccountError(ErrorCode.BAD_FIELD,
                           "field 'password' is too common; choose another",
                           field="password")
    return password


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
    if has_lone_surrogate(value):
        raise AccountError(ErrorCode.BAD_FIELD,
                           "field 'password' must be Unicode text (it holds a lone surrogate)",
                           field="password")
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

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings, *,
                 now: Callable[[], float] = time.time) -> None:
        """``now``: the wall clock (seconds) this store reads, the node's clock."""
        self.now = now
        self._redis = redis
        self._keys = keys
        self._settings = settings
        self._cost = ScryptCost(settings.scrypt_n, settings.scrypt_r, settings.scrypt_p)
        # Hashing is shared fairly between addresses (round-robin), each holding at most
        # ``hashes_per_address`` places; the total queue stays bounded.
        per_address = settings.hashes_per_address if settings.limits else 1 << 30
        self._hashing = FairGate(settings.max_concurrent_hashes, per_address,
                                 16 * settings.max_concurrent_hashes)
        self._dummy_salt = secrets.token_bytes(SALT_BYTES)
        self._throttle = redis.register_script(load_script("login_throttle.lua"))

    async def _hash(self, password: str, salt: bytes, cost: ScryptCost,
                    address: str = "") -> bytes:
        # Bound the queue: scrypt is the expensive thing an anonymous client can ask for.
        try:
            async with self._hashing.slot(address):
                return await asyncio.to_thread(hash_password, password, salt, cost)
        except GateFull as exc:
            if exc.per_client:
                raise throttled("this address has password checks in progress; retry", 1.0)\
                    from None
            raise AccountError(ErrorCode.BUSY, "too many logins in progress; retry shortly")\
                from None

    async def register(self, name: Any, password: Any, address: str = "") -> IssuedToken:
        """Create an account and log it in. Raises ``name_taken`` if the name is in use."""
        name = validate_name(name)
        password = validate_new_password(password, name)
        salt = secrets.token_bytes(SALT_BYTES)
        digest = await self._hash(password, salt, self._cost, address)
        record = {
            "name": name, "salt": salt.hex(), "hash": digest.hex(),
            "n": self._cost.n, "r": self._cost.r, "p": self._cost.p,
            "created_at": self.now(),
        }
        player = player_id_for(name)
        created = await self._redis.set(self._keys.account(player), json.dumps(record), nx=True)
        if not created:
            raise AccountError(ErrorCode.NAME_TAKEN, f"name {name!r} is taken", field="name")
        # The address the account was made from is one of its known addresses: guesses
        # spread over other addresses never hold it back (see lua/login_throttle.lua).
        await self._login_step(player, "ok", address)
        return await self._issue(Identity(player, name, False), self._settings.token_ttl)

    async def _login_step(self, player: str, mode: str, address: str) -> float:
        s = self._settings
        if not s.limits:
            return 0.0
        reply = await self._throttle(
            keys=[self._keys.login_failures(player), self._keys.login_known(player)],
            args=[mode, address or "-", repr(self.now()), s.login_free_failures,
                  s.login_delay_base, s.login_lock_after, s.login_lock_time,
                  s.login_account_lock_after, s.login_fail_window],
        )
        return float(reply)

    async def login(self, name: Any, password: Any, address: str = "") -> IssuedToken:
        """A fresh token for a name and password. Raises ``invalid_credentials`` otherwise,
        ``rate_limited`` (with ``retry_after``) while this address must wait for this account
        (failures per account and address: a growing delay, then a lock; see
        ``lua/login_throttle.lua``)."""
        if not isinstance(name, str):
            validate_name(name)  # raises missing_field / bad_field
            raise AssertionError("unreachable")
        password = validate_password(password)
        raw = None
        name = clean_text(name)  # as register cleaned it
        player = player_id_for(name) if NAME.fullmatch(name) else ""
        if player:
            wait = await self._login_step(player, "check", address)
            if wait > 0:
                raise throttled("too many failed logins for this account from this address; "
                                "retry later", wait)
            raw = await self._redis.get(self._keys.account(player))
        if raw is None:
            await self._hash(password, self._dummy_salt, self._cost, address)
            if player:
                await self._login_step(player, "fail", address)
            raise AccountError(ErrorCode.INVALID_CREDENTIALS, "unknown name or wrong password")
        record = json.loads(raw)
        cost = ScryptCost(int(record["n"]), int(record["r"]), int(record["p"]))
        digest = await self._hash(password, bytes.fromhex(record["salt"]), cost, address)
        if not hmac.compare_digest(digest, bytes.fromhex(record["hash"])):
            await self._login_step(player, "fail", address)
            raise AccountError(ErrorCode.INVALID_CREDENTIALS, "unknown name or wrong password")
        await self._login_step(player, "ok", address)
        identity = Identity(player_id_for(record["name"]), record["name"], False)
        return await self._issue(identity, self._settings.token_ttl)

    async def change_password(self, token: str, password: Any, new_password: Any,
                              address: str = "") -> IssuedToken:
        """Check the current password, store the new one, end every token of the account
        (their sockets close on every node) and issue a fresh one."""
        identity = await self.resolve(token)
        if identity is None or identity.is_guest:
            raise AccountError(ErrorCode.UNAUTHORIZED, "no valid bearer token of an account")
        password = validate_password(password)
        raw = await self._redis.get(self._keys.account(identity.player))
        if raw is None:
            raise AccountError(ErrorCode.UNAUTHORIZED, "no such account")
        record = json.loads(raw)
        new = validate_new_password(new_password, str(record["name"]))
        cost = ScryptCost(int(record["n"]), int(record["r"]), int(record["p"]))
        # The current password is checked under the same per-account throttle as a login:
        # a token (stolen, or a socket left open) must not guess it faster than a login can.
        wait = await self._login_step(identity.player, "check", address)
        if wait > 0:
            raise throttled("too many failed password checks for this account from this "
                            "address; retry later", wait)
        digest = await self._hash(password, bytes.fromhex(record["salt"]), cost, address)
        if not hmac.compare_digest(digest, bytes.fromhex(record["hash"])):
            await self._login_step(identity.player, "fail", address)
            raise AccountError(ErrorCode.INVALID_CREDENTIALS, "wrong password")
        salt = secrets.token_bytes(SALT_BYTES)
        new_digest = await self._hash(new, salt, self._cost, address)
        record.update({"salt": salt.hex(), "hash": new_digest.hex(), "n": self._cost.n,
                       "r": self._cost.r, "p": self._cost.p})
        await self._redis.set(self._keys.account(identity.player), json.dumps(record))
        await self.revoke_player(identity.player, "password changed")
        return await self._issue(identity, self._settings.token_ttl)

    async def exists(self, player: str) -> bool:
        """Whether ``player`` is a registered account, or a guest or computer player holding
        a live token (what an operator's command may act on)."""
        return bool(await self._redis.exists(self._keys.account(player),
                                             self._keys.account_tokens(player)))

    async def unlock(self, player: str) -> bool:
        """Forget every failed login of ``player`` (an operator's ``python -m server.admin
        unlock``): no address waits for this account any more; the addresses it logged in
        from stay known. True when there were failures to forget."""
        return bool(await self._redis.delete(self._keys.login_failures(player)))

    async def revoke_player(self, player: str, reason: str = "revoked") -> int:
        """End every token of ``player`` (operator revoke, password change): deleted, and
        every node closes the sockets opened with them. The number of tokens ended."""
        key = self._keys.account_tokens(player)
        digests = [d.decode() if isinstance(d, bytes) else str(d)
                   for d in await self._redis.smembers(key)]  # type: ignore[misc]
        if digests:
            async with self._redis.pipeline(transaction=False) as pipe:
                for digest in digests:
                    pipe.delete(self._keys.token(digest))
                pipe.delete(key)
                await pipe.execute()
            await self.announce_revoked(digests, reason)
        return len(digests)

    async def announce_revoked(self, digests: list[str], reason: str) -> None:
        """Tell every node (and this one) to close the sockets of these tokens."""
        await self._redis.publish(self._keys.broadcast_channel, encode(
            Revoke(tokens=digests, reason=reason)))

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

    async def bot_again(self, player: str) -> IssuedToken | None:
        """A new token for the existing computer player ``player`` (a bot id this server
        issued: its seat at a table taken over from another node), or None when ``player``
        is not shaped like one."""
        name = bot_name(player)
        if name is None:
            return None
        return await self._issue(Identity(player, name, False, True),
                                 self._settings.guest_token_ttl)

    async def resolve(self, token: str) -> Identity | None:
        """The identity a live token belongs to, or None (unknown, expired or malformed)."""
        if not token or len(token) > 256:
            return None
        raw = await self._redis.get(self._keys.token(token_digest(token)))
        if raw is None:
            return None
        return _identity(json.loads(raw))

    async def resolve_live(self, token: str) -> tuple[Identity, str, float | None] | None:
        """Like :meth:`resolve`, with the token's digest and the seconds it has left (one
        round trip), for a socket that must close when the token ends."""
        if not token or len(token) > 256:
            return None
        digest = token_digest(token)
        key = self._keys.token(digest)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.get(key)
            pipe.pttl(key)
            raw, pttl = await pipe.execute()
        if raw is None:
            return None
        identity = _identity(json.loads(raw))
        left = None if not isinstance(pttl, int) or pttl < 0 else pttl / 1000
        return identity, digest, left

    def queue_account(self, pipe: Pipeline, player: str) -> Queued[Identity | None]:
        """Queue the read of the account whose player id is ``player`` on ``pipe`` (one GET);
        it parses to its :class:`Identity` (name as registered), or None when there is none
        (a guest never has one). The password hash never leaves this module."""
        pipe.get(self._keys.account(player))

        def parse(replies: Any) -> Identity | None:
            raw = replies[0]
            if raw is None:
                return None
            record = json.loads(raw)
            return Identity(player_id_for(record["name"]), str(record["name"]), False)

        return Queued(1, parse)

    async def revoke(self, token: str) -> bool:
        """Forget a token (log out); its sockets close on every node. True when it existed."""
        if not token or len(token) > 256:
            return False
        digest = token_digest(token)
        existed = bool(await self._redis.delete(self._keys.token(digest)))
        if existed:
            await self.announce_revoked([digest], "logged out")
        return existed

    async def _issue(self, identity: Identity, ttl: float) -> IssuedToken:
        token = secrets.token_urlsafe(32)
        expires_at = self.now() + ttl
        digest = token_digest(token)
        ttl_ms = max(1, int(ttl * 1000))
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.set(self._keys.token(digest), json.dumps(identity.to_dict()), px=ttl_ms)
            # Every token of a player, so that a password change or an operator's revoke
            # can end them all (a guest's too).
            tokens = self._keys.account_tokens(identity.player)
            pipe.sadd(tokens, digest)
            pipe.pexpire(tokens, ttl_ms)
            await pipe.execute()
        return IssuedToken(token, identity, expires_at)

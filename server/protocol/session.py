"""Per-connection state machine, pure: authentication state, rate limit, frame format.

The WebSocket handler feeds every received frame to :meth:`Session.receive` together with the
current time, and acts on what comes back:

- :class:`Accepted` - a valid message the player may send now; handle it.
- :class:`Refused`  - send the error event; the connection stays usable.
- :class:`CloseConnection` - close the socket with the given code (a flood: 1008).

States::

    AWAITING_AUTH --authenticate()--> READY --close()--> CLOSED
         |                                                 ^
         +------------ auth deadline passed / close() -----+

Before authentication only ``hello`` (alias ``auth``) and ``ping`` are accepted; the shell
resolves the token (that needs Redis) and calls :meth:`Session.authenticate`. A socket that
arrived with a valid ``Authorization: Bearer`` header starts READY.

Rate limit: a token bucket of ``burst`` messages refilled at ``rate`` per second. A message
arriving with the bucket empty is refused (``rate_limited``) and not handled; after
``flood_close_after`` refusals in a row the session asks to close with 1008 (policy violation).
Refused frames of any kind count: a flood of garbage is still a flood.

Event form: ``protocol`` 1 (full-state table events) or 2 (change-only), from ``?protocol=``
at connect time or the ``protocol`` field of ``hello``; see ``server.protocol.lean``.

Format: replies follow the client's choice, which is the kind of its latest frame (text = JSON,
binary = msgpack). Until the first frame, the format asked for at connect time is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from server.protocol.codec import WireFormat, decode
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.protocol.lean import PROTOCOL_LEAN
from server.protocol.messages import (
    Hello,
    Message,
    Ping,
    decode_typed,
    json_typed_decoder,
    msgpack_typed_decoder,
    parse_message,
    peek_ref,
    ref_of,
)
from server.ratelimit import Bucket

CLOSE_POLICY_VIOLATION = 1008


class SessionState(StrEnum):
    AWAITING_AUTH = "awaiting_auth"
    READY = "ready"
    CLOSED = "closed"


@dataclass(slots=True)
class TokenBucket(Bucket):
    """``burst`` tokens at most, refilled continuously at ``rate`` tokens per second (the
    bucket of :mod:`server.ratelimit`, with its own rate and burst: one per socket)."""

    rate: float
    burst: float

    @classmethod
    def full(cls, rate: float, burst: float, now: float) -> TokenBucket:
        return cls(rate=rate, burst=burst, tokens=burst, updated=now)

    def take(self, now: float) -> bool:
        """Spend one token if there is one; refill first. Time going backwards refills nothing."""
        return self.spend(self.rate, self.burst, now) == 0.0


@dataclass(frozen=True, slots=True)
class SessionLimits:
    rate: float
    burst: int
    flood_close_after: int
    auth_timeout: float


@dataclass(slots=True)
class Accepted:
    """(Not frozen: made for every accepted frame, and a frozen dataclass's ``__init__`` goes
    through ``object.__setattr__``.)"""

    message: Message


@dataclass(frozen=True, slots=True)
class Refused:
    error: ProtocolError
    ref: str | int | None = None


@dataclass(frozen=True, slots=True)
class CloseConnection:
    code: int
    reason: str


Outcome = Accepted | Refused | CloseConnection


_READY = SessionState.READY
_MSGPACK = WireFormat.MSGPACK
_JSON = WireFormat.JSON
_msgpack_typed = msgpack_typed_decoder.decode
_json_typed = json_typed_decoder.decode


class Session:
    """One connection's protocol state. Not thread-safe; one event loop drives it."""

    __slots__ = ("_bucket", "_refused_in_row", "auth_deadline", "format", "lean", "limits",
                 "player", "protocol", "state")

    def __init__(
        self,
        limits: SessionLimits,
        *,
        now: float,
        fmt: WireFormat = WireFormat.JSON,
        player: str | None = None,
        protocol: int = PROTOCOL_LEAN,
    ) -> None:
        self.limits = limits
        self.format = fmt
        self.protocol = protocol
        self.lean = protocol == PROTOCOL_LEAN  # table events in the change-only form
        self.player = player
        self.state = SessionState.READY if player is not None else SessionState.AWAITING_AUTH
        self.auth_deadline = now + limits.auth_timeout
        self._bucket = TokenBucket.full(limits.rate, limits.burst, now)
        self._refused_in_row = 0

    @property
    def is_ready(self) -> bool:
        return self.state is SessionState.READY

    def receive(self, payload: bytes | str, *, binary: bool, now: float) -> Outcome:
        """Judge one received data frame. See the module docstring for what to do with it."""
        state = self.state
        if state is _READY:
            # The usual frame (a move): the bucket's refill and spend and the typed decode
            # inline, nothing else looked at.
            self.format = _MSGPACK if binary else _JSON
            bucket = self._bucket
            if now > bucket.updated:
                bucket.tokens = min(bucket.burst, bucket.tokens + (now - bucket.updated)
                                    * bucket.rate)
                bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                self._refused_in_row = 0
                try:
                    if binary:
                        message: Message = _msgpack_typed(
                            payload.encode("utf-8") if isinstance(payload, str) else payload)
                    else:
                        message = _json_typed(payload)
                except Exception:  # the long way names the error (see _receive)
                    return self._receive_slow(payload)
                if isinstance(message, Hello):
                    return Refused(ProtocolError(ErrorCode.ALREADY_AUTHENTICATED,
                                                 "this socket is authenticated"), message.ref)
                return Accepted(message)
            return self._refuse_rate(payload, binary)
        return self._receive(payload, binary=binary, now=now)

    def _receive_slow(self, payload: bytes | str) -> Outcome:
        """A READY socket's frame the typed decoder refused: judged field by field."""
        obj = None
        try:
            obj = decode(payload, self.format)
            message = parse_message(obj)
        except ProtocolError as exc:
            return Refused(exc, ref_of(obj))
        if isinstance(message, Hello):
            return Refused(
                ProtocolError(ErrorCode.ALREADY_AUTHENTICATED, "this socket is authenticated"),
                message.ref,
            )
        return Accepted(message)

    def _refuse_rate(self, payload: bytes | str, binary: bool) -> Refused | CloseConnection:
        """Refuse a frame over the rate limit; its ``id`` still comes back as ``ref``, so the
        client knows which request was dropped."""
        self._refused_in_row += 1
        if self._refused_in_row >= self.limits.flood_close_after:
            return self._close(CLOSE_POLICY_VIOLATION, "rate limit exceeded")
        error = ProtocolError(
            ErrorCode.RATE_LIMITED,
            f"more than {self.limits.rate:g} messages per second "
            f"(burst {self.limits.burst}); message dropped",
        )
        bucket = self._bucket
        wait = (1.0 - bucket.tokens) / bucket.rate if bucket.rate > 0 else 1.0
        return Refused(retry_later(error, wait), peek_ref(payload, binary=binary))

    def charge(self, cost: float, now: float) -> None:
        """Spend ``cost`` more tokens of this socket's bucket for work a message caused
        beyond one message (a long ``sync`` answer): the bucket may go below zero, and the
        messages after it wait until it has refilled."""
        bucket = self._bucket
        if now > bucket.updated:
            bucket.tokens = min(bucket.burst, bucket.tokens + (now - bucket.updated)
                                * bucket.rate)
            bucket.updated = now
        bucket.tokens -= cost

    def _receive(self, payload: bytes | str, *, binary: bool, now: float) -> Outcome:
        """:meth:`receive` before authentication or after closing: every check in order."""
        if self.state is SessionState.CLOSED:
            return CloseConnection(1000, "closed")
        self.format = WireFormat.MSGPACK if binary else WireFormat.JSON
        if self.state is SessionState.AWAITING_AUTH and now > self.auth_deadline:
            return self._close(CLOSE_POLICY_VIOLATION, "authentication timed out")
        if not self._bucket.take(now):
            return self._refuse_rate(payload, binary)
        self._refused_in_row = 0
        message = decode_typed(payload, binary=binary)
        if message is None:  # not the usual frame: judged field by field, for the error
            obj = None
            try:
                obj = decode(payload, self.format)
                message = parse_message(obj)
            except ProtocolError as exc:
                return Refused(exc, ref_of(obj))
        if self.state is SessionState.AWAITING_AUTH:
            if not isinstance(message, Hello | Ping):
                return Refused(
                    ProtocolError(
                        ErrorCode.AUTH_REQUIRED,
                        "send hello with a bearer token first",
                    ),
                    message.ref,
                )
        elif isinstance(message, Hello):
            return Refused(
                ProtocolError(ErrorCode.ALREADY_AUTHENTICATED, "this socket is authenticated"),
                message.ref,
            )
        return Accepted(message)

    def use_protocol(self, protocol: int) -> None:
        """The event form this socket asked for (PROTOCOL.md §5.1)."""
        self.protocol = protocol
        self.lean = protocol == PROTOCOL_LEAN

    def authenticate(self, player: str) -> None:
        """The shell resolved a token to ``player``; the session accepts every message now."""
        if self.state is SessionState.CLOSED:
            return
        self.player = player
        self.state = SessionState.READY

    def is_auth_expired(self, now: float) -> bool:
        return self.state is SessionState.AWAITING_AUTH and now > self.auth_deadline

    def close(self) -> None:
        self.state = SessionState.CLOSED

    def _close(self, code: int, reason: str) -> CloseConnection:
        self.state = SessionState.CLOSED
        return CloseConnection(code, reason)

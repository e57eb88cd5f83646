"""Client messages: one frozen dataclass per ``type``, and the validator that builds them.

Pure. :func:`parse_message` takes whatever the codec decoded and returns a typed message, or
raises :class:`~server.protocol.errors.ProtocolError` with a stable code and the field name:

- not an object, or no string ``type``      -> ``bad_message``
- a ``type`` nobody knows                   -> ``unknown_type``
- a required field absent                   -> ``missing_field`` (``field`` names it)
- a field of the wrong type / out of range  -> ``bad_field`` (``field`` names it)

Fields a message does not define are ignored. Every message may carry ``id`` (a string of at
most 64 characters or an integer); the server echoes it as ``ref`` in the reply or error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, ClassVar

import msgspec

from server.protocol.errors import ErrorCode, ProtocolError

RequestId = str | int

TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_TOKEN = 256
MAX_PLAY = 64
MAX_TOURNAMENT_ID = 64
MAX_ID = 64
MAX_VERSION = 2**53
MAX_POOL = 32
MAX_CHAT_RAW = 2000
"""Characters of a ``chat`` text as sent; what is left once cleaned is held to the server's
``chat_max_length`` (``server.protocol.chat``)."""
MAX_PLAYER_ID = 64
MAX_CHAT_ID = 64
MAX_REPORT_REASON = 200


# Constrained types for the one-pass decode (the same limits as the validators below).
WireId = (Annotated[str, msgspec.Meta(max_length=MAX_ID)]
          | Annotated[int, msgspec.Meta(ge=-MAX_VERSION, le=MAX_VERSION)])
TableId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}\Z")]
Token = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOKEN)]
PlayText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PLAY)]
Point = Annotated[int, msgspec.Meta(ge=0, le=25)]
Steps = Annotated[tuple[tuple[Point, Point], ...], msgspec.Meta(min_length=1, max_length=4)]
Version = Annotated[int, msgspec.Meta(ge=0, le=MAX_VERSION)]
MatchLength = Annotated[int, msgspec.Meta(ge=0, le=255)]
PoolName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_POOL)]
ProtocolVersion = Annotated[int, msgspec.Meta(ge=1, le=2)]
ListOffset = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]  # MAX_LIST_OFFSET
ChatText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CHAT_RAW)]
PlayerId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PLAYER_ID)]
ChatId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CHAT_ID)]
ReportReason = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REPORT_REASON)]
EventIds = Annotated[tuple[Annotated[str, msgspec.Meta(min_length=1, max_length=128)], ...],
                     msgspec.Meta(min_length=1, max_length=200)]  # MAX_EVENT_ID, MAX_ACK


class TableMode(StrEnum):
    COMPETITIVE = "competitive"  # ranked: Table42 Elo (single game) or FIBS (match to n)
    BOOSTED = "boosted"  # Boosted points, never Elo
    PRIVATE = "private"  # a room with a friend: never rated, not listed
    TOURNAMENT = "tournament"  # a tournament game: never rated, needs tournament_id


class ResignKind(StrEnum):
    SINGLE = "single"
    GAMMON = "gammon"
    BACKGAMMON = "backgammon"


class Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type",
              forbid_unknown_fields=True):
    """Base of every client message: a msgspec Struct, so a frame decodes and validates
    into it in one pass (see ``server.protocol.codec.decode_message``). The annotated
    constraints repeat the validators below, which give the error codes when they fail."""

    TYPE: ClassVar[str] = ""
    ref: WireId | None = msgspec.field(default=None, name="id")


class Hello(Message, tag="hello", frozen=True):
    """Authenticate a socket by bearer token (browsers cannot set the Authorization header)."""

    TYPE: ClassVar[str] = "hello"
    token: Token
    #: The table-event form this socket wants: 1 full state, 2 change-only (PROTOCOL.md §5.1).
    protocol: ProtocolVersion | None = None
    #: Whether the node should send ``alive`` to this socket when it is quiet (§1).
    keepalive: bool | None = None


class Ping(Message, tag="ping", frozen=True):
    TYPE: ClassVar[str] = "ping"


class ListTables(Message, tag="list_tables", frozen=True):
    TYPE: ClassVar[str] = "list_tables"
    mode: TableMode | None = None
    offset: ListOffset = 0  # the page's first row (the reply's total says how many there are)


class AckEvents(Message, tag="ack_events", frozen=True):
    """The client has the rating and tournament events with these ``event_id`` values: they
    are removed from its inbox (an event received live is removed without this)."""

    TYPE: ClassVar[str] = "ack_events"
    events: EventIds


class CreateTable(Message, tag="create_table", frozen=True):
    TYPE: ClassVar[str] = "create_table"
    mode: TableMode
    match_length: MatchLength = 0  # 0 = a single game; n >= 1 = a match to n points
    tournament_id: TableId | None = None


class TableMessage(Message, frozen=True):
    """A message about one table."""

    table: TableId


class Join(TableMessage, tag="join", frozen=True):
    TYPE: ClassVar[str] = "join"


class Leave(TableMessage, tag="leave", frozen=True):
    TYPE: ClassVar[str] = "leave"


class Watch(TableMessage, tag="watch", frozen=True):
    TYPE: ClassVar[str] = "watch"


class Unwatch(TableMessage, tag="unwatch", frozen=True):
    TYPE: ClassVar[str] = "unwatch"


class Roll(TableMessage, tag="roll", frozen=True):
    TYPE: ClassVar[str] = "roll"


class Play(TableMessage, tag="play", frozen=True):
    """A checker play: one of the offered ``legal_plays`` as sent (a tuple of ``(from,
    to)`` steps), or the play written as text (``"24/18 13/8"``)."""

    TYPE: ClassVar[str] = "play"
    play: PlayText | Steps


class Double(TableMessage, tag="double", frozen=True):
    TYPE: ClassVar[str] = "double"


class Take(TableMessage, tag="take", frozen=True):
    TYPE: ClassVar[str] = "take"


class Drop(TableMessage, tag="drop", frozen=True):
    TYPE: ClassVar[str] = "drop"


class Resign(TableMessage, tag="resign", frozen=True):
    TYPE: ClassVar[str] = "resign"
    kind: ResignKind = ResignKind.SINGLE


class AcceptResign(TableMessage, tag="accept_resign", frozen=True):
    TYPE: ClassVar[str] = "accept_resign"


class RejectResign(TableMessage, tag="reject_resign", frozen=True):
    TYPE: ClassVar[str] = "reject_resign"


class Sync(TableMessage, tag="sync", frozen=True):
    """Ask for the table's events with a version greater than ``since``, and its full state."""

    TYPE: ClassVar[str] = "sync"
    since: Version = 0


GAME_ACTIONS: tuple[type[TableMessage], ...] = (
    Roll, Play, Double, Take, Drop, Resign, AcceptResign, RejectResign,
)
"""Messages that change a game; only a seated player may send them."""


class Chat(TableMessage, tag="chat", frozen=True):
    """A chat message at a table (its channel follows the sender's role there)."""

    TYPE: ClassVar[str] = "chat"
    text: ChatText


class Report(TableMessage, tag="report", frozen=True):
    """Report the chat message ``msg`` of a table to the operators."""

    TYPE: ClassVar[str] = "report"
    msg: ChatId
    reason: ReportReason | None = None


class Mute(Message, tag="mute", frozen=True):
    """Stop receiving ``player``'s chat messages (kept for the account)."""

    TYPE: ClassVar[str] = "mute"
    player: PlayerId


class Unmute(Message, tag="unmute", frozen=True):
    TYPE: ClassVar[str] = "unmute"
    player: PlayerId


CHAT_MESSAGES: tuple[type[Message], ...] = (Chat, Report, Mute, Unmute)


class JoinQueue(Message, tag="queue", frozen=True):
    """Queue for lobby matchmaking in ``pool`` (replaces any ticket the player holds)."""

    TYPE: ClassVar[str] = "queue"
    pool: PoolName


class CancelQueue(Message, tag="cancel_queue", frozen=True):
    TYPE: ClassVar[str] = "cancel_queue"


class QueueStatus(Message, tag="queue_status", frozen=True):
    """Ask how long the player's ticket has waited and how wide its window is now."""

    TYPE: ClassVar[str] = "queue_status"


MATCHMAKING_MESSAGES: tuple[type[Message], ...] = (JoinQueue, CancelQueue, QueueStatus)


class BotLevel(StrEnum):
    """The computer's levels (``server/bot/ladder.py``), then the names of earlier versions
    (aliases: ``basic`` is ``beginner``, ``strong`` ``casual``, ``expert`` ``advanced``)."""

    RANDOM = "random"
    BEGINNER = "beginner"
    CASUAL = "casual"
    INTERMEDIATE = "intermediate"
    ADVANCED = "advanced"
    BASIC = "basic"
    STRONG = "strong"
    EXPERT = "expert"


class PlayComputer(Message, tag="play_computer", frozen=True):
    """Start a game against the server's computer player at ``level`` (never rated)."""

    TYPE: ClassVar[str] = "play_computer"
    level: BotLevel = BotLevel.BEGINNER
    match_length: MatchLength = 0
"""Messages the matchmaker handles (the pool names are checked there: ``unknown_pool``)."""


# --- field validators -------------------------------------------------------------------

Validator = Callable[[str, Any], Any]


def _bad(name: str, why: str) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_FIELD, f"field {name!r} {why}", field=name)


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate code point (a JSON ``"\\ud800"`` escape
    decodes to one): such a string is not Unicode text and cannot be encoded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _string(max_len: int, pattern: re.Pattern[str] | None = None) -> Validator:
    def check(name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise _bad(name, f"must be a string, got {_kind(value)}")
        if not value or len(value) > max_len:
            raise _bad(name, f"must have 1..{max_len} characters")
        if has_lone_surrogate(value):
            raise _bad(name, "must be Unicode text (it holds a lone surrogate)")
        if pattern is not None and not pattern.fullmatch(value):
            raise _bad(name, f"must match {pattern.pattern}")
        return value

    return check


MAX_STEPS = 4
"""Most steps a play has (a roll of doubles moves four checkers)."""


def _play(name: str, value: Any) -> str | tuple[tuple[int, int], ...]:
    """Text (as ``_string(MAX_PLAY)``) or 1..4 ``[from, to]`` steps, points 0..25."""
    if isinstance(value, str):
        text: str = _PLAY_TEXT(name, value)
        return text
    if not isinstance(value, list | tuple):
        raise _bad(name, f"must be a string or an array of [from, to] steps, got {_kind(value)}")
    if not 1 <= len(value) <= MAX_STEPS:
        raise _bad(name, f"must have 1..{MAX_STEPS} steps")
    steps: list[tuple[int, int]] = []
    for step in value:
        if isinstance(step, list | tuple) and len(step) == 2:
            src, dst = step
            # type() rather than isinstance: true and false are not points.
            if type(src) is int and type(dst) is int and 0 <= src <= 25 and 0 <= dst <= 25:
                steps.append((src, dst))
                continue
        raise _bad(name, "steps must be [from, to] pairs of integers in 0..25")
    return tuple(steps)


def _integer(low: int, high: int) -> Validator:
    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(name, f"must be an integer, got {_kind(value)}")
        if not low <= value <= high:
            raise _bad(name, f"must be in {low}..{high}, got {value}")
        return value

    return check


def _choice(enum: type[StrEnum]) -> Validator:
    allowed = ", ".join(e.value for e in enum)

    def check(name: str, value: Any) -> StrEnum:
        if not isinstance(value, str):
            raise _bad(name, f"must be a string, got {_kind(value)}")
        try:
            return enum(value)
        except ValueError:
            raise _bad(name, f"must be one of {allowed}, got {value[:32]!r}") from None

    return check


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object", bytes: "binary"}.get(type(value), type(value).__name__)


_PLAY_TEXT = _string(MAX_PLAY)
MAX_LIST_OFFSET = 1_000_000
MAX_ACK = 200
MAX_EVENT_ID = 128


def _event_ids(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_ACK:
        raise _bad(name, f"must be an array of 1..{MAX_ACK} event ids")
    if not all(isinstance(v, str) and 1 <= len(v) <= MAX_EVENT_ID
               and not has_lone_surrogate(v) for v in value):
        raise _bad(name, f"event ids are strings of 1..{MAX_EVENT_ID} characters")
    return tuple(value)

FIELDS: dict[str, Validator] = {
    "token": _string(MAX_TOKEN),
    "table": _string(64, TABLE_ID),
    "play": _play,
    "since": _integer(0, MAX_VERSION),
    "mode": _choice(TableMode),
    "kind": _choice(ResignKind),
    # The upper bound is the server's max_match_length, checked by the lobby.
    "match_length": _integer(0, 255),
    "tournament_id": _string(MAX_TOURNAMENT_ID, TABLE_ID),
    "pool": _string(MAX_POOL),
    "protocol": _integer(1, 2),
    "offset": _integer(0, MAX_LIST_OFFSET),
    "events": _event_ids,
    "level": _choice(BotLevel),
    "text": _string(MAX_CHAT_RAW),
    "player": _string(MAX_PLAYER_ID),
    "msg": _string(MAX_CHAT_ID),
    "reason": _string(MAX_REPORT_REASON),
}


def _validate_ref(value: Any) -> RequestId:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _bad("id", f"must be a string or an integer, got {_kind(value)}")
    if isinstance(value, str) and len(value) > MAX_ID:
        raise _bad("id", f"must have at most {MAX_ID} characters")
    if isinstance(value, str) and has_lone_surrogate(value):
        raise _bad("id", "must be Unicode text (it holds a lone surrogate)")
    if isinstance(value, int) and not -MAX_VERSION <= value <= MAX_VERSION:
        raise _bad("id", "is out of range")
    return value


@dataclass(frozen=True, slots=True)
class _Schema:
    cls: type[Message]
    required: tuple[str, ...]
    optional: tuple[str, ...]


def _schema(cls: type[Message]) -> _Schema:
    required: list[str] = []
    optional: list[str] = []
    for f in msgspec.structs.fields(cls):
        if f.name == "ref":
            continue
        has_default = (f.default is not msgspec.NODEFAULT
                       or f.default_factory is not msgspec.NODEFAULT)
        (optional if has_default else required).append(f.name)
    return _Schema(cls, tuple(required), tuple(optional))


MESSAGE_TYPES: tuple[type[Message], ...] = (
    Hello, Ping, ListTables, AckEvents, CreateTable, Join, Leave, Watch, Unwatch, Sync,
    *GAME_ACTIONS, *MATCHMAKING_MESSAGES, PlayComputer, *CHAT_MESSAGES,
)
SCHEMAS: dict[str, _Schema] = {cls.TYPE: _schema(cls) for cls in MESSAGE_TYPES}
ALIASES = {"auth": "hello"}


class Auth(Hello, tag="auth", frozen=True):
    """``hello`` under its other name (``TYPE`` stays ``hello``)."""


_TYPED = (
    Hello | Auth | Ping | ListTables | CreateTable | Join | Leave | Watch | Unwatch | Sync
    | Roll | Play | Double | Take | Drop | Resign | AcceptResign | RejectResign | JoinQueue
    | CancelQueue | QueueStatus | AckEvents | PlayComputer | Chat | Report | Mute | Unmute
)
_json_typed = json_typed_decoder = msgspec.json.Decoder(_TYPED)
_msgpack_typed = msgpack_typed_decoder = msgspec.msgpack.Decoder(_TYPED)
"""The decoders of :func:`decode_typed` (``Session.receive`` calls them itself on its fast
path: the same decoding, one call less per frame)."""


def decode_typed(payload: bytes | str, *, binary: bool) -> Message | None:
    """A frame decoded and validated into its message in one pass (msgspec), or None when
    that fails for any reason: then the frame goes the long way (``codec.decode`` and
    :func:`parse_message`), which accepts exactly the same messages and names the error.

    The fast path refuses whatever it is not sure of (unknown fields, ``null`` for a field
    with a default, a ``type`` given twice, ...), so it never accepts a frame the long way
    would refuse.
    """
    try:
        if binary:
            raw = payload.encode("utf-8") if isinstance(payload, str) else payload
            message: Message = _msgpack_typed.decode(raw)
        else:
            message = _json_typed.decode(payload)
    except Exception:  # every fault is judged again by the long way
        return None
    return message


def parse_message(obj: Any) -> Message:
    """Build the typed message for a decoded frame, or raise :class:`ProtocolError`.

    A ``null`` optional field counts as absent.
    """
    if not isinstance(obj, Mapping):
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"a message is an object, got {_kind(obj)}")
    kind = obj.get("type")
    if kind is None:
        raise ProtocolError(ErrorCode.MISSING_FIELD, "field 'type' is required", field="type")
    if not isinstance(kind, str):
        raise _bad("type", f"must be a string, got {_kind(kind)}")
    schema = SCHEMAS.get(ALIASES.get(kind, kind))
    if schema is None:
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind[:32]!r}", field="type"
        )
    values: dict[str, Any] = {}
    ref = obj.get("id")
    if ref is not None:
        values["ref"] = _validate_ref(ref)
    for name in schema.required:
        value = obj.get(name)
        if value is None:
            raise ProtocolError(
                ErrorCode.MISSING_FIELD, f"field {name!r} is required", field=name
            )
        values[name] = FIELDS[name](name, value)
    for name in schema.optional:
        value = obj.get(name)
        if value is not None:
            values[name] = FIELDS[name](name, value)
    return schema.cls(**values)


class _RefOnly(msgspec.Struct):
    """Only a frame's ``id`` (every other field is skipped): see :func:`peek_ref`."""

    id: WireId | None = None


_json_ref = msgspec.json.Decoder(_RefOnly)
_msgpack_ref = msgspec.msgpack.Decoder(_RefOnly)


def peek_ref(payload: bytes | str, *, binary: bool) -> RequestId | None:
    """The request id of a frame that will not be handled (refused by the rate limit), so its
    refusal still names the request; None when the frame has no usable one. One pass of
    msgspec that builds nothing but the id."""
    try:
        if binary:
            raw = payload.encode("utf-8") if isinstance(payload, str) else payload
            return _msgpack_ref.decode(raw).id
        return _json_ref.decode(payload).id
    except Exception:  # not an object, or a malformed frame: no ref to give back
        return None


def ref_of(obj: Any) -> RequestId | None:
    """The client's request id of a raw decoded frame, if it is a usable one (for errors)."""
    if isinstance(obj, Mapping):
        ref = obj.get("id")
        if isinstance(ref, str) and len(ref) <= MAX_ID:
            return ref
        if isinstance(ref, int) and not isinstance(ref, bool) and abs(ref) <= MAX_VERSION:
            return ref
    return None

"""The client side of the wire: frames, typed events and the game snapshot. Pure (no I/O).

:func:`encode` / :func:`decode` turn message dicts into JSON text frames or msgpack binary
frames and back (PROTOCOL.md §1). :func:`parse_event` gives every server message a typed
view: :class:`Welcome`, :class:`ServerError`, :class:`TableEvent` (versioned table events
and the ``resume``/``sync``/``watching`` replies, with their :class:`TableState`) or
:class:`Reply` (everything else: ``ack``, ``pong``, ``table_created``, ``queued``...). Each
view keeps the decoded message as ``raw``, so nothing the server adds later is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.protocol import codec
from server.protocol.codec import WireFormat

Message = dict[str, Any]
WirePlay = tuple[tuple[int, int], ...]

TABLE_EVENTS = frozenset({
    "seated", "game_start", "rolled", "moved", "doubled", "taken", "dropped",
    "resign_offered", "resign_rejected", "timeout", "player_disconnected",
    "player_reconnected", "game_over", "match_over", "table_closed", "resumed",
})
"""The versioned table events of PROTOCOL.md §5 (each carries ``table`` and ``v``)."""
TABLE_REPLIES = frozenset({"resume", "sync", "watching", "table_rewound"})
"""Replies (and ``table_rewound``) that carry a table's whole ``state``."""


Format = WireFormat
"""The frame format: ``json`` (text frames) or ``msgpack`` (binary frames); the server's
own :class:`server.protocol.codec.WireFormat`."""


def encode(message: Mapping[str, Any], fmt: Format) -> bytes | str:
    """One frame for ``message`` with the server's codec: msgpack bytes (a binary frame) or
    compact JSON text (a text frame)."""
    data = codec.encode(message, fmt)
    return data if fmt is Format.MSGPACK else data.decode("utf-8")


def decode(frame: bytes | str) -> Message:
    """A received frame as a dict (binary = msgpack, text = JSON), read by the server's
    codec. Raises ValueError (:class:`server.protocol.errors.FrameError`) when the frame is
    not a document or not an object."""
    obj = codec.decode(frame, Format.MSGPACK if isinstance(frame, bytes) else Format.JSON)
    if not isinstance(obj, dict):
        raise ValueError(f"a server message is an object, got {type(obj).__name__}")
    return obj


def as_play(play: Sequence[Sequence[int]]) -> WirePlay:
    """A play as sent in ``legal_plays`` (lists of ``[from, to]``), as a hashable tuple."""
    return tuple((int(step[0]), int(step[1])) for step in play)


@dataclass(frozen=True, slots=True)
class GameState:
    """``state.game`` (PROTOCOL.md §6): the fields a client decides with; ``raw`` has all."""

    phase: str
    turn: int | None
    to_act: int | None
    board: tuple[int, ...]
    bar: tuple[int, int]
    off: tuple[int, int]
    dice: tuple[int, int] | None
    cube: int
    cube_owner: int | None
    can_double: bool
    legal_plays: tuple[WirePlay, ...]
    position_id: str
    raw: Message

    @classmethod
    def from_dict(cls, game: Mapping[str, Any]) -> GameState:
        dice = game.get("dice")
        return cls(
            phase=str(game["phase"]), turn=game.get("turn"), to_act=game.get("to_act"),
            board=tuple(game["board"]), bar=(game["bar"][0], game["bar"][1]),
            off=(game["off"][0], game["off"][1]),
            dice=None if dice is None else (dice[0], dice[1]),
            cube=int(game["cube"]), cube_owner=game.get("cube_owner"),
            can_double=bool(game.get("can_double")),
            legal_plays=tuple(as_play(p) for p in game.get("legal_plays") or ()),
            position_id=str(game.get("position_id", "")), raw=dict(game),
        )


@dataclass(frozen=True, slots=True)
class TableState:
    """The ``state`` object (PROTOCOL.md §6)."""

    status: str
    players: tuple[str | None, str | None]
    bots: tuple[bool, bool]
    game: GameState | None
    rating: Mapping[str, Any] | None
    raw: Message

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> TableState:
        seats = state.get("seats") or [None, None]
        players = tuple(None if s is None else s.get("player") for s in seats[:2])
        bots = tuple(bool(s and s.get("bot")) for s in seats[:2])
        game = state.get("game")
        return cls(
            status=str(state.get("status")), players=(players[0], players[1]),
            bots=(bots[0], bots[1]),
            game=None if game is None else GameState.from_dict(game),
            rating=state.get("rating"), raw=dict(state),
        )

    def side_of(self, player: str) -> int | None:
        for side, who in enumerate(self.players):
            if who == player:
                return side
        return None


@dataclass(frozen=True, slots=True)
class Event:
    """Any server message: ``type`` and the decoded message."""

    type: str
    raw: Message

    @property
    def ref(self) -> Any:
        return self.raw.get("ref")


@dataclass(frozen=True, slots=True)
class Welcome(Event):
    player: str
    name: str
    is_guest: bool
    is_bot: bool
    limits: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ServerError(Event):
    code: str
    message: str
    field: str | None
    table: str | None


@dataclass(frozen=True, slots=True)
class TableEvent(Event):
    """A versioned table event, or a ``resume``/``sync``/``watching`` reply (``v`` is then
    the table's current version). ``state`` is set for the events marked ● in §5."""

    table: str
    v: int

    @property
    def state(self) -> TableState | None:
        """The typed ``state`` (built on each access: most clients read ``raw`` only)."""
        state = self.raw.get("state")
        return TableState.from_dict(state) if isinstance(state, dict) else None


@dataclass(frozen=True, slots=True)
class Reply(Event):
    """Every other message (``ack``, ``pong``, ``table_created``, ``queued``, ``rating``...)."""


def parse_event(message: Message) -> Event:
    """The typed view of one decoded server message."""
    kind = str(message.get("type"))
    if kind == "welcome":
        return Welcome(kind, message, str(message.get("player")), str(message.get("name")),
                       bool(message.get("guest")), bool(message.get("bot")),
                       message.get("limits") or {})
    if kind == "error":
        return ServerError(kind, message, str(message.get("code")),
                           str(message.get("message", "")), message.get("field"),
                           message.get("table"))
    if (kind in TABLE_EVENTS or kind in TABLE_REPLIES) and "table" in message:
        return TableEvent(kind, message, str(message["table"]), int(message.get("v", 0)))
    return Reply(kind, message)


def default_decision(game: Mapping[str, Any]) -> Message:
    """The simplest action for the side to act in ``game`` (``state.game``): roll, play the
    first legal play, take a double, accept a resignation."""
    phase = game["phase"]
    if phase == "roll":
        return {"type": "roll"}
    if phase == "move":
        return {"type": "play", "play": game["legal_plays"][0]}
    if phase == "double_offered":
        return {"type": "take"}
    if phase == "resign_offered":
        return {"type": "accept_resign"}
    raise ValueError(f"nothing to do in phase {phase}")

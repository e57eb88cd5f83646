"""Messages between nodes, typed: one struct per op, one tagged union decoded in one place.

Nodes talk over Redis pub/sub (``server/cluster/bus.py``): each message is a msgpack map whose
``op`` names its type, the other keys its fields. The keys are the wire contract between
nodes; a node of another version in the same cluster (a rolling restart,
docs/operations.md) reads the same maps, so a field is added with a default and never
renamed. Fields left at their default are not sent.

To a node's own channel: ``cmd`` (a table command for the table's owner), ``deliver`` (a
reply or event for sockets on that node), ``attach`` / ``detach`` (where a seated player has
sockets), ``unwatch``, ``push`` (any message for a player), ``chat`` (a table's chat message),
``cancel_table`` (its tournament was cancelled), ``reattach`` (a peer had taken this node for
dead). On the broadcast channel, which every node hears (its sender too): ``revoke`` (tokens
ended), ``muted`` (whom a player mutes now), ``chat_mute`` (an operator's mute),
``taken_over`` (a node took a table over) and ``released`` (a draining node handed its
tables over).

:func:`encode` writes one; :func:`decode` reads one and raises ``ValueError`` for anything
that is not a known op with the fields it needs (the bus logs and drops it).
"""

from __future__ import annotations

from typing import Any

import msgspec

Frame = dict[str, Any]
"""A message for a client as the server sends it (a dict with a ``type``)."""


class Actor(msgspec.Struct, frozen=True):
    """Who sent a command, and where to answer: a socket ``conn`` on node ``node``."""

    player: str
    name: str
    is_guest: bool
    address: str
    node: str
    conn: str
    lean: bool = False  # the socket reads change-only table events (protocol 2)


class _Op(msgspec.Struct, frozen=True, tag_field="op", omit_defaults=True):
    """Base of the node messages: the tag is the ``op`` key."""


class Cmd(_Op, tag="cmd", frozen=True):
    """A table command (``msg``, in wire form) from ``actor``'s socket for the table's owner;
    ``hops``: times a node that no longer owns the table passed it on."""

    actor: Actor
    msg: Frame
    hops: int = 0


NO_FRAME = msgspec.Raw(b"")
"""A :class:`Deliver` without a ``lean`` form."""
_NIL = msgspec.Raw(b"\xc0")


class Deliver(_Op, tag="deliver", frozen=True):
    """``frame`` for every socket of ``player`` on the receiving node and for its sockets
    ``conns``; ``lean``: the change-only form of a table event, when it has one (else
    :data:`NO_FRAME`). Both are carried packed, as the msgpack of the frame's map (the same
    bytes on the wire as the map itself): the sender encodes each once for its own sockets
    and the bus, the receiver writes them to msgpack sockets without decoding them."""

    frame: msgspec.Raw
    player: str | None = None
    conns: list[str] = []
    lean: msgspec.Raw = NO_FRAME

    def __post_init__(self) -> None:
        # Checked as the map it was (decoding a field as Raw checks only that it is msgpack).
        lean = self.lean
        if not _is_map(self.frame) or not (lean in (NO_FRAME, _NIL) or _is_map(lean)):
            raise ValueError("a deliver's frame and lean must be maps")

    def lean_packed(self) -> bytes | None:
        """The change-only form's msgpack, None when there is none."""
        lean = self.lean
        return None if lean in (NO_FRAME, _NIL) else bytes(lean)


def _is_map(packed: msgspec.Raw) -> bool:
    """Whether ``packed`` is a msgpack map (fixmap, map 16 or map 32)."""
    view = memoryview(packed)
    return bool(view) and (0x80 <= view[0] <= 0x8F or view[0] in (0xDE, 0xDF))


class _Head(msgspec.Struct):
    type: Any = None


_head = msgspec.msgpack.Decoder(_Head)


def frame_type(packed: msgspec.Raw | bytes) -> Any:
    """The ``type`` of a packed frame, read without decoding the rest."""
    return _head.decode(packed).type


class Push(_Op, tag="push", frozen=True):
    """Any message for every socket of ``player`` on the receiving node."""

    player: str
    frame: Frame


class Chat(_Op, tag="chat", frozen=True):
    """A table's chat message for the receiving node's sockets of ``players`` and its
    sockets ``conns`` (watchers); sockets whose player muted its author are left out."""

    frame: Frame
    players: list[str] = []
    conns: list[str] = []


class Attach(_Op, tag="attach", frozen=True):
    """``actor``'s player has a socket on ``actor.node`` now (their first there)."""

    table: str
    actor: Actor


class Detach(_Op, tag="detach", frozen=True):
    """``player`` has no socket left on ``node``."""

    table: str
    player: str
    node: str


class Unwatch(_Op, tag="unwatch", frozen=True):
    """The socket ``conn`` on ``node`` stops watching ``table``."""

    table: str
    node: str
    conn: str


class CancelTable(_Op, tag="cancel_table", frozen=True):
    """``table``'s tournament was cancelled: close it."""

    table: str


class Reattach(_Op, tag="reattach", frozen=True):
    """A peer had taken the receiving node for dead: attach its seated players again."""


class Revoke(_Op, tag="revoke", frozen=True):
    """Close the sockets of these tokens (by digest), telling them ``reason``."""

    tokens: list[str]
    reason: str = "revoked"


class Muted(_Op, tag="muted", frozen=True):
    """``player`` mutes the players ``muted`` now (on all their sockets)."""

    player: str
    muted: list[str]


class ChatMute(_Op, tag="chat_mute", frozen=True):
    """An operator muted ``player``'s chat until ``until`` (Unix s; 0: lifted)."""

    player: str
    until: float


class TakenOver(_Op, tag="taken_over", frozen=True):
    """``node`` took ``table`` over; ``players`` are seated at it."""

    table: str
    node: str
    players: list[str] = []


class Released(_Op, tag="released", frozen=True):
    """``node`` (draining) handed its tables over: claim them now."""

    node: str


class Summon(_Op, tag="summon", frozen=True):
    """A sibling worker (the sender) owns ``table``, where the socket ``conn`` of ``player``
    on the receiving worker is seated (``seated``) or watches: hand that socket over to the
    sender (``server/net/socket_moves.py``), so its messages stop crossing between them."""

    node: str
    player: str
    conn: str
    table: str
    seated: bool = True


class MoveAsk(_Op, tag="move_ask", frozen=True):
    """The sending worker is about to hand over its socket ``actor.conn`` (summoned for
    ``table``): make ready a socket for it and answer :class:`MoveReady`. The fields are
    what the socket carries: who authenticated on it, its session and what it watches;
    ``last_there``: it is its player's last socket on the sender."""

    actor: Actor
    table: str
    seated: bool
    is_bot: bool
    format: str
    protocol: int
    keepalive: bool
    token_digest: str | None
    expires_in: float | None
    delivered: list[str]
    watching: list[str]
    last_there: bool


class MoveReady(_Op, tag="move_ready", frozen=True):
    """The answer of worker ``node`` to :class:`MoveAsk` for the receiver's socket ``old``:
    its id on ``node`` (``new``), or ``""`` when ``node`` takes no socket now."""

    node: str
    old: str
    new: str


class MoveCancel(_Op, tag="move_cancel", frozen=True):
    """The hand-over of the socket ``old`` of ``node`` (the sender) is off: forget what
    was made ready for it."""

    node: str
    old: str


NodeMessage = (Cmd | Deliver | Push | Chat | Attach | Detach | Unwatch | CancelTable
               | Reattach | Revoke | Muted | ChatMute | TakenOver | Released | Summon
               | MoveAsk | MoveReady | MoveCancel)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(NodeMessage)


def encode(message: NodeMessage) -> bytes:
    """``message`` as the msgpack map the bus publishes."""
    return _encoder.encode(message)


def decode(data: bytes | memoryview) -> NodeMessage:
    """The node message in ``data``. Raises ``ValueError`` (``msgspec.ValidationError`` or
    ``msgspec.DecodeError``, both subclasses) when it is not msgpack, names no known op, or
    lacks a field its op needs."""
    return _decoder.decode(data)

"""The messages between nodes (server/protocol/node_messages.py): the maps on the wire keep
their keys (a node of another version reads them during a rolling restart), and anything
that is not a known op with the fields it needs is refused by the one decoder."""

from __future__ import annotations

from typing import Any

import msgpack
import msgspec
import pytest

from server.protocol import node_messages as ops


def packed(frame: dict[str, Any]) -> msgspec.Raw:
    """A frame as a ``deliver`` carries it: its msgpack (the same bytes as the map)."""
    return msgspec.Raw(msgpack.packb(frame))


ACTOR = ops.Actor("alice", "Alice", False, "10.0.0.1", "n1", "c1")
ACTOR_MAP = {"player": "alice", "name": "Alice", "is_guest": False, "address": "10.0.0.1",
             "node": "n1", "conn": "c1", "lean": False}

WIRE: list[tuple[ops.NodeMessage, dict[str, Any]]] = [
    (ops.Cmd(actor=ACTOR, msg={"type": "roll", "table": "t"}),
     {"op": "cmd", "actor": ACTOR_MAP, "msg": {"type": "roll", "table": "t"}}),
    (ops.Cmd(actor=ACTOR, msg={"type": "roll", "table": "t"}, hops=1),
     {"op": "cmd", "actor": ACTOR_MAP, "msg": {"type": "roll", "table": "t"}, "hops": 1}),
    (ops.Deliver(player="bob", frame=packed({"type": "x"}), lean=packed({"type": "y"})),
     {"op": "deliver", "player": "bob", "frame": {"type": "x"}, "lean": {"type": "y"}}),
    (ops.Deliver(conns=["c1", "c2"], frame=packed({"type": "x"})),
     {"op": "deliver", "conns": ["c1", "c2"], "frame": {"type": "x"}}),
    (ops.Push(player="bob", frame={"type": "x"}),
     {"op": "push", "player": "bob", "frame": {"type": "x"}}),
    (ops.Chat(players=["bob"], conns=["c1"], frame={"type": "chat"}),
     {"op": "chat", "players": ["bob"], "conns": ["c1"], "frame": {"type": "chat"}}),
    (ops.Attach(table="t", actor=ACTOR), {"op": "attach", "table": "t", "actor": ACTOR_MAP}),
    (ops.Detach(table="t", player="bob", node="n2"),
     {"op": "detach", "table": "t", "player": "bob", "node": "n2"}),
    (ops.Unwatch(table="t", node="n2", conn="c9"),
     {"op": "unwatch", "table": "t", "node": "n2", "conn": "c9"}),
    (ops.CancelTable(table="t"), {"op": "cancel_table", "table": "t"}),
    (ops.Reattach(), {"op": "reattach"}),
    (ops.Revoke(tokens=["d1"], reason="logout"),
     {"op": "revoke", "tokens": ["d1"], "reason": "logout"}),
    (ops.Muted(player="bob", muted=["eve"]), {"op": "muted", "player": "bob", "muted": ["eve"]}),
    (ops.ChatMute(player="bob", until=12.5), {"op": "chat_mute", "player": "bob", "until": 12.5}),
    (ops.TakenOver(table="t", node="n2", players=["bob"]),
     {"op": "taken_over", "table": "t", "node": "n2", "players": ["bob"]}),
    (ops.Released(node="n2"), {"op": "released", "node": "n2"}),
]


@pytest.mark.parametrize(("message", "wire"), WIRE)
def test_each_op_keeps_its_keys(message: ops.NodeMessage, wire: dict[str, Any]) -> None:
    assert msgpack.unpackb(ops.encode(message)) == wire
    assert ops.decode(msgpack.packb(wire)) == message


def test_fields_a_node_left_out_take_their_defaults() -> None:
    # As a node sends them without the optional keys (or with ``lean`` set to nil).
    for extra in ({}, {"lean": None}):
        deliver = ops.decode(msgpack.packb({"op": "deliver", "player": "p", "frame": {},
                                            **extra}))
        assert isinstance(deliver, ops.Deliver) and deliver.lean_packed() is None
        assert bytes(deliver.frame) == msgpack.packb({})
    assert ops.decode(msgpack.packb({"op": "taken_over", "table": "t", "node": "n"})) \
        == ops.TakenOver(table="t", node="n")
    actor = dict(ACTOR_MAP)
    del actor["lean"]
    assert ops.decode(msgpack.packb({"op": "attach", "table": "t", "actor": actor})) \
        == ops.Attach(table="t", actor=ACTOR)


@pytest.mark.parametrize("data", [
    b"", b"\xc1", msgpack.packb([1]), msgpack.packb({}), msgpack.packb({"op": 7}),
    msgpack.packb({"op": "nonsense"}), msgpack.packb({"op": "cmd"}),
    msgpack.packb({"op": "cmd", "actor": "x", "msg": 5}),
    msgpack.packb({"op": "cmd", "actor": {"player": "x"}, "msg": {}}),
    msgpack.packb({"op": "deliver", "frame": [1]}),
    msgpack.packb({"op": "deliver", "conns": 5, "frame": {"type": "pong"}}),
    msgpack.packb({"op": "push", "player": None, "frame": None}),
    msgpack.packb({"op": "detach", "table": {"x": 1}, "player": None, "node": "n"}),
    msgpack.packb({"op": "unwatch", "table": "t", "node": 1, "conn": []}),
    msgpack.packb({"op": "revoke", "tokens": "abc"}),
    msgpack.packb({"op": "revoke", "tokens": [1, None, {}]}),
    msgpack.packb({"op": "taken_over", "table": ["x"], "node": "n"}),
    msgpack.packb({"op": "released"}),
])
def test_a_message_that_does_not_fit_its_op_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        ops.decode(data)

"""The local link between sibling workers (``server/cluster/link.py``) over real Unix sockets:
messages arrive in order, a restarted peer is reached again; and the frames a batch of node
messages writes to one socket leave in one write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server_helpers import RunningServer, connect, eventually, register

from server.cluster.link import LocalLink
from server.lobby.delivery import packed
from server.protocol import node_messages as ops
from server.protocol.node_messages import NodeMessage


class Inbox:
    def __init__(self) -> None:
        self.batches: list[list[NodeMessage]] = []

    def __call__(self, messages: list[NodeMessage]) -> None:
        self.batches.append(messages)

    @property
    def messages(self) -> list[NodeMessage]:
        return [m for batch in self.batches for m in batch]


def deliver(i: int) -> ops.Deliver:
    return ops.Deliver(conns=["c"], frame=packed({"type": "n", "i": i}))


async def test_messages_arrive_in_order_and_a_restarted_peer_is_reached(tmp_path: Path) -> None:
    peers = ("w-1", "w-2")
    inbox_a, inbox_b = Inbox(), Inbox()
    a = LocalLink("w-1", peers, tmp_path, inbox_a)
    b = LocalLink("w-2", peers, tmp_path, inbox_b)
    await a.start()
    await b.start()
    try:
        await eventually(lambda: a.is_up("w-2") and b.is_up("w-1"))
        for i in range(300):
            assert a.send("w-2", ops.encode(deliver(i)))
        assert b.send("w-1", ops.encode(ops.Reattach()))
        await eventually(lambda: len(inbox_b.messages) == 300 and bool(inbox_a.messages))
        assert inbox_b.messages == [deliver(i) for i in range(300)]
        assert len(inbox_b.batches) < 300  # one loop turn's messages leave in one write
        assert inbox_a.messages == [ops.Reattach()]

        await b.stop()  # the peer goes away: the link says so, the caller uses Redis
        await eventually(lambda: not a.is_up("w-2"))
        assert not a.send("w-2", ops.encode(deliver(0)))

        inbox_b = Inbox()
        b = LocalLink("w-2", peers, tmp_path, inbox_b)  # started again on the same path
        await b.start()
        await eventually(lambda: a.is_up("w-2"))
        assert a.send("w-2", ops.encode(deliver(7)))
        await eventually(lambda: inbox_b.messages == [deliver(7)])
    finally:
        await a.stop()
        await b.stop()


class CountingTransport:
    """The socket's real transport, counting the writes."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.real.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


async def test_a_batch_of_bus_messages_writes_once_per_socket(
        start_server: Any) -> None:
    node: RunningServer = await start_server()
    alice = await connect(node, await register(node, "alice"))
    conn = next(iter(node.hub.by_player["alice"]))
    counting = CountingTransport(conn.transport)
    conn.transport = counting  # type: ignore[assignment]
    batch: list[NodeMessage] = [
        ops.Deliver(conns=[conn.id], frame=packed({"type": "note", "i": 1})),
        ops.Deliver(player="alice", frame=packed({"type": "note", "i": 2}),
                    lean=packed({"type": "note", "i": 2, "lean": True})),
        ops.Push(player="alice", frame={"type": "note", "i": 3}),
        ops.Chat(players=["alice"], frame={"type": "note", "i": 4, "from": "bob"}),
    ]
    await node.lobby.on_node_messages(batch)
    assert counting.writes == 1
    for i in range(1, 5):
        assert (await alice.expect("note"))["i"] == i
    await node.lobby.on_node_messages([ops.Push(player="alice", frame={"type": "note"})])
    assert counting.writes == 2
    await alice.close()

"""A node message that nobody heard is not lost in silence (``server/cluster/bus.py``).

``PUBLISH`` says how many subscribers got a message; one for a node whose listener is not
subscribed (reconnecting after a Redis restart, say) reached nobody. The bus publishes it
again, in order with what follows it, until the node listens; past ``bus_unheard_for`` it
gives it up, and a forwarded request given up is answered ``unavailable`` with
``retry_after`` at once (before this, it waited ``forward_timeout``, 30 s, while the client
gave up after its own 10 s: the race that lost a ``join`` after an embedded Redis restart).

Real Redis, real nodes; a node's listener is taken down by unsubscribing its pub/sub
connection from its channel (what a reconnecting listener is: not subscribed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis
from server_helpers import RunningServer, connect, eventually, register

from server.client import Client as LibraryClient
from server.client import RequestFailed
from server.cluster.bus import NodeBus
from server.lobby.delivery import packed
from server.protocol import node_messages as ops
from server.protocol.node_messages import NodeMessage
from server.store.keys import Keys


def deliver(i: int) -> ops.Deliver:
    return ops.Deliver(conns=["c"], frame=packed({"type": "n", "i": i}))


class Inbox:
    def __init__(self) -> None:
        self.messages: list[NodeMessage] = []

    async def __call__(self, batch: list[NodeMessage]) -> None:
        self.messages.extend(batch)


async def test_a_message_nobody_heard_is_published_again_in_order(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    keys = Keys(key_prefix)
    sender = NodeBus(redis_client, keys, "n-a", unheard_for=60.0, unheard_resend=0.05)
    receiver = NodeBus(redis_client, keys, "n-b")
    unheard: list[Any] = []
    sender.on_unheard = unheard.append
    inbox = Inbox()
    await sender.start(Inbox())
    try:
        sender.send("n-b", deliver(0), token=("conn", 1))  # n-b does not listen yet
        await eventually(lambda: sender.unheard_waiting == 1)
        sender.send("n-b", deliver(1))  # behind the held one, not before it
        assert sender.unheard_waiting == 2
        await receiver.start(inbox)
        await eventually(lambda: len(inbox.messages) == 2)
        assert inbox.messages == [deliver(0), deliver(1)]
        await eventually(lambda: sender.unheard_waiting == 0)
        sender.send("n-b", deliver(2))  # heard at once now
        await eventually(lambda: len(inbox.messages) == 3)
        assert inbox.messages[2] == deliver(2)
        assert unheard == []
    finally:
        await sender.stop()
        await receiver.stop()


async def test_a_message_nobody_hears_is_given_up_and_its_token_told(
        redis_client: aioredis.Redis, key_prefix: str) -> None:
    keys = Keys(key_prefix)
    sender = NodeBus(redis_client, keys, "n-a", unheard_for=0.3, unheard_resend=0.05)
    unheard: list[Any] = []
    sender.on_unheard = unheard.append
    await sender.start(Inbox())
    try:
        sender.send("n-gone", deliver(0), token=("conn", 7))
        sender.send("n-gone", deliver(1))  # no token: given up with a log line
        await eventually(lambda: unheard == [("conn", 7)])
        assert sender.unheard_waiting == 0
    finally:
        await sender.stop()


async def _listen(node: RunningServer, on: bool) -> None:
    """Take ``node``'s listener off its channel, or put it back."""
    bus = node.lobby.bus
    channel = Keys(node.settings.key_prefix).node_channel(bus.node_id)
    pubsub = bus._pubsub
    await (pubsub.subscribe(channel) if on else pubsub.unsubscribe(channel))


@pytest.mark.parametrize("comes_back", [True, False])
async def test_a_join_forwarded_while_the_owner_does_not_listen_gets_an_answer(
        start_server: Any, comes_back: bool) -> None:
    one: RunningServer = await start_server(node_id="n1")
    # n2 sends the join: its bus holds what nobody heard.
    two: RunningServer = await start_server(node_id="n2",
                                            bus_unheard_for=60.0 if comes_back else 0.3)
    alice = await connect(one, await register(one, "alice"))
    bob = await connect(two, await register(two, "bob"))
    try:
        created = await alice.request({"type": "create_table", "mode": "private"})
        table = created["table"]
        assert one.lobby.tables.get(table) is not None
        await _listen(one, False)  # n1, the owner, is not listening: nobody hears the join
        join = asyncio.ensure_future(bob.request({"type": "join", "table": table}))
        if comes_back:
            await eventually(lambda: two.lobby.bus.unheard_waiting >= 1)
            await _listen(one, True)
            assert (await join)["type"] != "error"  # published again once n1 listened
        else:
            refused = await join  # answered at once, not after forward_timeout (30 s)
            assert refused["type"] == "error" and refused["code"] == "unavailable", refused
            assert refused["retry_after"] >= 1
            await _listen(one, True)
            assert (await bob.request({"type": "join", "table": table}))["type"] != "error"
        await alice.expect("game_start")
    finally:
        await alice.close()
        await bob.close()


async def test_the_client_library_sends_a_request_refused_unavailable_again(
        start_server: Any) -> None:
    one: RunningServer = await start_server(node_id="n1")
    two: RunningServer = await start_server(node_id="n2", bus_unheard_for=0.3)
    alice = await connect(one, await register(one, "alice"))
    seen: list[dict[str, Any]] = []
    bob = await LibraryClient.connect(two.ws_url, await register(two, "bob"),
                                      on_message=seen.append, auto_reconnect=False)
    try:
        table = (await alice.request({"type": "create_table", "mode": "private"}))["table"]
        await _listen(one, False)
        join = asyncio.ensure_future(bob.join(table))
        await eventually(lambda: any(m.get("code") == "unavailable" for m in seen))
        await _listen(one, True)  # back before the refusal's retry_after (1 s) is over
        answer = await join  # the library waited retry_after and sent the join again
        assert answer["type"] != "error"
        joins = [m for m in seen if m.get("code") == "unavailable"]
        assert len(joins) == 1 and joins[0]["retry_after"] >= 1
        await alice.expect("game_start")
    finally:
        await alice.close()
        await bob.close()


async def test_the_client_library_gives_up_after_its_retries(start_server: Any) -> None:
    one: RunningServer = await start_server(node_id="n1")
    two: RunningServer = await start_server(node_id="n2", bus_unheard_for=0.2)
    alice = await connect(one, await register(one, "alice"))
    seen: list[dict[str, Any]] = []
    bob = await LibraryClient.connect(two.ws_url, await register(two, "bob"),
                                      on_message=seen.append, auto_reconnect=False,
                                      unavailable_retries=2)
    try:
        table = (await alice.request({"type": "create_table", "mode": "private"}))["table"]
        await _listen(one, False)  # and never back
        with pytest.raises(RequestFailed) as refused:
            await bob.join(table)
        assert refused.value.error.raw["code"] == "unavailable"
        assert [m.get("code") for m in seen if m.get("type") == "error"] == ["unavailable"] * 3
    finally:
        await _listen(one, True)
        await alice.close()
        await bob.close()

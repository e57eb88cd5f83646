"""Store before announce: a table event, and a reply carrying the table's ``v``,
reach clients only once Redis has stored the event; the reply comes after the event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from server_helpers import StartServer, connect, register, scripted, seat_two

from server.store import batch as batch_module


async def test_a_move_is_announced_and_acknowledged_only_once_stored(
    start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = await start_server(dice_factory=scripted(3))
    a = await connect(node, await register(node, "alice"))
    b = await connect(node, await register(node, "bob"))
    table, start = await seat_two(node, a, b)
    state = start["state"]
    side = state["game"]["to_act"]
    mover = (a, b)[side]
    plays = state["game"]["legal_plays"]
    assert plays, state["game"]

    gate = asyncio.Event()
    execute = batch_module.Batch.execute

    async def held(self: Any, redis: Any) -> list[Any]:
        await gate.wait()
        return await execute(self, redis)

    monkeypatch.setattr(batch_module.Batch, "execute", held)
    seen = len(mover.messages)
    await mover.send({"type": "play", "table": table, "play": plays[0], "id": 99})
    await asyncio.sleep(0.2)  # applied at once, but not stored: nothing is said yet
    assert node.lobby.tables[table].version == start["v"] + 1
    assert mover.messages[seen:] == []
    gate.set()
    ack = await mover.expect("ack", ref=99)
    kinds = [m["type"] for m in mover.messages[seen:]]
    assert kinds == ["moved", "ack"], kinds
    assert ack["v"] == start["v"] + 1

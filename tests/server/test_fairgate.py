"""The fair gate in front of password hashing: slots served round-robin between clients."""

from __future__ import annotations

import asyncio

import pytest

from server.store.fairgate import FairGate, GateFull


async def test_waiting_work_is_served_round_robin_between_clients() -> None:
    gate = FairGate(slots=1, per_client=10, max_waiting=100)
    order: list[str] = []
    release = asyncio.Event()

    async def work(client: str, tag: str) -> None:
        async with gate.slot(client):
            order.append(tag)
            if tag == "first":
                await release.wait()

    first = asyncio.ensure_future(work("flood", "first"))
    await asyncio.sleep(0)
    flood = [asyncio.ensure_future(work("flood", f"f{i}")) for i in range(3)]
    await asyncio.sleep(0)
    honest = [asyncio.ensure_future(work(c, c)) for c in ("alice", "bob")]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, *flood, *honest)
    # The flood queued first, yet each other client gets the next turn.
    assert order == ["first", "f0", "alice", "bob", "f1", "f2"]
    assert gate.running == 0


async def test_a_client_holds_at_most_per_client_places() -> None:
    gate = FairGate(slots=1, per_client=2, max_waiting=100)
    hold = asyncio.Event()

    async def work(client: str) -> None:
        async with gate.slot(client):
            await hold.wait()

    tasks = [asyncio.ensure_future(work("flood")) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(GateFull) as refused:
        async with gate.slot("flood"):
            pass
    assert refused.value.per_client
    other = asyncio.ensure_future(work("other"))  # another client still gets a place
    await asyncio.sleep(0)
    hold.set()
    await asyncio.gather(*tasks, other)


async def test_a_cancelled_waiter_gives_its_place_back() -> None:
    gate = FairGate(slots=1, per_client=5, max_waiting=100)
    hold = asyncio.Event()

    async def work(client: str) -> str:
        async with gate.slot(client):
            await hold.wait()
        return client

    running = asyncio.ensure_future(work("a"))
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(work("b"))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.sleep(0)
    hold.set()
    assert await running == "a"
    assert await work("c") == "c"
    assert gate.running == 0 and gate._waiting == 0

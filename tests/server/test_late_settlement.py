"""A settlement that fails at a game's end is made later in the background
(``server/lobby/finisher.py``, ``_settle_late``); its rating events, like those of a game's end,
are told only once the settlement is on the replicas (``Replicas.replicated``): a failover of
the ladders' master cannot take back a rating a player was told.

An in-process node on the test's Redis; the rating store's ``settle`` fails for real (it raises
as a lost connection would) at the game's end, and the replica wait is watched."""

from __future__ import annotations

from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from server_helpers import StartServer, connect, play_out, register, scripted, seat_two

from server.app import RATINGS
from server.lobby.finisher import SETTLE_ATTEMPTS


async def test_a_rating_settled_late_is_told_once_it_is_on_the_replicas(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(3))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, start = await seat_two(server, a, b)
    assert start["rating"]["rated"] is True, start["rating"]

    steps: list[str] = []
    store = server.app[RATINGS]
    settle = store.settle

    async def failing_settle(*args: Any, **kwargs: Any) -> Any:
        if steps.count("settle failed") < SETTLE_ATTEMPTS:
            steps.append("settle failed")
            raise RedisConnectionError("connection lost (the ladders' master fails over)")
        answer = await settle(*args, **kwargs)
        steps.append("settled")
        return answer

    replicas = server.lobby.persistence.replicas
    replicated = replicas.replicated

    async def watched(*args: Any, **kwargs: Any) -> None:
        await replicated(*args, **kwargs)
        steps.append("replicated")

    store.settle = failing_settle  # type: ignore[method-assign]
    replicas.replicated = watched  # type: ignore[method-assign]
    await play_out({0: a, 1: b}, table)
    for client in (a, b):
        await client.expect("rating", timeout=20.0)
    # Settled in the background after the game's end, then on the replicas, then told.
    assert steps.count("settle failed") == SETTLE_ATTEMPTS and "settled" in steps, steps
    assert "replicated" in steps[steps.index("settled"):], steps

"""A busy node is never taken for a dead one, at the suite's sizes
(``busy_scenario.SUITE``; ``bench/busy_node.py`` runs the issue's sizes by hand).

Two real nodes on the test's Redis with the server's default limits and timings (a third,
idle ``setup`` node with the chat rate raised only writes the large record and the accounts),
four live paced games (players on both nodes, two tables crossing nodes), and heavy work
offered to ``n1``: an ``ack_events``/``watch`` flood from 24 sockets at 28 messages a second
for 4 s; 16 new games arriving at 4 a second, each played flat out (far below twice the
node's paced capacity, which no test process on two cores can offer: here a burst of new
games, checked for its refusals and its effect on the seated players; the bench offers
more); 30 concurrent reviews of a game never reviewed; 100 concurrent reads of a ~1.9 MB
record (1,000 chat lines) from one address; each alone, then all together.

Required in every phase: no table taken over from a live node, no node declared gone, no
``held`` (nor ``unavailable``) while Redis answers, the seated players' ping p99 under
250 ms, ``n1``'s memory levelling off under a sustained load (flood, overload), and every
refusal ``busy``/``rate_limited`` with ``retry_after`` (HTTP 429/503 with ``Retry-After``).

Every phase runs before the verdict, so a failure lists what broke in each phase; the
figures of every phase are printed (pytest shows them on failure).
"""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from busy_scenario import PHASES, SUITE, build, run, summary, violations
from nodes import Cluster


@pytest.mark.timeout(300)
async def test_a_busy_node_is_never_taken_for_a_dead_one(
    cluster: Cluster, redis_client: aioredis.Redis
) -> None:
    phases = list(PHASES)
    loop = asyncio.get_running_loop()
    started = loop.time()
    world = await build(cluster, redis_client, SUITE, phases)
    print(f"set up in {loop.time() - started:.1f} s")
    print(f"record {world.game_id}: {world.record_bytes} bytes")
    records = await run(world, phases)
    print(summary(records))
    broken = [v for rec in records for v in violations(rec)]
    assert not broken, "\n".join(broken)

"""The node's pulse thread (server/cluster/pulse.py) against a real Redis: busy is not dead.

The event loop of the test is blocked by a busy loop (pure Python, holding the GIL between
switches like any long request); meanwhile the thread beats the heart and probes Redis, and
the loop's lag is seen from the thread. A loop stuck past ``stuck_limit`` lets the heartbeat
end there; the next heartbeat after it is late. A Redis that does not answer is seen away.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from hardening_helpers import free_port

from server.cluster.pulse import NodePulse, PulseNews
from server.store.keys import Keys


def busy(seconds: float, pulse: NodePulse) -> tuple[float, int]:
    """Keep the loop busy for ``seconds``: the most the pulse saw it stuck, and how many
    heartbeats it wrote meanwhile."""
    beats = pulse.beats
    most = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        most = max(most, pulse.stuck_for())
    return most, pulse.beats - beats


def beat_after_stuck(pulse: NodePulse, seconds: float, most: float = 10.0) -> int:
    """Keep the loop busy for ``seconds``, and on (at most ``most`` seconds) until the
    thread has written a heartbeat while it saw the loop stuck (a loaded machine may run the
    thread late): the heartbeats written meanwhile."""
    beats = pulse.beats
    seen: int | None = None
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < most:
        if seen is None and pulse.stuck_for() >= 0.2:
            seen = pulse.beats
        if elapsed >= seconds and seen is not None and pulse.beats > seen:
            break
    return pulse.beats - beats


@pytest.fixture
async def pulses(redis_url: str, key_prefix: str) -> AsyncIterator[list[NodePulse]]:
    made: list[NodePulse] = []
    yield made
    for pulse in made:
        await pulse.stop()


def make(redis_url: str, key_prefix: str, made: list[NodePulse], *, stuck_limit: float = 30.0,
         lease_ttl: float = 1.0, node: str = "n1") -> tuple[NodePulse, list[PulseNews]]:
    pulse = NodePulse(redis_url, Keys(key_prefix), node, lease_ttl=lease_ttl, lease_renew=0.25,
                      check_interval=0.1, stuck_limit=stuck_limit)
    news: list[PulseNews] = []
    pulse.start(news.append)
    made.append(pulse)
    return pulse, news


async def alive_until(redis: aioredis.Redis, keys: Keys, node: str) -> float:
    """The node's heartbeat's end in the node set (Redis time, seconds)."""
    score = await redis.zscore(keys.nodes, node)
    assert score is not None
    return float(score) / 1000


async def redis_now(redis: aioredis.Redis) -> float:
    seconds, micros = await redis.time()
    return float(seconds) + float(micros) / 1e6


async def test_a_busy_loop_keeps_its_heartbeat_and_its_view_of_redis(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis, pulses: list[NodePulse]
) -> None:
    pulse, news = make(redis_url, key_prefix, pulses)
    for _ in range(100):
        if pulse.beats >= 1 and news:
            break
        await asyncio.sleep(0.05)
    assert news and news[-1].up
    most, beats = busy(2.5, pulse)
    assert most >= 2.0, "the thread did not see the loop stuck"
    assert beats >= 3, "no heartbeat while the loop was busy"
    assert pulse.answered_since(time.monotonic() - 1.0)
    keys = Keys(key_prefix)
    assert await alive_until(redis_client, keys, "n1") > await redis_now(redis_client)
    await asyncio.sleep(0.3)
    assert all(n.up for n in news), "a busy loop was taken for a Redis outage"
    assert not any(n.late for n in news)
    assert pulse.stuck_for() < 1.0
    # The loop's lag was published with a heartbeat (ms).
    lag = await redis_client.hget(keys.node_lag, "n1")  # type: ignore[misc]
    assert lag is not None


async def test_a_loop_stuck_past_the_limit_lets_the_heartbeat_end(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis, pulses: list[NodePulse]
) -> None:
    pulse, news = make(redis_url, key_prefix, pulses, stuck_limit=0.8, lease_ttl=3.0)
    for _ in range(100):
        if pulse.beats >= 1:
            break
        await asyncio.sleep(0.05)
    stuck_at = await redis_now(redis_client)
    # Busy past the limit, with a heartbeat written while the thread saw the loop stuck:
    # it is written to end at the limit.
    beats = beat_after_stuck(pulse, 2.5)
    keys = Keys(key_prefix)
    until = await alive_until(redis_client, keys, "n1")
    # Written to end at the limit (with some slack), not lease_ttl after its last beat.
    assert until <= stuck_at + 0.8 + 0.6, (until - stuck_at, beats)
    assert until < await redis_now(redis_client), "the stuck node still counts as alive"
    for _ in range(100):  # back: the next heartbeat finds the node's time had run out
        if any(n.late for n in news):
            break
        await asyncio.sleep(0.05)
    assert any(n.late for n in news)
    assert await alive_until(redis_client, keys, "n1") > await redis_now(redis_client)


async def test_a_redis_that_does_not_answer_is_seen_away(
    key_prefix: str, pulses: list[NodePulse]
) -> None:
    pulse, news = make(f"redis://127.0.0.1:{free_port()}/0", key_prefix, pulses)
    for _ in range(100):
        if news:
            break
        await asyncio.sleep(0.05)
    assert news and not news[-1].up
    assert not pulse.answered_since(-float("inf"))
    assert pulse.beats == 0

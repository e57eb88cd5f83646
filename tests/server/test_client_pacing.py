"""Our clients keep the rules they ask others to keep: the client library paces every frame
to the server's message rate (``server.client.pacing``), sends a request refused
``rate_limited`` again after its ``retry_after``, and the bots and the server's computer
player play whole games against a server with its default limits, no decision dropped.

Real servers on loopback, real Redis; no test asserts a wall-clock time.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from server_helpers import StartServer, connect, guest

from server.bot.player import BotPlayer
from server.bot.strategy import Level
from server.client import Client, RequestFailed, ServerError, guest_token
from server.client.pacing import BURST_SHARE, RATE_SHARE, SendPace
from server.config import Settings
from server.metrics import Metrics


def refused_messages(metrics: Metrics) -> float:
    """The node's count of socket messages refused by the rate limit."""
    return float(metrics.refusals.labels("socket_messages").value)


# --- the budget, pure ---------------------------------------------------------------------


def test_the_budget_is_a_share_of_the_servers_burst_then_of_its_rate() -> None:
    pace = SendPace(now=0.0)
    burst = math.floor(Settings().rate_burst * BURST_SHARE)
    assert [pace.take(0.0) for _ in range(burst)] == [0.0] * burst
    wait = pace.take(0.0)
    assert wait == pytest.approx(1 / (Settings().rate_limit * RATE_SHARE))
    assert pace.take(wait) == 0.0  # the token came back in time
    assert pace.take(wait) > 0


def test_the_budget_adopts_the_limits_the_server_announces() -> None:
    pace = SendPace(now=0.0)
    pace.configure({"rate_limit": 5, "rate_burst": 3, "sync_events_per_message": 10})
    assert pace.burst == 2 and pace.rate == pytest.approx(5 * RATE_SHARE)
    assert [pace.take(0.0) for _ in range(3)][:2] == [0.0, 0.0]
    # Nonsense keeps the values in effect.
    pace.configure({"rate_limit": "fast", "rate_burst": -1, "sync_events_per_message": True})
    assert pace.burst == 2 and pace.sync_events_per_message == 10
    pace.restart(100.0)
    pace.charge_sync(40, 100.0)  # 4 messages' worth, as the server charges the socket
    assert pace.tokens == pytest.approx(2 - 4)
    assert pace.take(100.0) == pytest.approx(3 / (5 * RATE_SHARE))


def test_a_refusal_empties_the_budget() -> None:
    pace = SendPace(now=0.0)
    pace.refused(0.0)
    assert pace.take(0.0) > 0


# --- the library on a live server ------------------------------------------------------------


async def test_a_burst_of_requests_is_paced_and_never_refused(start_server: StartServer) -> None:
    server = await start_server()  # the default message rate: 30/s, bursts of 60
    assert (server.settings.rate_limit, server.settings.rate_burst) == (30.0, 60)
    client = await Client.connect(server.ws_url, guest=True)
    try:
        assert client.welcome is not None
        limits = client.welcome.limits
        assert (limits["rate_limit"], limits["rate_burst"]) == (30.0, 60)
        assert limits["sync_events_per_message"] == server.settings.sync_events_per_message
        answers = await asyncio.gather(*(client.request({"type": "ping"})
                                         for _ in range(150)))
        assert [a["type"] for a in answers] == ["pong"] * 150
        assert client.rate_refusals == 0
        assert refused_messages(server.lobby.metrics) == 0
    finally:
        await client.close()


async def test_a_request_refused_rate_limited_is_sent_again(start_server: StartServer) -> None:
    server = await start_server(rate_limit=5.0, rate_burst=3)
    # pace off: this client sends faster than the limit; the refusals are waited out
    client = await Client.connect(server.ws_url, guest=True, pace=False)
    try:
        answers = await asyncio.gather(*(client.request({"type": "ping"}) for _ in range(8)))
        assert [a["type"] for a in answers] == ["pong"] * 8
        assert client.rate_refusals >= 5
        # The refusals were the library's own business: none was handed on as an event.
        events = []
        while not client._events.empty():
            events.append(client._events.get_nowait())
        assert not [e for e in events if isinstance(e, ServerError)], events
    finally:
        await client.close()


async def test_the_test_clients_keep_the_rate_too(start_server: StartServer) -> None:
    server = await start_server()
    client = await connect(server, await guest(server))
    for ref in range(1, 121):  # twice the burst, sent as fast as the client allows
        await client.send({"type": "ping", "id": ref})
    for ref in range(1, 121):
        assert (await client.expect("pong", ref=ref))["ref"] == ref
    assert client.of_type("error") == []
    await client.close()


async def test_a_429_on_a_guest_token_is_waited_out(start_server: StartServer) -> None:
    server = await start_server(limits=True, guest_rate=1.0, guest_burst=2)
    tokens = [await guest_token(server.ws_url) for _ in range(4)]
    assert len(set(tokens)) == 4


# --- the bots and the computer player, default limits --------------------------------------


async def test_a_bot_plays_the_computer_with_no_decision_dropped(
    start_server: StartServer,
) -> None:
    """Both players decide in microseconds (the random level) and answer at once: the
    fastest game there is. Neither side is refused, no clock runs out."""
    server = await start_server(limits=True, trusted_proxies=())
    client = await Client.connect(server.ws_url, guest=True, fmt="msgpack")
    try:
        bot = BotPlayer(client, Level.RANDOM, seed=3, decision_timeout=30)
        for _ in range(5):
            table = await play_computer(client)
            record = await asyncio.wait_for(bot.play_table(table), 120)
            client.forget(table)
            assert record.errors == [], record.errors
            final = record.final or {}
            assert final.get("type") in ("game_over", "match_over"), final
            assert final.get("reason") != "timeout", final
        assert client.rate_refusals == 0
        assert refused_messages(server.lobby.metrics) == 0
    finally:
        await client.close()


async def play_computer(client: Client) -> str:
    """A game against the random computer; the seat of the game just over is freed a moment
    after its end (as ``python -m server.bot`` does, ``already_seated`` is asked again)."""
    for _ in range(100):
        try:
            return await client.play_computer("random")
        except RequestFailed as exc:
            if exc.code != "already_seated":
                raise
            await asyncio.sleep(0.05)
    raise AssertionError("still seated at the previous table")

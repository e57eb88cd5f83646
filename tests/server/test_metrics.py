"""Hardening, operations: ``/metrics`` parsed with prometheus_client's own parser, each counter
moving when its event happens; ``/readyz`` apart from ``/healthz``; JSON logs."""

from __future__ import annotations

import json
import logging

import pytest
from hardening_helpers import http_json
from prometheus_client.parser import text_string_to_metric_families
from server_helpers import (
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.logs import JsonFormatter, game_id, request_id


async def _metrics(server: RunningServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, headers, text = await http_json("GET", server.http + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _get(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
         **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_every_counter_moves_when_its_event_happens(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(9), limits=True, guest_rate=0.01,
                                guest_burst=1)
    before = await _metrics(server)
    assert _get(before, "table42_redis_up") == 1.0
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    during = await _metrics(server)
    assert _get(during, "table42_connections") == _get(before, "table42_connections") + 2
    assert _get(during, "table42_connections_opened_total") == 2

    table, _ = await seat_two(server, a, b)
    assert _get(await _metrics(server), "table42_games") == 1
    assert _get(await _metrics(server), "table42_tables") == 1
    await play_out({0: a, 1: b}, table)
    await a.expect("rating")
    await b.expect("rating")
    await a.request({"type": "roll", "table": table})  # refused: game_over
    await a.send_raw("not json")  # refused: bad_frame
    for _ in range(2):  # the second guest is over the limit
        await http_json("POST", server.http + "/api/guest", headers={"X-Forwarded-For": "1.2.3.4"})
    status, _h, _b = await http_json("POST", server.http + "/api/logout",
                                     headers={"Authorization": "Bearer nope"})
    assert status == 401
    token = await register(server, "carol")
    c = await connect(server, token)
    await http_json("POST", server.http + "/api/logout",
                    headers={"Authorization": f"Bearer {token}"})
    await c.wait_closed()

    after = await _metrics(server)
    assert _get(after, "table42_moves_total") > 10
    assert _get(after, "table42_move_seconds_count") == _get(after, "table42_moves_total")
    assert _get(after, "table42_games") == 0
    assert _get(after, "table42_games_finished_total") == 1
    assert _get(after, "table42_settlements_total") == 1
    assert _get(after, "table42_settlements_pending") == 0
    assert _get(after, "table42_game_end_to_rating_seconds_count") == 1
    assert _get(after, "table42_rating_events_total", path="live") == 2
    assert _get(after, "table42_errors_total", code="game_over") == 1
    assert _get(after, "table42_errors_total", code="bad_frame") == 1
    assert _get(after, "table42_errors_total", code="unauthorized") == 1
    assert _get(after, "table42_refusals_total", limit="guest_per_address") == 1
    assert _get(after, "table42_token_sockets_closed_total", reason="logged out") == 1
    assert _get(after, "table42_redis_roundtrip_seconds_count") > 0
    assert _get(after, "table42_settlement_retries_total") == 0  # see the outage test


async def test_readyz_is_apart_from_healthz(start_server: StartServer) -> None:
    server = await start_server()
    assert (await http_json("GET", server.http + "/readyz"))[0] == 200
    # Draining (what SIGTERM starts: sockets closed, settlements finishing): not ready for
    # new traffic, but alive. The outage test checks both while Redis is unreachable.
    await server.app.on_shutdown.send(server.app)
    status, _h, body = await http_json("GET", server.http + "/readyz")
    assert status == 503 and body["status"] == "draining"
    assert (await http_json("GET", server.http + "/healthz"))[0] == 200


async def test_metrics_off_answers_404(start_server: StartServer) -> None:
    server = await start_server(metrics=False)
    status, _h, body = await http_json("GET", server.http + "/metrics")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_json_log_lines_carry_the_request_or_game_id() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("server.lobby.table", logging.WARNING, __file__, 1, "result of %s",
                               ("g1",), None)
    token_r, token_g = request_id.set("r-42"), game_id.set("abc-1")
    try:
        line = json.loads(formatter.format(record))
    finally:
        request_id.reset(token_r)
        game_id.reset(token_g)
    assert line["message"] == "result of g1" and line["level"] == "WARNING"
    assert line["request_id"] == "r-42" and line["game_id"] == "abc-1"
    plain = json.loads(formatter.format(record))
    assert "request_id" not in plain and "game_id" not in plain


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
async def test_probes_are_never_rate_limited(start_server: StartServer, path: str) -> None:
    server = await start_server(http_rate_limit=0.01, http_rate_burst=1)
    for _ in range(5):
        assert (await http_json("GET", server.http + path))[0] == 200

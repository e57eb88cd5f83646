"""Overload refused at the door (server/net/admission.py), on a real ``python -m server``
process, the shared Redis and real clients.

The node is made busy with its test aid (``--load-test-burn-file``: while the file exists
the loop stalls before each load sample, so the samples run late; nothing else loads the
machine). While busy: ``/readyz`` answers 503 ``busy``; new tables, joins of a new player,
queue entries, computer games and the finished-game reads are refused with ``busy`` and a
wait (``retry_after`` / ``Retry-After``); the game in progress is played to its end and a
seated player's join is answered as before. Once the file is gone the node is calm again:
``/readyz`` 200, and the same requests are served.

Every wait is a poll with a generous timeout; no duration is asserted.
"""

from __future__ import annotations

import asyncio
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
from hardening_helpers import ServerProcess, http_json
from server_helpers import connect, guest, play_out, seat_two

from server.bot.__main__ import sit_down
from server.client import Client as LibraryClient

READY_TIMEOUT = 30.0
LOAD_FLAGS = (
    "--load-max-lag", "0.1",  # the default; the stall (0.25 s a sample) is well over it
    "--load-max-cpu", "0",  # judged on the lag alone: a test run's CPU is not the point
    "--load-busy-after", "1",
    "--load-calm-after", "1",
    "--load-sample-interval", "0.5",
)


async def _ready_status(server: ServerProcess, status: int) -> dict[str, Any]:
    """Poll ``/readyz`` until it answers ``status``; its body."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT
    while True:
        got, _headers, body = await http_json("GET", server.http + "/readyz")
        if got == status:
            assert isinstance(body, dict)
            return body
        assert loop.time() < deadline, f"/readyz never answered {status}: {got} {body}"
        await asyncio.sleep(0.1)


def _busy(reply: dict[str, Any]) -> None:
    assert reply["type"] == "error" and reply["code"] == "busy", reply
    assert isinstance(reply["retry_after"], int) and reply["retry_after"] >= 1, reply


async def _busy_http(server: ServerProcess, path: str) -> None:
    status, headers, body = await http_json("GET", server.http + path)
    assert status == 503, (path, status, body)
    assert body["error"]["code"] == "busy", body
    assert int(headers["Retry-After"]) >= 1, headers


async def _served(server: ServerProcess, path: str) -> Any:
    """GET ``path`` until it is served (a read waits out a moment of load, as a client
    does: 503 ``busy`` only); its body."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT
    while True:
        status, _headers, body = await http_json("GET", server.http + path)
        if status == 200:
            return body
        assert status == 503 and body["error"]["code"] == "busy", (path, status, body)
        assert loop.time() < deadline, f"{path} never served"
        await asyncio.sleep(0.2)


@pytest.mark.timeout(240)
async def test_a_busy_node_refuses_new_work_and_its_games_go_on(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    burn = tmp_path / "stall"
    server = await ServerProcess(
        "--redis-url", redis_url, "--key-prefix", key_prefix, "--trusted-proxies", "127.0.0.1",
        "--scrypt-n", "2", "--scrypt-r", "1", *LOAD_FLAGS, "--load-test-burn-file", str(burn),
    ).start()
    clients: list[LibraryClient] = []
    try:
        a, b, c, d = players = [await connect(server, await guest(server)) for _ in range(4)]
        clients.extend(players)
        # The client library itself (its requests raise RequestFailed), as server.bot uses it.
        e = await LibraryClient.connect(server.ws_url, await guest(server), auto_reconnect=False,
                                        headers={"X-Forwarded-For": "10.250.0.1"})
        clients.append(e)
        table, start = await seat_two(server, a, b)
        game_id = start["game_id"]
        opened = await c.request({"type": "create_table", "mode": "competitive"})
        assert opened["type"] == "table_created", opened
        body = await _ready_status(server, 200)
        assert body["status"] == "ready" and body["busy"] is False

        burn.write_text("0.25")
        body = await _ready_status(server, 503)
        assert body["status"] == "busy" and body["busy"] is True and body["redis"] is True

        # New work is refused, with the wait.
        _busy(await d.request({"type": "create_table", "mode": "competitive"}))
        refused = await d.request({"type": "join", "table": opened["table"]})
        _busy(refused)
        assert refused["table"] == opened["table"]
        _busy(await d.request({"type": "play_computer", "level": "random"}))
        _busy(await d.request({"type": "queue", "pool": "competitive"}))
        for path in (f"/api/games/{game_id}", f"/api/games/{game_id}/mat",
                     f"/api/games/{game_id}/review"):
            await _busy_http(server, path)
        # python -m server.bot waits a busy node out before its next game.
        sitting = asyncio.create_task(sit_down(e, Namespace(join=None, against="random")))
        # What is not new work is served: the table list, a ping, a seated player's join.
        status, _h, listed = await http_json("GET", server.http + "/api/tables")
        assert status == 200, listed
        assert (await d.request({"type": "ping"}))["type"] == "pong"
        await a.send({"type": "join", "table": table})
        await a.expect("resume", table=table)
        assert a.of_type("error") == []

        # The game in progress is played to its end meanwhile.
        over = await play_out({0: a, 1: b}, table)
        assert over["game_id"] == game_id
        assert (await _ready_status(server, 503))["status"] == "busy"
        await _busy_http(server, f"/api/games/{game_id}")

        status, _h, metrics = await http_json("GET", server.http + "/metrics")
        assert status == 200
        assert "table42_busy 1.0" in metrics
        assert 'table42_busy_refusals_total{kind="create_table"} 1.0' in metrics
        assert 'table42_busy_refusals_total{kind="record"} 2.0' in metrics

        # Calm again: the same requests are served.
        assert not sitting.done()
        burn.unlink()
        body = await _ready_status(server, 200)
        assert body["status"] == "ready" and body["busy"] is False
        assert isinstance(await asyncio.wait_for(sitting, 60), str)
        created = await d.request({"type": "create_table", "mode": "competitive"})
        assert created["type"] == "table_created", created
        record = await _served(server, f"/api/games/{game_id}")
        assert record["game_id"] == game_id, record
        text = await _served(server, f"/api/games/{game_id}/mat")
        assert isinstance(text, str) and text, text
    finally:
        for client in clients:
            await client.close()
        server.stop()

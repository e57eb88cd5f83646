"""Abuse costs the abuser: ``sync`` only for a table's players and watchers, in pages charged
to the socket's rate limit; presence flapping bounded; rate-limit refusals that name their
request; lone surrogates refused; tournament tables opened only by tournaments; the security
headers. Real servers on loopback, real Redis, real sockets (the caps under concurrency and
the login throttle: ``test_abuse_races.py``).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import websockets
from hardening_helpers import http_json
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    guest,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.protocol.lean import apply_event

LIVE_ONLY = ("watching", "sync", "resume", "ack", "error", "pong")


async def connect_form(server: RunningServer, token: str, protocol: int) -> Client:
    """A socket in event form ``protocol`` keeping the events as the server sent them."""
    client = Client(server.ws_url, token=token, binary=False,
                    headers={"X-Forwarded-For": "198.51.100.30"}, hello=True)
    client.protocol = protocol
    client.full_states = False
    await client._open(wait_welcome=False)
    welcome = await client.expect("welcome")
    client.player = welcome["player"]
    return client


def live_events(client: Client, table: str) -> dict[int, dict[str, Any]]:
    return {m["v"]: m for m in client.messages
            if m.get("table") == table and "v" in m and m.get("type") not in LIVE_ONLY}


async def all_pages(client: Client, table: str, since: int = 0) -> list[dict[str, Any]]:
    """Every page of a sync from ``since``, following ``next``."""
    pages = []
    while True:
        page = await client.request({"type": "sync", "table": table, "since": since})
        assert page["type"] == "sync", page
        pages.append(page)
        if page["next"] is None:
            return pages
        assert page["complete"] is False and page["next"] == page["events"][-1]["v"]
        since = page["next"]


async def test_sync_is_for_the_players_and_watchers_only(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(3))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _start = await seat_two(server, a, b)
    stranger = await connect(server, await guest(server))
    refused = await stranger.request({"type": "sync", "table": table, "since": 0})
    assert refused["type"] == "error" and refused["code"] == "not_seated", refused
    assert refused["field"] == "table" and refused["table"] == table
    seated = await a.request({"type": "sync", "table": table, "since": 0})
    assert seated["type"] == "sync" and seated["complete"] is True and seated["next"] is None
    assert [e["v"] for e in seated["events"]] == list(range(1, seated["v"] + 1))
    watching = await stranger.request({"type": "watch", "table": table})
    assert watching["type"] == "watching"
    synced = await stranger.request({"type": "sync", "table": table, "since": 0})
    assert synced["type"] == "sync" and synced["complete"] is True
    # Watching is per socket: the same guest on another socket is a stranger there.
    again = await connect(server, stranger.token)
    assert (await again.request({"type": "sync", "table": table}))["code"] == "not_seated"
    await stranger.request({"type": "unwatch", "table": table})
    assert (await stranger.request({"type": "sync", "table": table}))["code"] == "not_seated"


async def test_sync_pages_from_memory_and_redis_in_both_forms(
    start_server: StartServer,
) -> None:
    # A window of 8 events in memory and pages of 5: early pages come from the Redis log,
    # the last from memory; the full form is rebuilt for protocol 1.
    server = await start_server(dice_factory=scripted(11), recent_events=8, sync_page=5,
                                finished_linger=600)
    full = await connect_form(server, await register(server, "alice"), 1)
    lean = await connect_form(server, await register(server, "bob"), 2)
    table, _start = await seat_two(server, full, lean)
    await play_out({0: full, 1: lean}, table)
    for client in (full, lean):
        received = live_events(client, table)
        pages = await all_pages(client, table)
        version = pages[-1]["v"]
        assert version > 20 and len(pages) == -(-version // 5), (version, len(pages))
        assert pages[-1]["complete"] is True
        assert all(len(p["events"]) <= 5 for p in pages)
        events = [e for p in pages for e in p["events"]]
        assert [e["v"] for e in events] == list(range(1, version + 1))
        # Each page's events are exactly what the socket received live, in its form.
        assert all(received[e["v"]] == e for e in events if e["v"] in received)
        assert len([e for e in events if e["v"] in received]) >= version - 1
        # Folding the lean pages gives the state every page carries.
        if client is lean:
            state: dict[str, Any] | None = None
            for event in events:
                state = apply_event(state, event)
            assert state == pages[-1]["state"]
    # A page from the middle, and a since beyond the table's version.
    middle = await lean.request({"type": "sync", "table": table, "since": 7})
    assert [e["v"] for e in middle["events"]] == [8, 9, 10, 11, 12]
    ahead = await lean.request({"type": "sync", "table": table, "since": 10_000})
    assert ahead["complete"] is False and ahead["next"] is None and ahead["events"] == []


async def test_the_client_library_follows_the_pages(start_server: StartServer) -> None:
    server = await start_server(dice_factory=scripted(5), recent_events=4, sync_page=3,
                                finished_linger=600)
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _start = await seat_two(server, a, b)
    await play_out({0: a, 1: b}, table)
    version = (await a.request({"type": "sync", "table": table, "since": 10_000}))["v"]
    # Bob gives his seat back now (the finished table frees it only once it is settled), so
    # that a new socket of his is not sent ``resume``: it has seen nothing of the table.
    assert (await b.request({"type": "leave", "table": table}))["type"] == "ack"
    late = await connect(server, b.token)
    late.queue_events = True  # every event the library hands on, in order
    first = await late.sync(table, since=0)
    assert first["next"] == 3 and first["complete"] is False
    handed: list[int] = []
    while len(handed) < version:
        event = await late.next_event(timeout=10)
        if event.raw.get("table") == table and event.raw.get("type") not in LIVE_ONLY \
                and isinstance(event.raw.get("v"), int):
            handed.append(event.raw["v"])
    assert handed == list(range(1, version + 1))
    assert late.tables[table].v == version and not late.tables[table].syncing


async def test_a_sync_page_costs_the_socket_its_events(start_server: StartServer) -> None:
    # Every event of a page costs one message of a budget of 300 per socket, refilled at
    # 0.001 per second (less than one message within the test).
    server = await start_server(dice_factory=scripted(7), rate_limit=0.001, rate_burst=300,
                                sync_events_per_message=1, finished_linger=600)
    # (pace off: the test spends the socket's budget to the last message itself)
    a = await connect(server, await register(server, "alice"), pace=False)
    b = await connect(server, await register(server, "bob"), pace=False)
    table, _start = await seat_two(server, a, b)
    await play_out({0: a, 1: b}, table)
    watcher = await connect(server, await guest(server), pace=False)
    assert (await watcher.request({"type": "watch", "table": table}))["type"] == "watching"
    page = await watcher.request({"type": "sync", "table": table, "since": 0})
    events = len(page["events"])
    assert page["complete"] is True and 20 < events < 200
    left = 300 - 2 - events  # watch, sync, and the page's events
    for _ in range(left):
        assert (await watcher.request({"type": "ping"}))["type"] == "pong"
    refused = await watcher.request({"type": "ping"})
    assert refused["type"] == "error" and refused["code"] == "rate_limited", refused
    assert refused["retry_after"] >= 1  # and it names the request (its ref: request())


async def test_a_hundred_reconnects_add_a_bounded_number_of_events(
    start_server: StartServer,
) -> None:
    server = await start_server(dice_factory=scripted(9))
    a = await connect(server, await register(server, "alice"))
    token = await register(server, "bob")
    b = await connect(server, token)
    table, _start = await seat_two(server, a, b)
    before = (await a.request({"type": "sync", "table": table, "since": 1 << 40}))["v"]
    for _ in range(100):
        await b.close()
        b = await connect(server, token)
        await b.expect("resume", table=table)
    after = (await a.request({"type": "sync", "table": table, "since": 1 << 40}))["v"]
    presence = [m for m in a.messages if m.get("table") == table
                and m.get("type") in ("player_disconnected", "player_reconnected")]
    assert after - before <= 4 and len(presence) <= 4, (before, after, presence)
    assert (await b.request({"type": "roll", "table": table}))["type"] in ("ack", "error")


async def test_a_refusal_of_the_rate_limit_names_its_request(start_server: StartServer) -> None:
    server = await start_server(rate_limit=0.001, rate_burst=3)
    client = await connect(server, await guest(server), pace=False)
    for ref in range(1, 7):
        await client.send({"type": "ping", "id": ref})
    answers = [await client.next() for _ in range(6)]
    assert [m["type"] for m in answers] == ["pong"] * 3 + ["error"] * 3
    assert [m["ref"] for m in answers] == [1, 2, 3, 4, 5, 6]
    assert all(m["code"] == "rate_limited" and m["retry_after"] >= 1 for m in answers[3:])


async def test_lone_surrogates_are_bad_field(start_server: StartServer) -> None:
    server = await start_server()
    token = await register(server, "alice")
    async with websockets.connect(server.ws_url) as ws:
        await ws.send(json.dumps({"type": "hello", "token": token, "id": 1}))
        assert '"welcome"' in await ws.recv()
        for frame, field in (
            ('{"type": "play", "table": "t1", "play": "24/18\\ud800", "id": 2}', "play"),
            ('{"type": "queue", "pool": "\\udfff", "id": 3}', "pool"),
            ('{"type": "ack_events", "events": ["\\ud800"], "id": 4}', "events"),
            ('{"type": "ping", "id": "x\\ud800"}', "id"),
        ):
            await ws.send(frame)
            answer = json.loads(await ws.recv())
            assert answer["code"] == "bad_field" and answer["field"] == field, answer
    for path, body in (
        ("/api/login", b'{"name": "alice", "password": "correct\\ud800horse"}'),
        ("/api/register", b'{"name": "bob", "password": "correct\\udc00horse"}'),
        ("/api/login", b'{"name": "alice", "password": "ok", "x": {"y": ["\\ud800"]}}'),
    ):
        status, _h, answer = await http_json("POST", server.http + path, data=body,
                                             headers={"Content-Type": "application/json"})
        assert status == 400 and answer["error"]["code"] == "bad_field", (path, answer)
    assert answer["error"]["field"] == "x"


async def test_players_cannot_open_tournament_tables(start_server: StartServer) -> None:
    server = await start_server()
    client = await connect(server, await register(server, "alice"))
    refused = await client.request({"type": "create_table", "mode": "tournament",
                                    "tournament_id": "cup1"})
    assert refused["code"] == "bad_field" and refused["field"] == "mode", refused
    assert (await client.request({"type": "create_table", "mode": "private"}))["type"] == \
        "table_created"


async def test_every_answer_carries_the_security_headers(start_server: StartServer) -> None:
    server = await start_server()
    async with aiohttp.ClientSession() as http:
        for method, path in (("GET", "/"), ("GET", "/static/js/main.js"),
                             ("GET", "/api/tables"), ("GET", "/no/such/path"),
                             ("POST", "/api/guest")):
            async with http.request(method, server.http + path) as resp:
                headers = resp.headers
                csp = headers["Content-Security-Policy"]
                assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
                assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
                assert headers["X-Content-Type-Options"] == "nosniff"
                assert headers["Referrer-Policy"] == "no-referrer"
                assert headers["Server"] == "Table42", headers["Server"]
                if path == "/api/guest":
                    assert resp.status == 200 and headers["Cache-Control"] == "no-store"
                    assert "token" in await resp.json()
    async with aiohttp.ClientSession() as http, http.get(server.http + "/") as resp:
        page = await resp.text()
    # No inline script or style for the policy to block.
    assert "<script>" not in page and "<style" not in page and " style=" not in page
    assert all('src="' in tag for tag in page.split("<script")[1:])


async def test_the_client_library_watches_again_when_its_watch_was_lost(
    start_server: StartServer,
) -> None:
    # As after a takeover, where the table's new owner does not know the watcher: its sync
    # is refused (not_seated); the library watches again and syncs.
    server = await start_server(dice_factory=scripted(3))
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _start = await seat_two(server, a, b)
    watcher = await connect(server, await guest(server))
    assert (await watcher.request({"type": "watch", "table": table}))["type"] == "watching"
    await watcher.send({"type": "unwatch", "table": table})  # the server forgets it
    assert (await watcher.request({"type": "ping"}))["type"] == "pong"
    view = watcher.tables[table]
    watcher._start_sync(view)
    assert view.sync_task is not None
    await view.sync_task
    assert not view.syncing
    assert [m["type"] for m in watcher.messages[-3:]].count("watching") >= 1
    synced = await watcher.request({"type": "sync", "table": table})
    assert synced["type"] == "sync" and synced["complete"] is True

"""Bounded memory per socket and per account (PROTOCOL.md §13 "Memory per socket"): the event
ids a socket remembers, the tables it watches, the reports an account files; and a real
node's memory under a flood of each message type levels off."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
from collections import deque
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import redis.asyncio as aioredis
from flood_helpers import ACK_IDS, FLOODS, MAX_MSG_SIZE, Clients, flood, start_node
from server_helpers import StartServer, connect, eventually, register, seat_two

from server.config import SettingsError
from server.config_args import settings_from
from server.lobby.clock import VirtualClock
from server.lobby.computer import STARTED_KEPT, ComputerOpponents
from server.lobby.watches import SocketWatches
from server.protocol.delivered_ids import DeliveredIds
from server.protocol.errors import ProtocolError
from server.store.owners import Lease

MIB = 1024


def test_a_socket_remembers_a_bounded_window_of_delivered_ids() -> None:
    ids = DeliveredIds(3)
    for event_id in ("a", "b", "c", "b", "d"):
        ids.add(event_id)
    assert len(ids) == 3 and "a" not in ids and all(i in ids for i in "bcd")
    with pytest.raises(SettingsError, match="socket_delivered_ids"):
        settings_from(["--socket-delivered-ids", "10", "--inbox-max", "20"], {})


async def test_acknowledged_ids_are_not_kept_on_the_socket(start_server: StartServer) -> None:
    server = await start_server()
    client = await connect(server, await register(server, "alice"))
    ids = [f"game{i}:rating:alice" for i in range(200)]
    assert (await client.request({"type": "ack_events", "events": ids}))["type"] == "ack"
    [conn] = server.hub.by_player["alice"]
    assert len(conn.delivered) == 0  # only ids written to the socket are remembered


async def test_a_socket_watches_existing_tables_up_to_its_cap(
        start_server: StartServer) -> None:
    server = await start_server(socket_watch_max=2)
    hosts = [await connect(server, await register(server, name))
             for name in ("hosta", "hostb", "hostc")]
    tables = []
    for host in hosts:
        created = await host.request({"type": "create_table", "mode": "private"})
        tables.append(created["table"])
    watcher = await connect(server, await register(server, "carol"))
    welcome = watcher.of_type("welcome")[0]
    assert welcome["limits"]["socket_watch_max"] == 2
    missing = await watcher.request({"type": "watch", "table": "nosuchtable"})
    assert missing["code"] == "no_such_table"
    [conn] = server.hub.by_player["carol"]
    assert conn.watching == set()  # a refused watch leaves nothing behind
    for table in tables[:2]:
        assert (await watcher.request({"type": "watch", "table": table}))["type"] == "watching"
    again = await watcher.request({"type": "watch", "table": tables[0]})
    assert again["type"] == "watching"  # watching one again takes no place
    refused = await watcher.request({"type": "watch", "table": tables[2]})
    assert refused["code"] == "too_many_watches" and refused["field"] == "table", refused
    assert (await watcher.request({"type": "unwatch", "table": tables[0]}))["type"] == "ack"
    assert (await watcher.request({"type": "watch", "table": tables[2]}))["type"] == \
        "watching"
    assert conn.watching == {tables[1], tables[2]}


async def test_a_watch_another_node_refused_takes_no_place(
        start_nodes: Callable[..., Any]) -> None:
    n1, n2 = await start_nodes(2, max_watchers=1)
    host = await connect(n1, await register(n1, "alice"))
    table = (await host.request({"type": "create_table", "mode": "private"}))["table"]
    first = await connect(n2, await register(n2, "bob"))
    assert (await first.request({"type": "watch", "table": table}))["type"] == "watching"
    second = await connect(n2, await register(n2, "carol"))
    refused = await second.request({"type": "watch", "table": table})
    assert refused["code"] == "too_many_watchers", refused
    [bob] = n2.hub.by_player["bob"]
    [carol] = n2.hub.by_player["carol"]
    assert bob.watching == {table} and carol.watching == set()


async def test_the_watches_of_ended_tables_give_their_places_back() -> None:
    clock = VirtualClock()
    reads: list[list[str]] = []
    leases: dict[str, Lease | None] = {
        "live": Lease("n2", 1, False), "done": Lease("n2", 1, True), "gone": None}

    async def read(tables: list[str]) -> dict[str, Lease | None]:
        reads.append(sorted(tables))
        return {t: leases[t] for t in tables}

    watching = {"here", "live", "done"}  # what the socket "c1" watches (server/net keeps it)
    outbox: Any = SimpleNamespace(watching=lambda conn_id: frozenset(watching),
                                  unwatch=lambda conn_id, tables: watching.difference_update(
                                      tables))
    watches = SocketWatches(3, {"here"}, read, outbox, clock, prune_every=5.0)
    await watches.make_room("c1", "new")  # "done" is over: its place is free
    assert watching == {"here", "live"} and reads == [["done", "live"]]
    watching.add("gone")
    with pytest.raises(ProtocolError) as refused:
        await watches.make_room("c1", "new")  # looked at 0 s ago: refused without a read
    assert refused.value.code == "too_many_watches" and len(reads) == 1
    await watches.make_room("c1", "here")  # watched already
    clock.advance(5.0)
    await watches.make_room("c1", "new")
    assert watching == {"here", "live"} and len(reads) == 2


async def test_an_account_files_a_bounded_number_of_reports(start_server: StartServer,
                                                             redis_client: aioredis.Redis
                                                             ) -> None:
    server = await start_server(reports_per_player=2, reports_window=600.0)
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, a, b, mode="private")
    ids = []
    for text in ("boo", "hiss", "grr"):
        assert (await a.request({"type": "chat", "table": table, "text": text}))["type"] == "ack"
        ids.append((await b.expect("chat", text=text))["msg"])
    for msg in ids[:2]:
        assert (await b.request({"type": "report", "table": table, "msg": msg}))["type"] == "ack"
    refused = await b.request({"type": "report", "table": table, "msg": ids[2]})
    assert refused["code"] == "rate_limited" and 1 <= refused["retry_after"] <= 600, refused
    kept = await server.lobby.records.reports.page()
    assert (kept.open, [r["msg"] for r in kept.reports]) == (2, ids[:2])
    # alice's reports are counted apart from bob's
    mine = await a.request({"type": "report", "table": table, "msg": ids[2]})
    assert mine["type"] == "ack"


def test_players_with_no_recent_computer_game_are_forgotten() -> None:
    bots = object.__new__(ComputerOpponents)  # only its start counts are looked at
    bots.settings = settings_from([], {})  # bot_games_window: 3600 s
    bots._started = {"old": deque([0.0, 10.0]), "new": deque([10.0, 5000.0]),
                     "none": deque()}
    bots._forget_old_starts(5000.0)
    assert set(bots._started) == {"new"} and bots._started_prune_at == STARTED_KEPT


def test_an_ack_events_flood_fills_the_largest_message() -> None:
    assert 100 <= ACK_IDS < 200 and MAX_MSG_SIZE == 16 * 1024


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", FLOODS)
async def test_a_node_memory_levels_off_under_each_flood(
        redis_url: str, key_prefix: str, redis_client: aioredis.Redis, kind: str) -> None:
    """16 sockets of 4 guests each send one kind of message at 25/s (the default limit is
    30/s) for 4 s, against a node of its own with the default limits (but the sockets per
    address): the node's RSS grows by less than 4 MiB over the flood's second half (an
    unbounded ``ack_events`` window grew it by about 20 MiB there), no socket is closed and
    no message fails inside the server. (On a machine too busy to keep up, the messages not
    handled yet wait in each socket's reader, at most 128 KiB each.)"""
    node = await start_node(redis_url, key_prefix, "--max-sockets-per-address", "1000")
    try:
        setup = Clients(node)
        tables = await setup.tables(3)
        tokens = await setup.guests(4)
        clients = Clients(node)
        sockets = [await clients.open(tokens[i // 4]) for i in range(16)]
        result = await flood(node, sockets, kind, seconds=4.0, rate=25.0, tables=tables)
        await clients.close()
        first, second = result.growth_kib
        assert second < 4 * MIB, (kind, first, second, result.samples)
        assert result.closed == 0 and result.sent > 0, (kind, result)
        assert result.answers["error:internal_error"] == 0, (kind, result.answers)
        await setup.close()
    finally:
        node.stop()


def _masked(payload: bytes) -> bytes:
    """A client's text frame (masked, RFC 6455 §5.3) of ``payload`` (< 126 bytes)."""
    mask = os.urandom(4)
    return bytes((0x81, 0x80 | len(payload))) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload))


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    """The (opcode, payload) of each whole unmasked frame in ``data``."""
    frames, at = [], 0
    while at + 2 <= len(data):
        size, head = data[at + 1] & 0x7F, 2
        if size == 126:
            size, head = int.from_bytes(data[at + 2:at + 4], "big"), 4
        elif size == 127:
            size, head = int.from_bytes(data[at + 2:at + 10], "big"), 10
        if at + head + size > len(data):
            break
        frames.append((data[at] & 0x0F, data[at + head:at + head + size]))
        at += head + size
    return frames


async def test_a_socket_that_does_not_read_is_closed_with_4002(
        start_server: StartServer) -> None:
    """A client asks for many answers and reads none: past max_send_buffer unsent bytes the
    node sends nothing more but a close frame, 4002 ``slow consumer``; the client that
    reads afterwards gets the answers sent before it, then that frame, then the end."""
    # 400 messages at once: the message rate is raised (this test is about the send buffer).
    server = await start_server(max_send_buffer=4096, chat_rate=100, rate_limit=1000.0,
                                rate_burst=1000)
    host = await connect(server, await register(server, "alice"))
    table = (await host.request({"type": "create_table", "mode": "private"}))["table"]
    for i in range(50):  # each watching answer carries them: about 16 KiB
        said = await host.request({"type": "chat", "table": table, "text": f"{i:03}" * 100})
        assert said["type"] == "ack", said
    token = await register(server, "carol")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: it fills
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
                  ).encode())
    assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
    watch = _masked(json.dumps({"type": "watch", "table": table}).encode())
    for _ in range(400):  # 400 answers of 16 KiB: more than the kernel's buffers hold
        writer.write(watch)
    await asyncio.sleep(1.0)  # read nothing meanwhile
    [conn] = server.hub.by_player["carol"]
    await eventually(lambda: conn.closed)
    data = b""
    async with asyncio.timeout(20):
        while chunk := await reader.read(1 << 16):
            data += chunk
    frames = _frames(data)
    opcodes = [op for op, _ in frames]
    assert opcodes[-1] == 0x8 and opcodes.count(0x8) == 1, opcodes[-5:]
    close = frames[-1][1]
    assert int.from_bytes(close[:2], "big") == 4002 and close[2:] == b"slow consumer"
    answers = [json.loads(p) for op, p in frames if op == 0x1]
    assert answers[0]["type"] == "welcome" and answers[-1]["type"] == "watching"
    assert len(answers) < 401  # not every answer: the rest was never sent
    writer.close()
    await eventually(lambda: "carol" not in server.hub.by_player)

"""Chat reports over real sockets and a real Redis (PROTOCOL.md §16, docs/operations.md "Table
chat"): one report per reporter and message, the reason cleaned, the rates per account and
per address, a full list that keeps its oldest open reports and counts the refused ones,
``resolve``, the reports of earlier versions adopted, and the operator's output escaped."""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as aioredis
from admin_helpers import run_admin
from server_helpers import Client, RunningServer, StartServer, connect, register, seat_two


async def admin(server: RunningServer, *args: str) -> tuple[int, str, str]:
    return await run_admin(str(server.settings.redis_url), server.settings.key_prefix, *args)


async def listed(server: RunningServer) -> tuple[list[dict[str, Any]], str]:
    """The reports ``python -m server.admin reports`` prints, and its summary line."""
    code, out, err = await admin(server, "reports")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()], err.strip()


async def chatting(server: RunningServer, count: int) -> tuple[str, Client, Client, list[str]]:
    """alice and bob at a table; alice said ``count`` messages: their ids."""
    a = await connect(server, await register(server, "alice"))
    b = await connect(server, await register(server, "bob"))
    table, _ = await seat_two(server, a, b, mode="private")
    ids = []
    for n in range(count):
        said = await a.request({"type": "chat", "table": table, "text": f"boo {n}"})
        assert said["type"] == "ack", said
        ids.append(str((await b.expect("chat", text=f"boo {n}"))["msg"]))
    return table, a, b, ids


def report(table: str, msg: str, **extra: Any) -> dict[str, Any]:
    return {"type": "report", "table": table, "msg": msg, **extra}


def refusals(server: RunningServer, limit: str) -> float:
    registry = server.lobby.metrics.registry
    return registry.get_sample_value("table42_refusals_total", {"limit": limit}) or 0.0


async def test_the_same_reporter_reporting_one_message_twice_stores_one_report(
    start_server: StartServer,
) -> None:
    server = await start_server()
    table, _, b, [msg] = await chatting(server, 1)
    first = await b.request(report(table, msg, reason=" \u202eins\u200bult\u2028 now\u0085 "))
    assert first["type"] == "ack", first
    again = await b.request(report(table, msg, reason="again"))
    assert again["type"] == "ack", again  # nothing more is kept, nothing counted
    c = await connect(server, await register(server, "carol"))
    assert (await c.request(report(table, msg)))["type"] == "ack"  # another reporter
    rows, summary = await listed(server)
    assert [(r["id"], r["msg"], r["reporter"], r["reason"]) for r in rows] == [
        (1, msg, "bob", "insult now"), (2, msg, "carol", None)]
    assert summary.startswith("2 open report(s), 2 printed; 0 refused")
    # A reason with nothing visible is refused; nothing is kept.
    for reason in ("\u200b\u2060", "\u2028\u2029 \u202e"):
        refused = await c.request(report(table, msg, reason=reason))
        assert (refused["code"], refused["field"]) == ("bad_field", "reason"), reason


async def test_a_full_report_list_keeps_its_oldest_unresolved_reports_and_counts_the_refused_ones(
    start_server: StartServer,
) -> None:
    server = await start_server(reports_kept=2)
    table, _, b, ids = await chatting(server, 3)
    c = await connect(server, await register(server, "carol"))
    for msg in ids[:2]:
        assert (await b.request(report(table, msg)))["type"] == "ack"
    for reporter in (b, c):
        refused = await reporter.request(report(table, ids[2]))
        assert (refused["code"], refused["field"]) == ("reports_full", "msg"), refused
    assert (await b.request(report(table, ids[0])))["type"] == "ack"  # kept already
    rows, summary = await listed(server)
    assert [(r["id"], r["msg"]) for r in rows] == [(1, ids[0]), (2, ids[1])]
    assert summary.startswith("2 open report(s), 2 printed; 2 refused"), summary
    assert refusals(server, "reports_full") == 2
    # Resolving the oldest makes room: the next report is kept, after the one left open.
    code, out, err = await admin(server, "resolve", "1")
    assert (code, out, err) == (0, "1 report(s) resolved\n", "")
    assert (await c.request(report(table, ids[2])))["type"] == "ack"
    rows, summary = await listed(server)
    assert [(r["id"], r["msg"], r["reporter"]) for r in rows] == [
        (2, ids[1], "bob"), (3, ids[2], "carol")]
    assert summary.startswith("2 open report(s), 2 printed; 2 refused"), summary
    # A report that is not open: exit 1, one line, nothing done.
    code, out, err = await admin(server, "resolve", "1", "3")
    assert code == 1 and out == "" and err.count("\n") == 1 and "no open report 1" in err, err
    assert [r["id"] for r in (await listed(server))[0]] == [2]


async def test_reports_are_rate_limited_per_account_and_per_address(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, report_burst=3)
    table, _, b, ids = await chatting(server, 4)
    # bob, from two addresses: his account's bucket runs out, neither address's does.
    b2 = await connect(server, b.token, address="198.51.100.2")
    for client, msg in ((b, ids[0]), (b, ids[1]), (b2, ids[2])):
        assert (await client.request(report(table, msg)))["type"] == "ack"
    refused = await b2.request(report(table, ids[3]))
    assert (refused["code"], refused["field"]) == ("rate_limited", "msg"), refused
    assert refused["retry_after"] >= 1
    assert refusals(server, "reports_per_player") == 1
    # carol and dave, on one address: the address's bucket runs out before dave's.
    c = await connect(server, await register(server, "carol"), address="203.0.113.9")
    d = await connect(server, await register(server, "dave"), address="203.0.113.9")
    for client, msg in ((c, ids[0]), (c, ids[1]), (d, ids[0])):
        assert (await client.request(report(table, msg)))["type"] == "ack"
    refused = await d.request(report(table, ids[1]))
    assert (refused["code"], refused["field"]) == ("rate_limited", "msg"), refused
    assert refusals(server, "reports_per_address") == 1
    assert len((await listed(server))[0]) == 6


async def test_reports_of_earlier_versions_are_adopted_and_printed_escaped(
    start_server: StartServer, redis_client: aioredis.Redis, key_prefix: str,
) -> None:
    server = await start_server()
    raw = "\u202eevil\u0085 \u009b2J \u2028end\U000e0041"
    old = [{"at": 1.0, "table": "t1", "msg": "m1", "channel": "players", "from": "eve",
            "name": "eve", "text": raw, "sent_at": 0.5, "reporter": "bob", "reason": raw},
           {"at": 2.0, "table": "t1", "msg": "m2", "channel": "players", "from": "eve",
            "name": "eve", "text": "plain", "sent_at": 1.5, "reporter": "bob", "reason": None}]
    legacy = f"{key_prefix}{{reports}}:chat"
    entries = [json.dumps(r, ensure_ascii=False) for r in old]
    await redis_client.rpush(legacy, *entries)  # type: ignore[misc]
    code, out, err = await admin(server, "reports")
    assert code == 0, err
    lines = out.splitlines()
    assert all(line.isprintable() for line in lines + err.splitlines())
    assert "\\u202eevil\\u0085 \\u009b2J \\u2028end\\udb40\\udc41" in lines[0]
    assert [json.loads(line) for line in lines] == [{"id": 1, **old[0]}, {"id": 2, **old[1]}]
    assert not await redis_client.exists(legacy)
    # Reports filed afterwards are numbered after them.
    table, _, b, [msg] = await chatting(server, 1)
    assert (await b.request(report(table, msg)))["type"] == "ack"
    assert [r["id"] for r in (await listed(server))[0]] == [1, 2, 3]

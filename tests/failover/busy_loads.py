"""The loads of the busy-node scenario, each run as its own process so that the
process measuring the seated players' pings stays idle: ``python busy_loads.py KIND ...``
prints one JSON summary on stdout.

- ``records``: ``--count`` concurrent anonymous ``GET /api/games/{id}`` from one address
  (``X-Forwarded-For``; the node believes it from 127.0.0.1), each body read whole;
- ``mats``: the same for ``GET /api/games/{id}/mat`` (the bench's figure);
- ``reviews``: ``--count`` concurrent ``GET /api/games/{id}/review``, each from its own
  address (so that no per-address budget, but sharing one computation, is what spares the
  node);
- ``flood``: ``--sockets`` guest sockets, each from its own address, sending ``ack_events``
  (118 random ids of 128 characters) and ``watch`` (a random table id) in turn at ``--rate``
  messages a second (below the default 30/s) for ``--seconds``;
- ``overload``: ``--games`` new games arriving at ``--arrival-rate`` a second, each a pair of
  new guests (own addresses) that open a table, join it and play it flat out (a decision
  every ``--think`` seconds, under the default message rate) until it ends or ``--seconds``
  have passed: games arrive faster than they end, so the node's load grows all along.

The sustained loads report ``active``: the Unix times their offered load began and ended
(the node's memory is judged over that span, not over the sockets' closing).

Every answer that refuses work is counted by its code. The issue's rule is that a refusal
carries ``busy`` or ``rate_limited`` with ``retry_after`` (HTTP: 429 or 503 with
``Retry-After``); what breaks it is listed under ``bad``. A refused create/join is sent
again after its ``retry_after``. Bounded: every loop ends at ``--seconds`` (or its count),
every request has a timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from nodes import Player, default_decision, freshest, is_over

from server.client.connection import ConnectionLost, RequestFailed, RequestTimeout

REFUSAL_CODES = frozenset({"busy", "rate_limited"})
"""The codes a refusal of work may carry: each with ``retry_after``."""
HTTP_REFUSALS = frozenset({429, 503})
REQUEST_TIMEOUT = 60.0
ACK_IDS = 118
ID_LENGTH = 128


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def address(block: int, n: int) -> str:
    return f"10.{block}.{n // 250 % 250}.{n % 250 + 1}"


# --- HTTP: records and reviews ---------------------------------------------------------------


async def http_burst(base: str, path: str, count: int, *, one_address: bool,
                     block: int) -> dict[str, Any]:
    """``count`` concurrent GETs of ``path``; statuses, refusals, latencies, bytes."""
    statuses: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    bad: list[str] = []
    latencies: list[float] = []
    received = 0
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)

    async def one(i: int, http: aiohttp.ClientSession) -> None:
        nonlocal received
        headers = {"X-Forwarded-For": address(block, 0 if one_address else i)}
        start = time.monotonic()
        try:
            async with http.get(base + path, headers=headers) as resp:
                body = await resp.read()
                latencies.append(time.monotonic() - start)
                received += len(body)
                statuses[str(resp.status)] += 1
                if resp.status == 200:
                    return
                code = ""
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    code = str(json.loads(body)["error"]["code"])
                refusals[f"{resp.status} {code}"] += 1
                if resp.status not in HTTP_REFUSALS or code not in REFUSAL_CODES:
                    bad.append(f"HTTP {resp.status} {code}: {body[:200]!r}")
                elif not resp.headers.get("Retry-After", "").strip().isdigit():
                    bad.append(f"HTTP {resp.status} {code} without a Retry-After")
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            statuses["failed"] += 1
            bad.append(f"request failed: {exc!r}")

    start = time.monotonic()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        await asyncio.gather(*(one(i, http) for i in range(count)))
    return {"requests": count, "statuses": dict(statuses), "refusals": dict(refusals),
            "bad": bad[:20], "bad_count": len(bad), "bytes": received,
            "latency_p50_s": percentile(latencies, 0.5),
            "latency_p99_s": percentile(latencies, 0.99),
            "wall_s": time.monotonic() - start}


# --- WebSocket: the ack_events and watch flood -----------------------------------------------


async def guest(http: aiohttp.ClientSession, base: str, addr: str) -> str:
    async with http.post(base + "/api/guest", headers={"X-Forwarded-For": addr}) as resp:
        body = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"POST /api/guest: {resp.status} {body}")
        return str(body["token"])


def random_ids(count: int, length: int) -> list[str]:
    """``count`` ids of ``length`` random URL-safe characters, never seen before (one
    ``os.urandom`` call: the flood makes thousands a second)."""
    size = length * 3 // 4 + 3
    blob = base64.urlsafe_b64encode(os.urandom(size * count)).decode()
    step = len(blob) // count
    return [blob[i * step:i * step + length] for i in range(count)]


async def flood(base: str, sockets: int, rate: float, seconds: float,
                block: int) -> dict[str, Any]:
    sent: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    bad: list[str] = []
    closes: Counter[str] = Counter()
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)

    async def one(i: int, http: aiohttp.ClientSession, start_at: float) -> None:
        addr = address(block, i)
        token = await guest(http, base, addr)
        headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": addr}
        async with http.ws_connect(base + "/ws", headers=headers, heartbeat=None,
                                   max_msg_size=8 * 1024 * 1024) as ws:

            async def read() -> None:
                async for frame in ws:
                    if frame.type != aiohttp.WSMsgType.TEXT:
                        continue
                    msg = json.loads(frame.data)
                    kind = msg.get("type")
                    if kind != "error":
                        answers[str(kind)] += 1
                        continue
                    code = str(msg.get("code"))
                    answers["error " + code] += 1
                    if code in REFUSAL_CODES and not msg.get("retry_after"):
                        bad.append(f"{code} without retry_after: {msg}")

            reader = asyncio.create_task(read())
            loop = asyncio.get_running_loop()
            await asyncio.sleep(max(0.0, start_at - loop.time()))
            deadline = loop.time() + seconds
            ids = itertools.count(1)
            n = 0
            try:
                while loop.time() < deadline and not ws.closed:
                    if n % 2 == 0:
                        msg: dict[str, Any] = {
                            "type": "ack_events", "id": next(ids),
                            "events": random_ids(ACK_IDS, ID_LENGTH)}
                    else:
                        msg = {"type": "watch", "id": next(ids), "table": random_ids(1, 12)[0]}
                    await ws.send_str(json.dumps(msg))
                    sent[msg["type"]] += 1
                    n += 1
                    await asyncio.sleep(max(0.0, start_at + n / rate - loop.time()))
            finally:
                if ws.closed:
                    closes[str(ws.close_code)] += 1
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader

    start = time.monotonic()
    loop = asyncio.get_running_loop()
    active = (time.time() + 1.0, time.time() + 1.0 + seconds)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        results = await asyncio.gather(*(one(i, http, loop.time() + 1.0)
                                         for i in range(sockets)), return_exceptions=True)
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    return {"sockets": sockets, "rate": rate, "seconds": seconds, "active": active,
            "sent": dict(sent),
            "answers": dict(answers), "closes": dict(closes), "bad": (bad + failures)[:20],
            "bad_count": len(bad) + len(failures), "wall_s": time.monotonic() - start}


# --- overload: new games faster than the node serves them -------------------------------------


async def overload(base: str, ws_url: str, games: int, rate: float, seconds: float,
                   think: float, block: int) -> dict[str, Any]:
    refusals: Counter[str] = Counter()
    bad: list[str] = []
    move_latencies: list[float] = []
    counts: Counter[str] = Counter()
    addresses = itertools.count(1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    active = (time.time(), time.time() + seconds)

    def refused(exc: RequestFailed, what: str) -> float | None:
        """The wait a refusal asks for, or None (and a ``bad`` entry) when it is not one."""
        code = exc.code
        refusals[f"{what} {code}"] += 1
        retry = exc.error.raw.get("retry_after")
        if code not in REFUSAL_CODES:
            bad.append(f"{what} refused {code}: {exc}")
            return None
        if not retry:
            bad.append(f"{what} refused {code} without retry_after")
            return 1.0
        return float(retry)

    async def open_player(http: aiohttp.ClientSession) -> Player:
        addr = address(block, next(addresses))
        token = await guest(http, base, addr)
        player = Player(ws_url, token=token, headers={"X-Forwarded-For": addr},
                        auto_reconnect=False, keep_messages=True, queue_events=False,
                        request_timeout=REQUEST_TIMEOUT, silence_timeout=None)
        await player._open(wait_welcome=True)
        return player

    async def ask(player: Player, message: dict[str, Any], what: str) -> dict[str, Any] | None:
        """Send until accepted (waiting each refusal's retry_after) or the deadline."""
        while loop.time() < deadline:
            try:
                return dict(await player.request(message))
            except RequestFailed as exc:
                wait = refused(exc, what)
                if wait is None:
                    return None
                await asyncio.sleep(min(wait, max(0.0, deadline - loop.time())))
        return None

    async def game(http: aiohttp.ClientSession) -> None:
        a = await open_player(http)
        b = await open_player(http)
        try:
            created = await ask(a, {"type": "create_table", "mode": "private",
                                    "match_length": 0}, "create_table")
            if created is None:
                return
            table = str(created["table"])
            if await ask(b, {"type": "join", "table": table}, "join") is None:
                return
            counts["games_started"] += 1
            players = [a, b]
            while loop.time() < deadline and not is_over(players, table):
                state = freshest(players, table)
                g = None if state is None else state.get("game")
                if state is None or g is None or state.get("status") != "playing" \
                        or g.get("to_act") is None:
                    await asyncio.sleep(0.01)
                    continue
                actor = next((p for p in players if p.side(table) == int(g["to_act"])),
                             None)
                if actor is None:
                    await asyncio.sleep(0.01)
                    continue
                start = loop.time()
                try:
                    await actor.request({**default_decision(g), "table": table})
                    move_latencies.append(loop.time() - start)
                    counts["moves"] += 1
                except RequestFailed as exc:
                    if exc.code in ("not_your_turn", "wrong_phase", "illegal_play"):
                        await asyncio.sleep(0.02)  # a view one event behind
                        continue
                    wait = refused(exc, "move")
                    if wait is None:
                        return
                    await asyncio.sleep(wait)
                await asyncio.sleep(think)
            if is_over(players, table):
                counts["games_finished"] += 1
        finally:
            for p in (a, b):
                with contextlib.suppress(Exception):
                    await p.close()

    async def arrival(http: aiohttp.ClientSession, k: int) -> None:
        await asyncio.sleep(k / rate)
        if loop.time() >= deadline:
            return
        counts["games_offered"] += 1
        try:
            await game(http)
        except (ConnectionLost, RequestTimeout, OSError, RuntimeError,
                aiohttp.ClientError) as exc:
            bad.append(f"game failed: {exc!r}")
            counts["failed"] += 1

    start = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        await asyncio.gather(*(arrival(http, k) for k in range(games)))
    creates = sum(v for k, v in refusals.items() if k.startswith("create_table"))
    return {"games": games, "arrival_rate": rate, "seconds": seconds, "think": think,
            "active": active,
            **dict(counts), "refusals": dict(refusals), "bad": bad[:20], "bad_count": len(bad),
            "not_admitted": counts["games_offered"] - counts["games_started"] - counts["failed"],
            "create_refused_share": creates / max(1, creates + counts["games_started"]),
            "move_p50_s": percentile(move_latencies, 0.5),
            "move_p99_s": percentile(move_latencies, 0.99),
            "wall_s": time.monotonic() - start}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("records", "mats", "reviews", "flood", "overload"))
    parser.add_argument("--http", required=True, help="http://127.0.0.1:PORT of the node")
    parser.add_argument("--game", default="", help="the finished game's id")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--sockets", type=int, default=16)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--rate", type=float, default=28.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--think", type=float, default=0.1)
    parser.add_argument("--arrival-rate", type=float, default=4.0,
                        help="overload: new games a second")
    args = parser.parse_args(argv)
    base = args.http.rstrip("/")
    if args.kind == "records":
        result = asyncio.run(http_burst(base, f"/api/games/{args.game}", args.count,
                                        one_address=True, block=203))
    elif args.kind == "mats":
        result = asyncio.run(http_burst(base, f"/api/games/{args.game}/mat", args.count,
                                        one_address=True, block=205))
    elif args.kind == "reviews":
        result = asyncio.run(http_burst(base, f"/api/games/{args.game}/review", args.count,
                                        one_address=False, block=204))
    elif args.kind == "flood":
        result = asyncio.run(flood(base, args.sockets, args.rate, args.seconds, 201))
    else:
        ws_url = base.replace("http://", "ws://") + "/ws"
        result = asyncio.run(overload(base, ws_url, args.games, args.arrival_rate,
                                      args.seconds, args.think, 202))
    print(json.dumps({"kind": args.kind, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

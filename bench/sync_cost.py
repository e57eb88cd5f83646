"""Server CPU of a seated player's ``sync`` of a table with 2,000 events, paged (the default
``sync_page``, 200) against unpaged (``--sync-page`` larger than the log: the whole log in one
answer, as every ``sync`` was answered before pages), in both event forms.

Run from the repository root::

    nice -n 10 python3 bench/sync_cost.py                 # 2,000 events, 20 syncs per figure
    nice -n 10 python3 bench/sync_cost.py --events 500 --rounds 10 --json out.json

For each configuration it starts a real ``python -m server`` (its own embedded Redis), has two
accounts play a match to 99 (roll, first legal play, no doubles) until the table's log holds
``--events`` events, then a third socket of the first player sends ``sync`` ``--rounds``
times per case and the server's CPU time (``/proc/<pid>/stat`` user + system) is read around
each batch: CPU per answer, and the bytes of an answer. Cases: the first answer from version 0
(a page from the Redis log), every page from 0 to the end (the whole log walked, per page
and in total), a page of the newest events (from memory), in protocol 2 and protocol 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.client import Client, default_decision, register  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


async def start_server(sync_page: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # its own Redis
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "--port", str(port), "--sync-page", str(sync_page),
         "--limits", "0", "--rate-limit", "1000000", "--rate-burst", "1000000",
         "--decision-time", "3600", "--grace-period", "3600", "--max-match-length", "99",
         "--metrics", "0",
         # An unpaged answer of 2,000 events (1-3 MB) would exceed the default send buffer:
         # the socket would be dropped as a slow consumer before the next answer.
         "--max-send-buffer", str(64 << 20)],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(1200):  # a busy machine may take a while
            try:
                async with http.get(url + "/healthz") as resp:
                    if resp.status == 200:
                        return proc, f"ws://127.0.0.1:{port}/ws"
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


async def drive(client: Client, table: str, side: int, stop: asyncio.Event) -> None:
    """Answer every decision of ``side`` with the simplest one."""
    acted = -1
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await client.next_event(timeout=0.5)
        view = client.tables.get(table)
        state = None if view is None else view.state
        if not state or state.get("status") != "playing" or view is None:
            continue
        game = state.get("game") or {}
        if game.get("to_act") == side and view.v != acted:
            acted = view.v
            with contextlib.suppress(ValueError):  # nothing to do in this phase
                await client.send({**default_decision(game), "table": table})


async def build_table(ws_url: str, events: int) -> tuple[str, str, list[Client]]:
    """A match whose log holds at least ``events`` events; returns the table, the first
    player's token and the two players' clients (left open: a player who left would forfeit
    when the grace period ends)."""
    suffix = os.urandom(3).hex()
    token_a = await register(ws_url, f"syncA{suffix}", "correct horse battery")
    token_b = await register(ws_url, f"syncB{suffix}", "correct horse battery")
    a = await Client.connect(ws_url, token_a, auto_reconnect=False)
    b = await Client.connect(ws_url, token_b, auto_reconnect=False)
    created = await a.request({"type": "create_table", "mode": "private", "match_length": 99})
    table = str(created["table"])
    await b.request({"type": "join", "table": table})
    stop = asyncio.Event()
    tasks = [asyncio.ensure_future(drive(a, table, 0, stop)),
             asyncio.ensure_future(drive(b, table, 1, stop))]
    try:
        while True:
            await asyncio.sleep(0.5)
            view = a.tables.get(table)
            if view is not None and view.v >= events:
                break
            if any(t.done() for t in tasks):
                for t in tasks:
                    if t.done():
                        t.result()
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    return table, token_a, [a, b]


async def measure(proc: subprocess.Popen[bytes], ws_url: str, table: str, token: str,
                  protocol: int, rounds: int) -> dict[str, Any]:
    client = await Client.connect(ws_url, token, auto_reconnect=False, protocol=protocol,
                                  track_tables=False, queue_events=False)
    try:
        async def one(since: int) -> dict[str, Any]:
            answer = await client.request({"type": "sync", "table": table, "since": since})
            assert answer["type"] == "sync", answer
            return dict(answer)

        first = await one(0)
        version = int(first["v"])
        out: dict[str, Any] = {"v": version, "first_page_events": len(first["events"])}

        async def batch(name: str, sinces: list[int]) -> None:
            size = len(json.dumps(await one(sinces[0])).encode())
            before = cpu_seconds(proc.pid)
            for _ in range(rounds):
                for since in sinces:
                    await one(since)
            spent = cpu_seconds(proc.pid) - before
            out[name] = {"ms_per_answer": 1000 * spent / (rounds * len(sinces)),
                         "answers": len(sinces), "bytes_first": size}

        await batch("from_0", [0])
        pages = [0]
        answer = first
        while answer.get("next") is not None:
            pages.append(int(answer["next"]))
            answer = await one(int(answer["next"]))
        await batch("walk", pages)
        out["walk"]["ms_total"] = out["walk"]["ms_per_answer"] * len(pages)
        await batch("newest", [max(0, version - 20)])
        return out
    finally:
        await client.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    configs = (("unpaged", 1_000_000), ("paged", args.page))
    servers = [await start_server(page) for _name, page in configs]
    try:
        # Both tables are built at once (the figures are CPU time, not wall time), then
        # measured one server after the other.
        started = time.monotonic()
        built = await asyncio.gather(*(build_table(url, args.events) for _p, url in servers))
        seconds = round(time.monotonic() - started, 1)
        for (name, page), (proc, ws_url), (table, token, _players) in zip(
                configs, servers, built, strict=True):
            results[name] = {"sync_page": page, "build_seconds": seconds}
            for protocol in (2, 1):
                results[name][f"protocol_{protocol}"] = await measure(
                    proc, ws_url, table, token, protocol, args.rounds)
                print(name, protocol, json.dumps(results[name][f"protocol_{protocol}"]),
                      file=sys.stderr, flush=True)
        for _table, _token, players in built:
            for client in players:
                await client.close()
    finally:
        for proc, _url in servers:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--page", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text)
    print("\n| server | protocol | sync from 0: ms CPU, bytes | whole log: pages, ms CPU "
          "per page, total | newest 20: ms CPU |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        for protocol in (2, 1):
            m = r[f"protocol_{protocol}"]
            print(f"| {name} ({m['v']} events) | {protocol} | {m['from_0']['ms_per_answer']:.1f}"
                  f", {m['from_0']['bytes_first']:,} | {m['walk']['answers']}, "
                  f"{m['walk']['ms_per_answer']:.1f}, {m['walk']['ms_total']:.1f} | "
                  f"{m['newest']['ms_per_answer']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

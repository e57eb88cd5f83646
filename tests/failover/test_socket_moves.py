"""``python -m server --workers 2``: a socket is handed to the worker that owns its player's table
(``server/net/socket_moves.py``), so no move crosses between the workers.

Two players whose sockets landed on different workers sit down at one table: the joiner's
socket goes to the table's worker, with its file descriptor, at a frame boundary. The game
is then played to the end with no command forwarded between the workers, every event once
and in order at both players. A watcher on the other worker is moved too, and a player who
reconnects to the other worker is moved back to its table's.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import aiohttp
import pytest
from nodes import (
    Node,
    Player,
    play_moves,
    play_to_end,
    seat_two,
    wait_ready,
    wait_until,
)
from test_workers import children, player_on, start_workers, wait_until_logged, welcomed_by

_SAMPLE = re.compile(r'^(table42_socket_moves_total|table42_commands_forwarded_total)'
                     r'\{(?:result|to)="(\w+)"\} ([0-9.e+]+)$', re.M)


async def worker_metrics(node: Node, workers: int = 2) -> dict[str, dict[str, float]]:
    """Per worker (its node id): the socket moves by result and the commands forwarded by
    where (``moves:moved``, ``forwarded:sibling``, ...). Each new connection lands on any
    worker: asked until every one has answered."""
    found: dict[str, dict[str, float]] = {}
    url = f"http://127.0.0.1:{node.port}/metrics"
    for _ in range(400):
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector) as http, http.get(url) as resp:
            text = await resp.text()
            worker = resp.headers["X-Node"]
        found[worker] = {
            ("moves:" if name.startswith("table42_socket") else "forwarded:") + label:
                float(value) for name, label, value in _SAMPLE.findall(text)}
        if len(found) == workers:
            return found
    raise AssertionError(f"only {sorted(found)} answered /metrics")


def total(found: dict[str, dict[str, float]], key: str) -> float:
    return sum(values.get(key, 0.0) for values in found.values())


async def moved_at_least(node: Node, count: int) -> dict[str, dict[str, float]]:
    for _ in range(100):
        found = await worker_metrics(node)
        if total(found, "moves:moved") >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} sockets moved: {found}")


@pytest.mark.timeout(240)
async def test_sockets_go_to_their_tables_worker_and_no_move_crosses(tmp_path: Path) -> None:
    # (INFO: the link logs when it is up; a socket moves only over a link that is up)
    node = await start_workers(tmp_path, TABLE42_LOG_LEVEL="INFO")
    proc = node.proc
    players: list[Player] = []
    try:
        await wait_ready(node, timeout=120)
        await wait_until_logged(node, "link: connected to", 2)
        a = await player_on(node, "alice", None, None)
        players.append(a)
        owner = welcomed_by(a)  # alice creates the table: her worker owns it
        b = await player_on(node, "bob", None, owner)
        players.append(b)
        table = await seat_two(a, b)
        found = await moved_at_least(node, 1)
        assert total(found, "moves:failed") == 0, found

        # A watcher on the other worker goes to the table's worker as well.
        c = await player_on(node, "carol", None, owner)
        players.append(c)
        await c.request({"type": "watch", "table": table})
        found = await moved_at_least(node, 2)
        crossed = total(found, "forwarded:sibling")

        await play_moves([a, b], table, 6)
        found = await worker_metrics(node)
        assert total(found, "forwarded:sibling") == crossed, (crossed, found)

        # Bob reconnects and lands on the other worker: his catch-up brings him back.
        token = b.token
        await b.close()
        players.remove(b)
        for _ in range(200):
            b = await Player.open(node, token)
            if welcomed_by(b) != owner:
                break
            await b.close()
        players.append(b)
        await b.request({"type": "sync", "table": table, "since": 0})
        found = await moved_at_least(node, 3)
        crossed = total(found, "forwarded:sibling")

        over = await play_to_end([a, b], table)
        assert over["type"] == "game_over"
        await wait_until(lambda: bool(c.of_type("game_over", table)), what="watcher's end")
        found = await worker_metrics(node)
        assert total(found, "forwarded:sibling") == crossed, (crossed, found)
        assert total(found, "moves:failed") == 0, found
        for p in (a, b, c):
            assert not p.conflicts, p.conflicts
            assert not p.sync_failures, p.sync_failures
        assert not a.gaps(table) and not c.gaps(table), (a.gaps(table), c.gaps(table))
        assert "Traceback" not in node.log(), node.log()[-4000:]
    finally:
        for p in players:
            await p.close()
        if proc.returncode is None:
            node.signal(signal.SIGINT)
            try:
                await node.wait(60.0)
            except TimeoutError:
                for pid in children(proc.pid):
                    os.kill(pid, signal.SIGKILL)
                node.kill()
                await node.wait(10.0)

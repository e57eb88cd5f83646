"""What a game across two workers costs: the hand-over of a socket, and a move that crosses.

``python -m server --workers 2`` (embedded store), ``--pairs`` pairs of players whose sockets
landed on different workers (the kernel picks; sockets are opened until there are enough on
each). Per phase, the CPU of both workers (``/proc``, user + system) over the phase, less
what the same workers spend idle over as long (measured just before):

- **seat**: each pair sits down at a new table (the first player creates it on its worker,
  the second joins from the other), and the phase ends once the sockets have moved
  (``table42_socket_moves_total``): with ``--socket-moves 1`` one hand-over per game;
- **play**: ``--decisions`` decisions per game, the games at once, each decision sent when
  the last one's answer is back.

Run with hand-overs on and off, alternated (``--rounds`` of on, off, off, on). The difference
in *seat* per game is what a hand-over costs; the difference in *play* per decision, doubled
(off, half the decisions are the remote player's and cross), is what a crossing costs.
``--json`` prints every figure.

    python3 bench/socket_moves.py --pairs 100 --decisions 40 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.client import Client, default_decision, register  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_pids(parent: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(parent)],
                         capture_output=True, text=True, check=False).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "-m server" in line]


def metric(http: str, name: str, workers: int = 2) -> float:
    """``name`` summed over the workers (``X-Node`` says which one answered)."""
    seen: dict[str, float] = {}
    while len(seen) < workers:
        with urllib.request.urlopen(f"{http}/metrics", timeout=5) as resp:
            value = 0.0
            for line in resp.read().decode().splitlines():
                key, _, number = line.rpartition(" ")
                if key == name:
                    value = float(number)
            seen[resp.headers["X-Node"]] = value
    return sum(seen.values())


async def phase(pids: list[int], work: Any, idle_for: float = 2.0) -> float:
    """CPU seconds the workers spent on ``work()``, less their idle rate over as long."""
    before = sum(map(cpu_seconds, pids))
    await asyncio.sleep(idle_for)
    idle_rate = (sum(map(cpu_seconds, pids)) - before) / idle_for
    before = sum(map(cpu_seconds, pids))
    started = time.monotonic()
    await work()
    spent = sum(map(cpu_seconds, pids)) - before
    return spent - idle_rate * (time.monotonic() - started)


async def play(a: Client, b: Client, table: str, decisions: int) -> int:
    made = 0
    players = (a, b)
    while made < decisions:
        view = a.tables.get(table)
        state = None if view is None else view.state
        game = None if state is None else state.get("game")
        if game is None or game.get("to_act") is None or state.get("status") != "playing":
            if state is not None and state.get("status") not in (None, "playing", "open"):
                return made
            await asyncio.sleep(0.005)
            continue
        side = int(game["to_act"])
        actor = next(p for p in players if p.side(table) == side)
        try:
            await actor.request({**default_decision(game), "table": table})
        except Exception:
            await asyncio.sleep(0.01)
            continue
        made += 1
        await asyncio.sleep(0)
    return made


async def one_round(args: argparse.Namespace, moves: bool) -> dict[str, Any]:
    port = free_port()
    http = f"http://127.0.0.1:{port}"
    url = f"ws://127.0.0.1:{port}/ws"
    work = Path(tempfile.mkdtemp(prefix="table42-moves-"))
    env = dict(os.environ, TABLE42_SOCKET_MOVES="1" if moves else "0",
               TABLE42_LOG_LEVEL="WARNING")
    env.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "server", "--workers", "2", "--port", str(port), "--host",
         "127.0.0.1", "--data-dir", str(work / "store"), "--trusted-proxies", "127.0.0.1",
         "--scrypt-n", "2", "--scrypt-r", "1", "--rate-limit", "100000", "--rate-burst",
         "100000", "--http-rate-limit", "0", "--limits", "0", "--decision-time", "600"],
        cwd=ROOT, env=env, stdout=open(work / "server.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT)
    clients: list[Client] = []
    try:
        deadline = time.monotonic() + 120
        seen: set[str] = set()
        while len(seen) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not start")
            with contextlib.suppress(OSError), \
                    urllib.request.urlopen(f"{http}/readyz", timeout=2) as resp:
                seen.add(json.loads(resp.read())["node"])
            await asyncio.sleep(0.1)
        pids = worker_pids(server.pid)
        run = secrets.token_hex(2)
        on: dict[str, list[Client]] = {}
        n = 0
        while min((len(v) for v in on.values()), default=0) < args.pairs or len(on) < 2:
            n += 1
            token = await register(url, f"m{run}x{n}", "correct horse")
            client = await Client.connect(
                url, token, headers={"X-Forwarded-For": f"10.{n // 250}.{n % 250}.7"},
                keep_messages=True, queue_events=False, request_timeout=60)
            clients.append(client)
            node = next(m["node"] for m in client.messages if m.get("type") == "welcome")
            on.setdefault(node, []).append(client)
        first, second = sorted(on)
        pairs = list(zip(on[first][:args.pairs], on[second][:args.pairs], strict=True))
        moved0 = metric(http, 'table42_socket_moves_total{result="moved"}')
        tables: list[str] = []

        async def seat() -> None:
            async def one(a: Client, b: Client) -> str:
                answer = await a.request({"type": "create_table", "mode": "competitive",
                                          "match_length": 0})
                table = str(answer["table"])
                await b.request({"type": "join", "table": table})
                return table
            tables.extend(await asyncio.gather(*(one(a, b) for a, b in pairs)))
            if moves:
                while metric(http, 'table42_socket_moves_total{result="moved"}') - moved0 \
                        < len(pairs):
                    await asyncio.sleep(0.05)

        seat_cpu = await phase(pids, seat)
        made: list[int] = []

        async def decide() -> None:
            made.extend(await asyncio.gather(*(
                play(a, b, t, args.decisions) for (a, b), t in zip(pairs, tables, strict=True))))

        play_cpu = await phase(pids, decide)
        crossed = metric(http, 'table42_commands_forwarded_total{to="sibling"}')
        return {"moves": moves, "pairs": len(pairs), "seat_cpu_per_game_us":
                1e6 * seat_cpu / len(pairs), "decisions": sum(made),
                "play_cpu_per_decision_us": 1e6 * play_cpu / max(1, sum(made)),
                "commands_crossed": crossed}
    finally:
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--decisions", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for _ in range(args.rounds):
        for moves in (True, False, False, True):
            result = await one_round(args, moves)
            results.append(result)
            if not args.json:
                print(result, flush=True)
    on = [r for r in results if r["moves"]]
    off = [r for r in results if not r["moves"]]

    def mean(rows: list[dict[str, Any]], key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    summary = {
        "handover_us_per_game": mean(on, "seat_cpu_per_game_us")
        - mean(off, "seat_cpu_per_game_us"),
        "crossing_us_per_crossed_decision": 2 * (mean(off, "play_cpu_per_decision_us")
                                                 - mean(on, "play_cpu_per_decision_us")),
        "decision_us_moves_on": mean(on, "play_cpu_per_decision_us"),
        "runs": results,
    }
    print(json.dumps(summary, indent=2) if args.json else
          {k: v for k, v in summary.items() if k != "runs"})


if __name__ == "__main__":
    asyncio.run(main())

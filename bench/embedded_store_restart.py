"""How long play stops when the embedded store's redis-server is killed.

Starts ``python -m server`` without ``REDIS_URL`` (its default settings, a temporary data
folder and HOME), seats two guests of the client library at a table and plays their game
(the first legal play, every double taken), one action every ``--pace`` seconds; every
``--every`` accepted actions the redis-server is SIGKILLed and the action due is sent again
every ``--pace`` seconds until it is accepted. For each kill: the seconds from the kill to
the first action accepted after it (``ack``), and the supervisor's own figures from the
log (from the death to the store answering again). New games start until ``--kills``
kills are done. Run by hand::

    python bench/embedded_store_restart.py --kills 10 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.client import Client, RequestFailed  # noqa: E402
from server.embedded_redis import server_pid  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit("the server exited")
            try:
                async with http.get(base + "/healthz") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit("the server did not start")


def decision(client: Client, table: str) -> dict[str, Any] | None:
    state = client.state(table)
    if state is None or not client.my_turn(table):
        return None
    phase = state["game"]["phase"]
    if phase == "roll":
        return {"type": "roll"}
    if phase == "move":
        return {"type": "play", "play": client.legal_plays(table)[0]}
    if phase == "double_offered":
        return {"type": "take"}
    if phase == "resign_offered":
        return {"type": "accept_resign"}
    return None


async def play(ws: str, folder: Path, args: argparse.Namespace, gaps: list[float],
               refused: dict[str, int]) -> None:
    """One game; kills as it goes while kills are due."""
    a = await Client.connect(ws, guest=True)
    b = await Client.connect(ws, guest=True)
    try:
        table = await a.create_table("private")
        await b.join(table)
        await a.wait_for("game_start", table=table, timeout=20)
        accepted = 0
        killed: float | None = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            state = a.state(table)
            if state is not None and state.get("status") != "playing":
                return
            if killed is None and len(gaps) < args.kills and accepted and \
                    accepted % args.every == 0:
                pid = server_pid(folder / "redis.sock")
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                killed = time.monotonic()
            await asyncio.sleep(args.pace)
            for client in (a, b):
                action = decision(client, table)
                if action is None:
                    continue
                try:
                    await client.act(table, action)
                except RequestFailed as exc:
                    refused[exc.code] = refused.get(exc.code, 0) + 1
                    break
                accepted += 1
                if killed is not None:
                    gaps.append(time.monotonic() - killed)
                    killed = None
                break
    finally:
        await a.close()
        await b.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--every", type=int, default=25, help="accepted actions between kills")
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between actions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="t42b-", dir="/tmp"))
    folder, home = scratch / "d", scratch / "home"
    home.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "XDG_DATA_HOME") and not k.startswith("TABLE42_")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home))
    log_path = scratch / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "--port", str(port), "--data-dir", str(folder),
             "--embedded-restarts", str(args.kills + 1)],
            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            await wait_healthy(f"http://127.0.0.1:{port}", proc)
            gaps: list[float] = []
            refused: dict[str, int] = {}
            games = 0
            while len(gaps) < args.kills and games < 50:
                await wait_healthy(f"http://127.0.0.1:{port}", proc)
                await play(f"ws://127.0.0.1:{port}/ws", folder, args, gaps, refused)
                games += 1
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    text = log_path.read_text(errors="replace")
    back = [float(m) for m in re.findall(r"is back .*?: ([0-9.]+) s after it died", text)]
    shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "kills": len(gaps), "games": games, "pace_s": args.pace,
        "kill_to_first_accepted_s": {
            "median": round(statistics.median(gaps), 3), "max": round(max(gaps), 3),
            "all": [round(g, 3) for g in gaps]},
        "death_to_store_answering_s": {
            "median": round(statistics.median(back), 3) if back else None,
            "max": round(max(back), 3) if back else None},
        "refusals": refused, "server_exit": proc.returncode,
        "load_average": os.getloadavg(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    asyncio.run(main())

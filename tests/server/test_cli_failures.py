"""Every command-line entry answers an expected failure with one line on stderr saying what
happened and what to do, and the status of ``server/exits.py`` (docs/operations.md, "Exit
statuses"); no traceback. Ctrl-C after a game against the computer stops the server without
a word from its worker processes, and the stopped node leaves nothing for the next start."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from server_helpers import StartServer

from server.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from server.store.persistence import _aw
from tests.hermetic import ROOT, bare_env

DEAD_REDIS = "redis://127.0.0.1:1/0"


def command(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                          cwd=ROOT, env=env or bare_env(), timeout=120, check=False)


def one_line(done: subprocess.CompletedProcess[str], status: int, prog: str, *words: str) -> str:
    """The failure's line (the last of stderr: a server may log before it), after checking
    the status, that it is one line and names ``prog`` and ``words``."""
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.endswith("\n"), done.stderr
    line = done.stderr.splitlines()[-1]
    assert line.startswith(f"{prog}: ") and all(w in line for w in words), line
    return line


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_a_second_server_on_a_busy_port(busy_port: int, redis_url: str, key_prefix: str) -> None:
    done = command("server", "--port", str(busy_port), "--redis-url", redis_url,
                   "--key-prefix", key_prefix)
    one_line(done, EXIT_FAILED, "python -m server", f"port {busy_port}", "in use", "--port")
    assert done.stderr.count("\n") == 1  # said before anything starts


def test_the_server_without_its_redis() -> None:
    done = command("server", "--port", "0", "--redis-url", DEAD_REDIS, "--log-level", "ERROR")
    one_line(done, EXIT_FAILED, "python -m server", "cannot reach Redis", "REDIS_URL")


def test_a_bad_setting_is_one_line() -> None:
    done = command("server", "--port", "x")
    one_line(done, EXIT_USAGE, "python -m server", "--port")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("argv", [["server.admin", "reports"], ["server", "runner-key", "list"]])
def test_operator_commands_without_their_redis(argv: list[str]) -> None:
    done = command(*argv[:1], "--redis-url", DEAD_REDIS, *argv[1:]) if argv[0] == "server.admin" \
        else command("server", "runner-key", "--redis-url", DEAD_REDIS, "list")
    prog = "python -m server.admin" if argv[0] == "server.admin" else "python -m server runner-key"
    one_line(done, EXIT_FAILED, prog, "cannot reach Redis")
    assert done.stderr.count("\n") == 1


def test_revoking_a_runner_key_that_does_not_exist(redis_url: str, key_prefix: str) -> None:
    done = command("server", "runner-key", "--redis-url", redis_url, "--key-prefix",
                   key_prefix, "revoke", "nobody")
    one_line(done, EXIT_FAILED, "python -m server runner-key", "'nobody'", "list")
    assert done.stderr.count("\n") == 1


def test_operator_commands_with_nothing_to_do(tmp_path: Path) -> None:
    for argv, prog in ((["server.admin"], "python -m server.admin"),
                       (["server", "runner-key"], "python -m server runner-key")):
        done = command(*argv)
        one_line(done, EXIT_USAGE, prog, "--help")
        assert done.stderr.count("\n") == 1
    done = command("server", "runner-key", "--data-dir", str(tmp_path / "none"), "list")
    one_line(done, EXIT_USAGE, "python -m server runner-key", "no store", "--redis-url")


@pytest.mark.parametrize("url", ["ws://no-such-host.invalid/ws", "ws://127.0.0.1:1/ws"])
def test_the_bot_without_a_server(url: str) -> None:
    done = command("server.bot", "--url", url)
    one_line(done, EXIT_FAILED, "python -m server.bot", f"cannot reach the server at {url}",
             "--url")
    assert done.stderr.count("\n") == 1


async def run_bot(*argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server.bot", *argv, cwd=ROOT, env=bare_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_bot_joining_a_table_that_does_not_exist(start_server: StartServer) -> None:
    server = await start_server()
    code, _out, err = await run_bot("--url", server.ws_url, "--join", "nosuchtable1")
    done = subprocess.CompletedProcess([], code, "", err)
    one_line(done, EXIT_FAILED, "python -m server.bot", "no_such_table", "table id")
    assert err.count("\n") == 1


async def test_the_bot_with_a_token_the_server_does_not_know(start_server: StartServer) -> None:
    server = await start_server()
    code, _out, err = await run_bot("--url", server.ws_url, "--token", "not-a-token")
    done = subprocess.CompletedProcess([], code, "", err)
    one_line(done, EXIT_FAILED, "python -m server.bot", "refused the token", "HTTP 401",
             "--token")
    assert err.count("\n") == 1


async def test_ctrl_c_stops_the_bot_in_one_line(start_server: StartServer) -> None:
    server = await start_server()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server.bot", "--url", server.ws_url, cwd=ROOT, env=bare_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert b"waiting for an opponent" in line
    proc.send_signal(signal.SIGINT)
    err = (await asyncio.wait_for(proc.stderr.read(), 60)).decode()
    assert await proc.wait() == EXIT_INTERRUPTED
    assert err == "python -m server.bot: interrupted (Ctrl-C)\n"


def test_reviewing_a_file_that_is_not_a_match(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.mat"
    garbage.write_bytes(bytes(range(256)) * 4)
    for path, words in ((garbage, ("no game found", ".mat")),
                        (tmp_path / "missing.mat", ("cannot read",)),
                        (tmp_path, ("cannot read",))):
        done = command("server.bot.review", str(path))
        one_line(done, EXIT_USAGE, "python -m server.bot.review", str(path), *words)
        assert done.stdout == "" and done.stderr.count("\n") == 1


def test_training_with_nothing_to_do_or_nowhere_to_write(tmp_path: Path) -> None:
    out = str(tmp_path / "w.npz")
    done = command("server.bot.train", "--games", "0", "--out", out)
    one_line(done, EXIT_USAGE, "python -m server.bot.train", "--games", "--help")
    # Nowhere named: nothing is written (the shipped weights are never a default).
    done = command("server.bot.train", "--games", "5")
    one_line(done, EXIT_USAGE, "python -m server.bot.train", "--out", "--help")
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = command("server.bot.train", "--games", "1", "--out", str(blocker / "w.npz"))
    one_line(done, EXIT_USAGE, "python -m server.bot.train", "cannot write", "--out")
    assert done.stderr.count("\n") == 1
    done = command("server.bot.train", "--games", "9", "--resume", str(blocker), "--seed", "3",
                   "--out", out)
    one_line(done, EXIT_USAGE, "python -m server.bot.train", "--resume", "--seed")
    done = command("server.bot.train", "--games", "9", "--resume", str(tmp_path / "none.npz"),
                   "--out", out)
    one_line(done, EXIT_USAGE, "python -m server.bot.train", "cannot resume", "none.npz")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not an archive at all" * 10)
    done = command("server.bot.train", "--games", "9", "--resume", str(garbage), "--out", out)
    line = one_line(done, EXIT_USAGE, "python -m server.bot.train", "cannot resume",
                    "not a checkpoint written by --checkpoint-every")
    assert "allow_pickle" not in line


def test_a_redis_url_of_another_kind_is_one_line() -> None:
    for argv, prog in ((("server", "--port", "0"), "python -m server"),
                       (("server.admin", "reports"), "python -m server.admin"),
                       (("server", "runner-key", "list"), "python -m server runner-key")):
        for url in ("notaurl", "http://127.0.0.1:6379/0"):
            done = command(*argv, env={**bare_env(), "REDIS_URL": url})
            one_line(done, EXIT_USAGE, prog, "redis_url", "redis://", url)


def test_the_bot_given_another_kind_of_address_is_one_line() -> None:
    done = command("server.bot", "--url", "http://127.0.0.1:8080/ws")
    one_line(done, EXIT_USAGE, "python -m server.bot", "--url", "ws://", "http://127.0.0.1")


def test_usage_lines_name_the_command() -> None:
    for module in ("server.bot.review", "server.bot.train"):
        done = command(module, "--help")
        assert done.returncode == 0 and done.stdout.startswith(f"usage: python -m {module} ")


def test_the_rating_plugin_on_a_missing_file(tmp_path: Path) -> None:
    done = command("rating_plugin", "replay", str(tmp_path / "none.jsonl"), "--no-progress")
    one_line(done, EXIT_USAGE, "python -m rating_plugin replay", "none.jsonl")
    assert done.stderr.count("\n") == 1


async def _until_listening(proc: asyncio.subprocess.Process, log: list[str]) -> int:
    """Read the server's log until it listens; its port."""
    assert proc.stderr is not None
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line, "python -m server exited:\n" + "".join(log)
        log.append(line)
        if "listening on http://" in line:
            return int(line.split("listening on http://127.0.0.1:")[1].split()[0])


async def test_ctrl_c_after_a_computer_game_is_quiet_and_leaves_nothing(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "--port", "0", "--node-id", "quiet-one",
        "--redis-url", redis_url, "--key-prefix", key_prefix, "--scrypt-n", "2",
        cwd=ROOT, env=bare_env(), stderr=asyncio.subprocess.PIPE, start_new_session=True)
    log: list[str] = []
    try:
        port = await _until_listening(proc, log)
        code, out, err = await run_bot("--level", "random", "--against", "basic", "--url",
                                       f"ws://127.0.0.1:{port}/ws")
        assert code == 0 and "winner" in out, err
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the worker gets it too
        assert proc.stderr is not None
        log.append((await asyncio.wait_for(proc.stderr.read(), 60)).decode())
        assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = "".join(log)
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "node quiet-one stopped" in text
    nodes = f"{key_prefix}{{nodes}}"
    assert await redis_client.zrange(f"{nodes}:alive", 0, -1) == []
    assert not await redis_client.exists(f"{key_prefix}{{leases}}:node:quiet-one")
    leases = [key async for key in redis_client.scan_iter(match=f"{key_prefix}*:lease")]
    done = [await _aw(redis_client.hget(k, "done")) for k in leases]
    assert leases and done == [b"1"] * len(leases)  # type: ignore[comparison-overlap]

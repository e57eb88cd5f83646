"""Every bad input to calibrate, replay and export: one line naming the file and line (or
the setting), exit 2, no traceback; and ``replay --check`` of an empty log is not a pass."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from rating_plugin.store import RatingStore
from tests.hermetic import bare_env

ROOT = Path(__file__).resolve().parents[2]
PROG = "python -m rating_plugin"

GAME = {
    "kind": "table42", "seq": 1, "game_id": "g1", "finished_at": 1.7e9, "cube": 1,
    "winner": "ann", "loser": "bob", "winner_before": 1500, "loser_before": 1500,
}
HEADER = "kind,seq,game_id,finished_at,cube,winner,loser,winner_before,loser_before,places\n"


def run(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rating_plugin", *argv], capture_output=True, input=stdin,
        env=bare_env(), timeout=60, check=False,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


def jsonl(**changes: object) -> bytes:
    """A good game line with ``changes``, written raw (numbers JSON itself cannot produce)."""
    fields = {**GAME, **changes}
    parts = [f'"{k}":{v if isinstance(v, RawJson) else json.dumps(v)}' for k, v in fields.items()]
    return ("{" + ",".join(parts) + "}\n").encode()


class RawJson(str):
    """A JSON fragment to put into a line as it is."""


#: (file name, content, the error after "<path>:")
BAD_LOGS = [
    ("utf8.jsonl", jsonl() + jsonl(seq=2, winner="anXn").replace(b"X", b"\xff"),
     "2: not UTF-8 text: byte 0xff at byte "),
    ("utf8.jsonl", jsonl()[:-10] + b"\xc3(" + b"\n",
     "1: not UTF-8 text: byte 0xc3 at byte "),
    ("utf8.csv", (HEADER + "table42,1,g1,1,1,ann,bob,1500,1500,\n").encode()
     + b"table42,2,g2,1,1,\xe9ve,bob,1500,1500,\n",
     "3: not UTF-8 text: byte 0xe9 at byte 18 of the line"),
    ("bigint.jsonl", jsonl(winner_before=RawJson("1" + "0" * 400)),
     "1: winner_before: must be a finite number of magnitude at most 2^53, got an integer of "
     "about 401 digits"),
    ("longint.jsonl", jsonl(loser_before=RawJson("9" * 5000)),
     "1: not valid JSON: a number too long to read"),
    ("bigfloat.jsonl", jsonl(winner_before=RawJson("1e400")),
     "1: winner_before: must be a finite number of magnitude at most 2^53, got inf"),
    ("huge.jsonl", jsonl(loser_before=RawJson("-1e300")),
     "1: loser_before: must be a finite number of magnitude at most 2^53, got -1e+300"),
    ("bigfloat.csv", (HEADER + "table42,1,g1,1,1,ann,bob,1e999,1500,\n").encode(),
     "2: winner_before: must be a finite number of magnitude at most 2^53, got inf"),
    ("nan.csv", (HEADER + "table42,1,g1,1,1,ann,bob,nan,1500,\n").encode(),
     "2: winner_before: must be a finite number of magnitude at most 2^53, got nan"),
    ("deep.jsonl", (json.dumps(GAME) + "\n").encode()
     + b'{"kind":"podium","seq":2,"tournament_id":"t","awarded_at":1,"places":'
     + b"[" * 5000 + b"]" * 5000 + b"}\n",
     "2: not valid JSON: nested too deeply"),
    ("deep.csv", (HEADER + "podium,1,,,,,,,," + "[" * 5000 + "]" * 5000 + "\n").encode(),
     "2: places: not valid JSON: nested too deeply"),
    ("long.jsonl", b"[" * 300_000 + b"\n", "1: line longer than 16384 characters"),
]


@pytest.mark.parametrize(("name", "content", "error"), BAD_LOGS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD_LOGS)])
@pytest.mark.parametrize("command", [["calibrate"], ["calibrate", "--ladder", "fibs"],
                                     ["replay"], ["replay", "--check"]])
def test_a_bad_log_names_its_line_and_exits_2(
    command: list[str], name: str, content: bytes, error: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    done = run(*command, str(path), "--no-progress")
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{PROG} {command[0]}: error: {path}:{error}")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"winner_k": RawJson("1" + "0" * 23)},
         "winner_k: must be at most 2^53, got 100000000000000000000000"),
        ({"finished_at": RawJson("1e300")},
         "finished_at: must be a finite number of magnitude at most 2^53, got 1e+300"),
    ],
)
@pytest.mark.parametrize("check", [[], ["--check"]])
def test_replay_checks_every_field(
    changes: dict[str, object], error: str, check: list[str], tmp_path: Path
) -> None:
    """Replay reads every field (calibrate's fast path reads only the ones it fits on)."""
    path = tmp_path / "games.jsonl"
    path.write_bytes(jsonl(**changes))
    done = run("replay", str(path), *check, "--no-progress")
    assert done.returncode == 2
    assert done.stderr == f"{PROG} replay: error: {path}:1: {error}\n"


def test_stdin_is_read_as_bytes_too() -> None:
    done = run("replay", "-", "--no-progress", stdin=jsonl(winner="X").replace(b"X", b"\xff"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"{PROG} replay: error: <stdin>:1: not UTF-8 text: byte 0xff")


def test_numbers_at_the_bound_are_read_and_replayed(tmp_path: Path) -> None:
    edge = 2**53
    path = tmp_path / "edge.jsonl"
    path.write_bytes(
        jsonl(finished_at=edge, cube=64, winner_before=edge, loser_before=-edge, winner_k=edge,
              winner_recent=edge, winner_after=-edge)
        + jsonl(kind="fibs", seq=1, game_id="g2", match_length=edge, winner_before=-float(edge),
                loser_before=edge, winner_experience=edge)
    )
    for command in (["calibrate"], ["calibrate", "--ladder", "fibs"], ["replay"],
                    ["replay", "--ladder", "fibs", "--json"]):
        done = run(*command, str(path), "--no-progress")
        assert done.returncode == 0, (command, done.stderr)


@pytest.mark.parametrize("content", [b"", b"\n\n"])
def test_replay_check_of_an_empty_log_is_not_a_pass(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    done = run("replay", str(path), "--check", "--no-progress")
    assert done.returncode == 1
    assert "check: NOTHING checked (no records)" in done.stdout
    assert done.stderr.splitlines()[-1] == (
        f"{PROG} replay: error: replay --check: the log holds no records, so nothing was "
        "checked"
    )
    as_json = run("replay", str(path), "--check", "--no-progress", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["records"] == {"table42": 0, "fibs": 0, "podium": 0}
    assert run("replay", str(path), "--no-progress").returncode == 0  # no --check: a report


def test_a_prefix_that_holds_no_store_is_refused(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """A mistyped --prefix: export writes nothing (no file), replay and calibrate refuse, and
    the message names the prefixes that do hold a store."""

    async def settle() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            await RatingStore(client, prefix=key_prefix).settle(
                "g1", ladder="table42", winner="ann", loser="bob", finished_at=1.7e9)
        finally:
            await client.aclose()

    async def cleanup() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            keys = [key async for key in client.scan_iter(match=f"{key_prefix}*")]
            if keys:
                await client.unlink(*keys)
        finally:
            await client.aclose()

    asyncio.run(settle())
    try:
        typo = key_prefix + "x"
        out = tmp_path / "games.jsonl"
        source = ["--redis-url", redis_url, "--prefix", typo]
        for argv in (["export", *source, "--out", str(out)],
                     ["replay", *source, "--check", "--no-progress"],
                     ["calibrate", *source, "--no-progress"]):
            done = run(*argv)
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith(
                f"{PROG} {argv[0]}: error: no rated store under prefix {typo!r} at "
                f"{redis_url} (no settled game on either ladder); stores found under "
            )
            assert repr(key_prefix) in done.stderr and done.stderr.count("\n") == 1
        assert not out.exists()
        done = run("export", "--redis-url", redis_url, "--prefix", key_prefix, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert run("replay", str(out), "--check", "--no-progress").returncode == 0
    finally:
        asyncio.run(cleanup())


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["export", "--redis-url", "foo://x"], "--redis-url: Redis URL must specify one of "),
        (["export", "--redis-url", "redis://127.0.0.1:1/0"], "redis: Error "),
        (["export", "--prefix", "{x}"], "prefix: must not contain '{' or '}'"),
        (["replay", "--redis-url", "foo://x"], "--redis-url: Redis URL must specify one of "),
    ],
)
def test_export_settings_errors_are_one_line_and_exit_2(argv: list[str], error: str) -> None:
    done = run(*argv)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{PROG} {argv[0]}: error: {error}")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr

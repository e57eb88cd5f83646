"""Every setting is declared once (server/config.py): its flag, variable, bounds and --help
line come from that declaration."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from server.config import OPTIONS, Settings, SettingsError
from server.config_args import (
    STORE_SETTINGS,
    add_arguments,
    settings_from,
    settings_from_args,
    short_help,
)


def test_every_field_is_declared_with_a_help_line() -> None:
    assert [o.name for o in OPTIONS] == [f.name for f in fields(Settings)]
    assert all(o.declaration.help and o.declaration.group for o in OPTIONS)
    assert len({o.env for o in OPTIONS}) == len(OPTIONS)


def test_names_of_flags_and_variables() -> None:
    by_name = {o.name: o for o in OPTIONS}
    assert (by_name["decision_time"].flag, by_name["decision_time"].env) == (
        "--decision-time", "TABLE42_DECISION_TIME")
    assert by_name["redis_url"].env == "REDIS_URL"
    assert by_name["log_level"].env == "TABLE42_LOG_LEVEL"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"decision_time": 0}, "decision_time must be > 0, got 0"),
        ({"finished_linger": -1}, "finished_linger must be >= 0, got -1"),
        ({"port": 70000}, "port must be 0..65535, got 70000"),
        ({"matchmaking_hold": 6.0}, "matchmaking_hold must be 0..5, got 6.0"),
        ({"heartbeat": float("nan")}, "heartbeat must be > 0"),
        ({"log_level": "LOUD"}, "log_level must be one of"),
        ({"lease_ttl": 3.0}, "lease_ttl must be at least twice lease_renew"),
        ({"max_msg_size": -1}, "max_msg_size"),
        ({"scrypt_n": 1000}, "scrypt_n must be a power of two"),
        ({"key_prefix": "a{b}"}, "key_prefix"),
        ({"trusted_proxies": ("not-an-ip",)}, "trusted_proxies"),
        ({"node_id": "a b"}, "node_id"),
    ],
)
def test_declared_bounds_are_checked(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**changes)  # type: ignore[arg-type]


def test_flags_win_over_the_environment_which_wins_over_defaults() -> None:
    env = {"REDIS_URL": "redis://r:1/0", "TABLE42_DECISION_TIME": "12.5",
           "TABLE42_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16", "TABLE42_PORT": "9000",
           "TABLE42_LOG_LEVEL": "debug", "TABLE42_LIMITS": "0"}
    s = settings_from(["--port", "9100", "--grace-period", "7", "--key-prefix", "x:",
                       "--json-logs", "yes"], env)
    assert (s.redis_url, s.decision_time, s.port, s.grace_period, s.key_prefix) == (
        "redis://r:1/0", 12.5, 9100, 7.0, "x:")
    assert s.trusted_proxies == ("10.0.0.1", "192.168.0.0/16")
    assert (s.log_level, s.limits, s.json_logs, s.max_strikes) == ("debug", False, True, 3)


def test_a_value_that_does_not_parse_names_its_variable() -> None:
    with pytest.raises(SettingsError, match="TABLE42_PORT"):
        Settings.from_env({"TABLE42_PORT": "eighty"})


def test_commands_beside_the_server_take_the_store_settings() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, STORE_SETTINGS)
    args = parser.parse_args(["--key-prefix", "x:"])
    s = settings_from_args(args, {"REDIS_URL": "redis://r/0", "TABLE42_KEY_PREFIX": "y:"})
    assert (s.redis_url, s.key_prefix) == ("redis://r/0", "x:")
    with pytest.raises(SystemExit):
        parser.parse_args(["--port", "1"])


def test_help_all_is_grouped_and_shows_defaults_and_variables() -> None:
    out = subprocess.run([sys.executable, "-m", "server", "--help-all"], capture_output=True,
                         text=True, check=True).stdout
    assert "\ntables and games:\n" in out and "\nlogs and metrics:\n" in out
    flat = " ".join(out.split())
    assert "[> 0; default 60; env TABLE42_DECISION_TIME]" in flat
    assert "--flush-interval" not in out
    assert all(option.flag in out for option in OPTIONS)


def test_help_fits_a_screen_with_the_common_settings_and_a_line_per_group() -> None:
    out = subprocess.run([sys.executable, "-m", "server", "--help"], capture_output=True,
                         text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) <= 50 and max(map(len, lines)) <= 100
    assert "--port N" in out and "--redis-url TEXT" in out and "--help-all" in out
    assert "--decision-time" in out and "default 60" not in out  # a group's line, no detail
    assert "runner-key create|rotate|list|revoke" in out
    groups = {option.declaration.group for option in OPTIONS}
    assert all(sum(line.startswith(f"  {group} (") for line in lines) == 1 for group in groups)
    assert short_help() == out


def test_nothing_else_in_the_server_reads_the_environment() -> None:
    root = Path(__file__).resolve().parents[2] / "server"
    readers = [str(p.relative_to(root)) for p in sorted(root.rglob("*.py"))
               if p.name != "config.py" and re.search(r"os\.environ|getenv", p.read_text())]
    assert readers == []

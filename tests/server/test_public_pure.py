"""The pure parts of the HTTP API, without sockets: the token buckets, the parameter checks
and the calculator's argument lists, the JSON shaping of ratings."""

from __future__ import annotations

import pytest

from rating_plugin.cli import calculate
from server.net.http_middleware import credential_key, is_json_type, retry_after
from server.net.public_api import shown_rating
from server.net.public_params import (
    calculator_argv,
    parse_history,
    parse_leaderboard,
    parse_stakes,
    stakes_argv,
)
from server.protocol.errors import ProtocolError
from server.ratelimit import RateLimiter


def test_bucket_allows_a_burst_then_refills_at_the_rate() -> None:
    limiter = RateLimiter(2.0, 3)
    assert [limiter.take("a", 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a", 0.0) == pytest.approx(0.5)  # one token back in 1/2 s
    assert limiter.take("b", 0.0) == 0.0  # another key has its own bucket
    assert limiter.take("a", 0.25) == pytest.approx(0.25)
    assert limiter.take("a", 0.5) == 0.0
    assert limiter.take("a", 0.4) > 0  # time going backwards refills nothing
    assert limiter.take("a", 100.0) == 0.0  # refilled, never above the burst
    assert [limiter.take("a", 100.0) for _ in range(3)][-1] > 0


def test_bucket_memory_is_bounded_least_recently_used_first() -> None:
    limiter = RateLimiter(1.0, 1, max_keys=2)
    limiter.take("a", 0.0)
    limiter.take("b", 0.0)
    assert limiter.take("a", 0.0) > 0  # a is now the most recent
    limiter.take("c", 0.0)  # b is forgotten
    assert len(limiter) == 2
    assert limiter.take("b", 0.0) == 0.0  # full again: the bound is lenient, never strict
    assert limiter.take("c", 0.0) > 0


def test_a_zero_rate_turns_the_limit_off() -> None:
    limiter = RateLimiter(0.0, 1)
    assert not limiter.is_enabled
    assert all(limiter.take("a", 0.0) == 0.0 for _ in range(100)) and len(limiter) == 0


@pytest.mark.parametrize("value, expected", [
    ("application/json", True), ("application/json; charset=utf-8", True),
    ("Application/JSON", True), ("application/problem+json", True), ("text/json", False),
    ("text/plain", False), ("application/octet-stream", False), ("", False), (None, False),
])
def test_json_content_types(value: str | None, expected: bool) -> None:
    assert is_json_type(value) is expected


def test_credentials_are_keyed_by_digest_and_waits_round_up() -> None:
    key = credential_key("Bearer secret-token")
    assert "secret" not in key and key == credential_key("Bearer secret-token")
    assert key != credential_key("Bearer other")
    assert [retry_after(s) for s in (0.01, 1.0, 1.2, 30.0)] == ["1", "1", "2", "30"]


@pytest.mark.parametrize("ladder, query, field, code", [
    ("elo", {}, "ladder", "not_found"),
    ("table42", {"offset": "-1"}, "offset", "bad_field"),
    ("table42", {"offset": "1000001"}, "offset", "bad_field"),
    ("table42", {"limit": "0"}, "limit", "bad_field"),
    ("table42", {"limit": "2.5"}, "limit", "bad_field"),
    ("fibs", {"player": ""}, "player", "bad_field"),
    ("fibs", {"player": "x" * 65}, "player", "bad_field"),
    ("fibs", {"player": "a}b"}, "player", "bad_field"),
    ("fibs", {"player": "a\nb"}, "player", "bad_field"),
])
def test_leaderboard_parameters_name_the_field(
    ladder: str, query: dict[str, str], field: str, code: str
) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_leaderboard(ladder, query)
    assert (caught.value.code, caught.value.field) == (code, field)


def test_parameters_defaults() -> None:
    page = parse_leaderboard("boosted", {"player": "guest-12ab"})
    assert (page.offset, page.limit, page.player) == (0, 20, "guest-12ab")
    history = parse_history("ann", {})
    assert (history.ladder, history.limit) == ("table42", 50)
    stakes = parse_stakes({"player": "ann", "opponent": "bob"})
    assert (stakes.pool.id, stakes.pool.ladder) == ("competitive", "table42")


@pytest.mark.parametrize("system, query, argv", [
    ("table42", {"rating": "1500", "opponent": "1800", "result": "win"},
     ["table42", "--result", "win", "--cube", "1", "--version", "1.3.1", "--", "1500",
      "1800"]),
    ("table42", {"rating": "-1e5", "opponent": "1800.50", "result": "loss", "cube": "4",
                 "k": "16", "opponent_recent_games": "60"},
     ["table42", "--result", "loss", "--cube", "4", "--version", "1.3.1", "--k", "16",
      "--opponent-recent-games", "60", "--", "-100000.0", "1800.5"]),
    ("fibs", {"rating": "1500", "opponent": "1500", "result": "win", "length": "5"},
     ["fibs", "--result", "win", "--length", "5", "--", "1500", "1500"]),
    ("elo", {"rating": "1500", "opponent": "1600", "result": "draw", "preset": "fide",
             "games": "20", "age": "17", "peak": "2399"},
     ["elo", "--result", "draw", "--preset", "fide", "--games", "20", "--junior", "--",
      "1500", "1600"]),
])
def test_calculator_argument_lists(system: str, query: dict[str, str], argv: list[str]) -> None:
    assert calculator_argv(system, query) == argv
    calculate(argv)  # the command line accepts it


def test_stakes_argument_lists() -> None:
    assert stakes_argv("elo", {"rating": "1", "opponent": "2", "preset": "new",
                               "opponent_k": "10", "max_difference": "400"}) == [
        "stakes", "elo", "--preset", "new", "--opponent-k", "10", "--max-difference", "400",
        "--", "1", "2"]
    with pytest.raises(ProtocolError) as caught:
        stakes_argv("elo", {"rating": "1", "opponent": "2", "preset": "fide"})
    assert caught.value.field == "preset"


@pytest.mark.parametrize("ladder, rating, is_new, shown", [
    ("table42", 1532, False, "1532"), ("boosted", 4, False, "4"),
    ("fibs", 1523.125, False, "1523.13"), ("fibs", 1499.994, False, "1499.99"),
    ("fibs", 1500.0, True, "new"),
])
def test_ratings_as_players_see_them(ladder: str, rating: float, is_new: bool,
                                     shown: str) -> None:
    assert shown_rating(ladder, rating, is_new=is_new) == shown

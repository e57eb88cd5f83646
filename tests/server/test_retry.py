"""The one retry loop for Redis writes (server/store/retry.py)."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from server.store.retry import Backoff, retry_redis


def run_with(failures: int, backoff: Backoff) -> tuple[list[float], list[int], object]:
    pauses: list[float] = []
    told: list[int] = []
    calls = 0

    async def write() -> str:
        nonlocal calls
        calls += 1
        if calls <= failures:
            raise RedisConnectionError("away") if calls % 2 else OSError("reset")
        return "stored"

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    async def main() -> object:
        try:
            return await retry_redis(write, backoff, pause=pause,
                                     failed=lambda tries, _exc: told.append(tries))
        except (RedisConnectionError, OSError) as exc:
            return exc

    return pauses, told, asyncio.run(main())


def test_pauses_double_up_to_the_most_until_stored() -> None:
    pauses, told, result = run_with(6, Backoff(first=0.1, most=0.5))
    assert (pauses, told, result) == ([0.1, 0.2, 0.4, 0.5, 0.5, 0.5], [1, 2, 3, 4, 5, 6],
                                      "stored")


def test_gives_up_after_the_attempts_with_the_last_error() -> None:
    pauses, told, result = run_with(5, Backoff(attempts=3))
    assert (pauses, told, type(result)) == ([0.05, 0.1], [1, 2, 3], RedisConnectionError)


def test_before_each_try_may_stop_it() -> None:
    class Gone(Exception):
        pass

    async def write() -> None:
        raise RedisConnectionError("away")

    def before() -> None:
        raise Gone

    with pytest.raises(Gone):
        asyncio.run(retry_redis(write, before=before))


def test_a_bug_is_not_retried() -> None:
    async def write() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        asyncio.run(retry_redis(write))


@pytest.mark.parametrize("bad", [dict(first=0), dict(first=2, most=1), dict(attempts=0)])
def test_backoff_is_checked(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**bad)  # type: ignore[arg-type]

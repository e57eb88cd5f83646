"""The example bot of docs/client.md, run as written against a real server: once in-process,
and 20 times against ``python -m server`` with its default settings (the message rate
included: the library keeps it for the bot)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hardening_helpers import ServerProcess
from server_helpers import StartServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def example_bot() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    bots = [b for b in blocks if "play_computer" in b]
    assert len(bots) == 1
    return str(bots[0])


def test_the_example_bot_is_about_thirty_lines() -> None:
    lines = [line for line in example_bot().splitlines() if line.strip()]
    assert len(lines) <= 35


def example_main() -> Callable[[str], Awaitable[None]]:
    """The example's ``main(url)``, compiled from the document."""
    namespace: dict[str, Any] = {"__name__": "example_bot"}
    exec(compile(example_bot(), str(DOC), "exec"), namespace)
    main: Callable[[str], Awaitable[None]] = namespace["main"]
    return main


async def test_the_example_bot_plays_a_whole_game(
    start_server: StartServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await start_server()
    await example_main()(server.ws_url)
    out = capsys.readouterr().out
    assert "winner:" in out


GAMES = 20
AT_ONCE = 5
"""Bots playing at once: each game's computer player is counted against the address (all
bots here are 127.0.0.1; at most ``bot_games_per_address``, 10, at once) until it has left
its table, a moment after the game, so 5 playing plus 5 leaving stay within it."""


async def test_the_example_bot_plays_twenty_whole_games_on_a_default_server(
    redis_url: str, key_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing but where its store is: every limit is the default (30 messages/s a socket).
    node = ServerProcess("--redis-url", redis_url, "--key-prefix", key_prefix,
                         env={"TABLE42_LOG_LEVEL": "WARNING"})
    main = example_main()

    async def player(games: int) -> None:
        for _ in range(games):
            await asyncio.wait_for(main(node.ws_url), 300)

    try:
        await node.start()
        await asyncio.gather(*(player(GAMES // AT_ONCE) for _ in range(AT_ONCE)))
    finally:
        node.stop()
    winners = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith("winner:")]
    assert len(winners) == GAMES, winners

"""The example bot of docs/client.md, run as written against a real server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from server_helpers import StartServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def example_bot() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    bots = [b for b in blocks if "async def main" in b]
    assert len(bots) == 1
    return str(bots[0])


def test_the_example_bot_is_about_thirty_lines() -> None:
    lines = [line for line in example_bot().splitlines() if line.strip()]
    assert len(lines) <= 35


async def test_the_example_bot_plays_a_whole_game(
    start_server: StartServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await start_server()
    namespace: dict[str, Any] = {"__name__": "example_bot"}
    exec(compile(example_bot(), str(DOC), "exec"), namespace)
    await namespace["main"](server.ws_url)
    out = capsys.readouterr().out
    assert "winner:" in out

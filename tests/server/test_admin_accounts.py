"""``python -m server.admin`` commands acting on an account (revoke, mute, unmute, unlock),
over a real server's Redis: an account that does not exist is exit 1 with one line on stderr
and nothing written; a registered account, and a guest holding a live token, are acted on."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from admin_helpers import run_admin
from server_helpers import StartServer, connect, guest, register

COMMANDS = (("mute", "--minutes", "5"), ("unmute",), ("unlock",), ("revoke",))
"""Revoke last: a guest whose tokens ended is no account any more."""


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
async def test_an_admin_command_on_an_unknown_account_exits_1_with_one_line(
    start_server: StartServer, redis_url: str, key_prefix: str, redis_client: aioredis.Redis,
    command: tuple[str, ...],
) -> None:
    await start_server()
    for player in ("nobody", "\u202eevil\u0085"):
        code, out, err = await run_admin(redis_url, key_prefix, command[0], player,
                                         *command[1:])
        assert (code, out) == (1, ""), (command, err)
        line, end = err.split("\n")  # one line
        assert end == "" and line.isprintable(), err
        assert "no account" in line and "nothing done" in line, line
    assert [k async for k in redis_client.scan_iter(match=f"{key_prefix}*nobody*")] == []


async def test_admin_commands_act_on_accounts_and_live_guests(
    start_server: StartServer, redis_url: str, key_prefix: str,
) -> None:
    server = await start_server()
    await register(server, "alice")
    visitor = await connect(server, await guest(server))
    assert visitor.player is not None
    for player in ("Alice", visitor.player):
        for command in COMMANDS:
            code, out, err = await run_admin(redis_url, key_prefix, command[0], player,
                                             *command[1:])
            assert code == 0 and err == "" and out.count("\n") == 1, (command, player, err)
    code, _, err = await run_admin(redis_url, key_prefix, "mute", visitor.player)
    assert code == 1 and "no account" in err  # its tokens ended: nothing left to act on

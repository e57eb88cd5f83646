"""Operator commands: ``python -m server.admin revoke PLAYER`` ends every token of an account
(its sockets close with 4001 on every node within a second); ``mute PLAYER [--minutes N]`` and
``unmute PLAYER`` stop and allow a player's table chat (``chat_muted``, on every node at once);
``reports [--limit N]`` prints the reported chat messages, one JSON object a line, oldest first;
``unlock PLAYER`` forgets the account's failed logins, so no address waits for it any more (the
addresses it logged in from stay known; docs/operations.md, "The login throttle").

Finds Redis as the server does: ``--redis-url``/``REDIS_URL``, else the embedded store of the
data folder (``--data-dir``/``TABLE42_DATA_DIR``, the server's default folder otherwise);
``--key-prefix``/``TABLE42_KEY_PREFIX``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from server.config import Settings
from server.embedded_redis import EmbeddedRedisError, command_store
from server.store.accounts import Accounts
from server.store.games import GameRecords
from server.store.keys import Keys
from server.store.redis_client import redis_client


async def _revoke(url: str, prefix: str, player: str) -> int:
    redis = redis_client(url)
    try:
        accounts = Accounts(redis, Keys(prefix), Settings(redis_url=url, key_prefix=prefix))
        return await accounts.revoke_player(player.lower(), "revoked by an operator")
    finally:
        await redis.aclose()


async def _unlock(url: str, prefix: str, player: str) -> bool:
    redis = redis_client(url)
    try:
        accounts = Accounts(redis, Keys(prefix), Settings(redis_url=url, key_prefix=prefix))
        return await accounts.unlock(player.lower())
    finally:
        await redis.aclose()


T = TypeVar("T")


async def _with_records(url: str, prefix: str, act: Callable[[GameRecords], Awaitable[T]]) -> T:
    redis = redis_client(url)
    try:
        return await act(GameRecords(redis, Keys(prefix),
                                     Settings(redis_url=url, key_prefix=prefix)))
    finally:
        await redis.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.admin")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--data-dir", default=os.environ.get("TABLE42_DATA_DIR"),
                        help="the embedded store's folder when no Redis URL is given")
    parser.add_argument("--key-prefix", default=os.environ.get("TABLE42_KEY_PREFIX", "t42:"))
    commands = parser.add_subparsers(dest="command", required=True)
    revoke = commands.add_parser("revoke", help="end every token of an account")
    revoke.add_argument("player")
    mute = commands.add_parser("mute", help="stop a player's table chat for a while")
    mute.add_argument("player")
    mute.add_argument("--minutes", type=float, default=60.0)
    unmute = commands.add_parser("unmute", help="allow a muted player's table chat again")
    unmute.add_argument("player")
    reports = commands.add_parser("reports", help="print the reported chat messages")
    reports.add_argument("--limit", type=int, default=100)
    unlock = commands.add_parser("unlock", help="forget an account's failed logins")
    unlock.add_argument("player")
    args = parser.parse_args(argv)
    try:
        with command_store(args.redis_url, args.data_dir, os.environ) as url:
            return _run(args, url, args.key_prefix)
    except EmbeddedRedisError as exc:
        print(f"python -m server.admin: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, url: str, prefix: str) -> int:
    if args.command in ("mute", "unmute"):
        player = args.player.lower()
        until = time.time() + args.minutes * 60 if args.command == "mute" else 0.0
        asyncio.run(_with_records(url, prefix, lambda r: r.operator_mute(player, until)))
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(until))
        print(f"{player}: chat muted until {when}" if until else f"{player}: chat allowed")
        return 0
    if args.command == "reports":
        rows: list[dict[str, Any]] = asyncio.run(
            _with_records(url, prefix, lambda r: r.reports(max(1, args.limit))))
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return 0
    if args.command == "unlock":
        had = asyncio.run(_unlock(url, prefix, args.player))
        print(f"{args.player}: failed logins forgotten" if had
              else f"{args.player}: no failed logins to forget")
        return 0
    ended = asyncio.run(_revoke(url, prefix, args.player))
    print(f"{ended} token(s) of {args.player} ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

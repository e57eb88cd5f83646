"""Operator commands: ``python -m server.admin revoke PLAYER`` ends every token of an account
(its sockets close with 4001 on every node within a second); ``python -m server.admin unlock
PLAYER`` forgets the account's failed logins, so no address waits for it any more (the
addresses it logged in from stay known; docs/operations.md, "The login throttle").

Reads ``REDIS_URL`` and ``TABLE42_KEY_PREFIX`` (or ``--redis-url``/``--key-prefix``) like the
server does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from server.config import Settings
from server.store.accounts import Accounts
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.admin")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--key-prefix", default=os.environ.get("TABLE42_KEY_PREFIX", "t42:"))
    commands = parser.add_subparsers(dest="command", required=True)
    revoke = commands.add_parser("revoke", help="end every token of an account")
    revoke.add_argument("player")
    unlock = commands.add_parser("unlock", help="forget an account's failed logins")
    unlock.add_argument("player")
    args = parser.parse_args(argv)
    if not args.redis_url:
        print("python -m server.admin: set REDIS_URL or --redis-url", file=sys.stderr)
        return 2
    if args.command == "unlock":
        had = asyncio.run(_unlock(args.redis_url, args.key_prefix, args.player))
        print(f"{args.player}: failed logins forgotten" if had
              else f"{args.player}: no failed logins to forget")
        return 0
    ended = asyncio.run(_revoke(args.redis_url, args.key_prefix, args.player))
    print(f"{ended} token(s) of {args.player} ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

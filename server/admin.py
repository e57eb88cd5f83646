"""Operator commands: ``python -m server.admin revoke PLAYER`` ends every token of an account
(its sockets close with 4001 on every node within a second).

Finds Redis as the server does: ``--redis-url``/``REDIS_URL``, else the embedded store of the
data folder (``--data-dir``/``TABLE42_DATA_DIR``, the server's default folder otherwise);
``--key-prefix``/``TABLE42_KEY_PREFIX``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from server.config import Settings
from server.embedded_redis import EmbeddedRedisError, command_store
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.admin")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--data-dir", default=os.environ.get("TABLE42_DATA_DIR"),
                        help="the embedded store's folder when no Redis URL is given")
    parser.add_argument("--key-prefix", default=os.environ.get("TABLE42_KEY_PREFIX", "t42:"))
    commands = parser.add_subparsers(dest="command", required=True)
    revoke = commands.add_parser("revoke", help="end every token of an account")
    revoke.add_argument("player")
    args = parser.parse_args(argv)
    try:
        with command_store(args.redis_url, args.data_dir, os.environ) as url:
            ended = asyncio.run(_revoke(url, args.key_prefix, args.player))
    except EmbeddedRedisError as exc:
        print(f"python -m server.admin: {exc}", file=sys.stderr)
        return 2
    print(f"{ended} token(s) of {args.player} ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

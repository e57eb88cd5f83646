"""Operator commands (``python -m server.admin ...``):

- ``revoke PLAYER`` ends every token of an account (its sockets close with 4001 on every node
  within a second);
- ``suspicious`` lists signs of rating farming: pairs of accounts with many rated games in a
  window where one side won nearly all, and accounts seen from the same network address
  (:mod:`server.suspicious`); a readable table, or ``--json``.

Reads ``REDIS_URL`` and ``TABLE42_KEY_PREFIX`` (or ``--redis-url``/``--key-prefix``) like the
server does. Bad usage exits 2, a Redis error 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.config import Settings
from server.store.accounts import BOT_PREFIX, GUEST_PREFIX, Accounts
from server.store.keys import Keys
from server.store.redis_client import redis_client
from server.suspicious import (
    Game,
    format_report,
    lopsided_pairs,
    report_dict,
    settings_dict,
    shared_addresses,
)

PROG = "python -m server.admin"


async def _revoke(url: str, prefix: str, player: str) -> int:
    redis = redis_client(url)
    try:
        accounts = Accounts(redis, Keys(prefix), Settings(redis_url=url, key_prefix=prefix))
        return await accounts.revoke_player(player.lower(), "revoked by an operator")
    finally:
        await redis.aclose()


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


async def _suspicious(args: argparse.Namespace) -> str:
    redis = redis_client(args.redis_url)
    try:
        now = time.time()
        ratings = RatingStore(redis, args.key_prefix)
        games = [
            Game(s.winner.player, s.loser.player, str(s.ladder), s.finished_at)
            for ladder in ("table42", "fibs")
            async for s in ratings.settled_since(ladder, now - args.days * 86400)
        ]
        pairs = lopsided_pairs(games, min_games=args.min_games, min_share=args.min_share)
        keys = Keys(args.key_prefix)
        since_ms = (now - args.address_days * 86400) * 1000
        seen: dict[str, dict[str, float]] = {}
        async for raw in redis.scan_iter(match=keys.addresses_pattern, count=1000):
            key = _text(raw)
            player = key[key.index("{p:") + 3:key.rindex("}")]
            if player.startswith((GUEST_PREFIX, BOT_PREFIX)):
                continue  # guests and bots are never rated
            entries = await redis.zrangebyscore(key, since_ms, "+inf", withscores=True)
            if entries:
                seen[player] = {_text(address): at / 1000 for address, at in entries}
        groups = shared_addresses(seen, since=now - args.address_days * 86400)
    finally:
        await redis.aclose()
    settings = settings_dict(days=args.days, min_games=args.min_games,
                             min_share=args.min_share, address_days=args.address_days)
    if args.json:
        return json.dumps(report_dict(pairs, groups, settings), indent=2)
    return format_report(pairs, groups, settings)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r:.40}") from None
    if not 0 < value <= 366:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 366, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r:.40}") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be 1..1000000, got {value}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r:.40}") from None
    if not 0.5 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0.5 and 1, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Operator commands.")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--key-prefix", default=os.environ.get("TABLE42_KEY_PREFIX", "t42:"))
    commands = parser.add_subparsers(dest="command", required=True)
    revoke = commands.add_parser("revoke", help="end every token of an account")
    revoke.add_argument("player")
    suspicious = commands.add_parser(
        "suspicious", help="signs of rating farming: lopsided pairs, shared addresses",
        description="List pairs of accounts with many rated games in the last DAYS days where "
        "one side won nearly all, and accounts seen from the same network address (an IPv6 "
        "/64) in the last ADDRESS_DAYS days.")
    suspicious.add_argument("--days", type=_positive, default=7.0, metavar="DAYS",
                            help="window of settled games, days (default 7)")
    suspicious.add_argument("--min-games", type=_count, default=10, metavar="N",
                            help="rated games a pair played in the window (default 10)")
    suspicious.add_argument("--min-share", type=_share, default=0.9, metavar="F",
                            help="share of them one side won, 0.5..1 (default 0.9)")
    suspicious.add_argument("--address-days", type=_positive, default=30.0, metavar="DAYS",
                            help="window of addresses seen, days (default 30; kept 90)")
    suspicious.add_argument("--json", action="store_true", help="print JSON instead")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.redis_url:
        print(f"{PROG}: set REDIS_URL or --redis-url", file=sys.stderr)
        return 2
    try:
        if args.command == "suspicious":
            print(asyncio.run(_suspicious(args)))
            return 0
        ended = asyncio.run(_revoke(args.redis_url, args.key_prefix, args.player))
    except (RedisError, OSError) as exc:
        print(f"{PROG}: Redis: {exc}", file=sys.stderr)
        return 1
    print(f"{ended} token(s) of {args.player} ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

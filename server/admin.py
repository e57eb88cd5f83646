"""Operator commands (``python -m server.admin ...``):

- ``revoke PLAYER`` ends every token of an account (its sockets close with 4001 on every node
  within a second);
- ``mute PLAYER [--minutes N]`` and ``unmute PLAYER`` stop and allow a player's table chat
  (``chat_muted``, on every node at once); ``reports [--limit N]`` prints the oldest open chat
  reports, one JSON object a line (then, on stderr, how many are open and how many were
  refused because the list was full); ``resolve ID...`` closes reports;
- ``unlock PLAYER`` forgets the account's failed logins, so no address waits for it any more
  (the addresses it logged in from stay known; docs/operations.md, "The login throttle");
- ``suspicious`` lists signs of rating farming: pairs of accounts with many rated games in a
  window where one side won nearly all, and accounts seen from the same network address
  (:mod:`server.suspicious`); a readable table, or ``--json``.

Finds Redis as the server does: ``--redis-url``/``REDIS_URL``, else the embedded store of the
data folder (``--data-dir``/``TABLE42_DATA_DIR``, the server's default folder otherwise);
``--key-prefix``/``TABLE42_KEY_PREFIX``. Bad usage exits 2, a Redis error 1; so does a
command that found nothing to act on (an account that does not exist, a report that is not
open): one line on stderr. Whatever is printed has every unprintable character written as an
escape (``\u202e``): stored text is players' text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO, TypeVar

from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.config import Settings, SettingsError
from server.config_args import STORE_SETTINGS, add_arguments, settings_from_args
from server.embedded_redis import EmbeddedRedisError, command_store
from server.exits import EXIT_USAGE, CommandFailed, Parser, run_command, store_unreachable
from server.protocol.ids import BOT_PREFIX, GUEST_PREFIX
from server.protocol.text import printable
from server.store.accounts import Accounts
from server.store.games import GameRecords
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


T = TypeVar("T")


class NothingDone(CommandFailed):
    """A command found nothing to act on: its one line for stderr, exit 1."""


async def _with_store(url: str, prefix: str,
                      act: Callable[[Accounts, GameRecords], Awaitable[T]], *,
                      player: str | None = None) -> T:
    """``act`` on the accounts and the records; with ``player``, only once that account is
    known to exist (else :class:`NothingDone`)."""
    redis = redis_client(url)
    try:
        keys, settings = Keys(prefix), Settings(redis_url=url, key_prefix=prefix)
        accounts = Accounts(redis, keys, settings)
        if player is not None and not await accounts.exists(player):
            raise NothingDone(f"no account {player!r}: nothing done")
        return await act(accounts, GameRecords(redis, keys, settings))
    finally:
        await redis.aclose()


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _say(text: str, *, file: TextIO | None = None) -> None:
    """Print ``text`` with its unprintable characters escaped, line by line."""
    print("\n".join(printable(line) for line in text.split("\n")),
          file=sys.stdout if file is None else file)


async def _suspicious(args: argparse.Namespace, url: str, prefix: str) -> str:
    redis = redis_client(url)
    try:
        now = time.time()
        ratings = RatingStore(redis, prefix)
        games = [
            Game(s.winner.player, s.loser.player, str(s.ladder), s.finished_at)
            for ladder in ("table42", "fibs")
            async for s in ratings.settled_since(ladder, now - args.days * 86400)
        ]
        pairs = lopsided_pairs(games, min_games=args.min_games, min_share=args.min_share)
        keys = Keys(prefix)
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


def _bounded(kind: Callable[[str], float], low: float, high: float, *,
             above: bool = False) -> Callable[[str], float]:
    """An argparse type: ``kind`` (int or float) of ``text`` within ``low``..``high``
    (``above``: more than ``low``), else a one-line error."""
    noun = "a whole number" if kind is int else "a number"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {noun}: {text!r:.40}") from None
        if not (low < value if above else low <= value) or not value <= high:
            bound = f"more than {low:g}" if above else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"must be {bound} and at most {high:g}, got {text}")
        return value

    return parse


_days = _bounded(float, 0, 366, above=True)
_count = _bounded(int, 1, 1_000_000)
_share = _bounded(float, 0.5, 1)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="Operator commands.")
    add_arguments(parser, STORE_SETTINGS)
    commands = parser.add_subparsers(dest="command", required=True)
    revoke = commands.add_parser("revoke", help="end every token of an account")
    revoke.add_argument("player")
    mute = commands.add_parser("mute", help="stop a player's table chat for a while")
    mute.add_argument("player")
    mute.add_argument("--minutes", type=_bounded(float, 0, 366 * 24 * 60, above=True),
                      default=60.0, help="how long, minutes (default 60, at most a year)")
    unmute = commands.add_parser("unmute", help="allow a muted player's table chat again")
    unmute.add_argument("player")
    reports = commands.add_parser("reports", help="print the oldest open chat reports")
    reports.add_argument("--limit", type=_bounded(int, 1, 10_000), default=100,
                         help="reports printed at most, 1..10000 (default 100)")
    resolve = commands.add_parser("resolve", help="close chat reports (their id)")
    resolve.add_argument("ids", nargs="+", type=_bounded(int, 1, 2**53), metavar="ID")
    unlock = commands.add_parser("unlock", help="forget an account's failed logins")
    unlock.add_argument("player")
    suspicious = commands.add_parser(
        "suspicious", help="signs of rating farming: lopsided pairs, shared addresses",
        description="List pairs of accounts with many rated games in the last DAYS days where "
        "one side won nearly all, and accounts seen from the same network address (an IPv6 "
        "/64) in the last ADDRESS_DAYS days.")
    suspicious.add_argument("--days", type=_days, default=7.0, metavar="DAYS",
                            help="window of settled games, days (default 7)")
    suspicious.add_argument("--min-games", type=_count, default=10, metavar="N",
                            help="rated games a pair played in the window (default 10)")
    suspicious.add_argument("--min-share", type=_share, default=0.9, metavar="F",
                            help="share of them one side won, 0.5..1 (default 0.9)")
    suspicious.add_argument("--address-days", type=_days, default=30.0, metavar="DAYS",
                            help="window of addresses seen, days (default 30; kept 90)")
    suspicious.add_argument("--json", action="store_true", help="print JSON instead")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(PROG, lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None
    try:
        with command_store(settings.redis_url, settings.data_folder()) as url:
            try:
                return _run(args, url, settings.key_prefix)
            except (RedisError, OSError) as exc:
                raise store_unreachable(url, exc) from None
    except EmbeddedRedisError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None
    except (RedisError, OSError) as exc:  # the embedded store of the data folder
        raise CommandFailed(f"Redis: {exc}") from None


def _run(args: argparse.Namespace, url: str, prefix: str) -> int:
    if args.command == "reports":
        page = asyncio.run(_with_store(url, prefix, lambda _, r: r.reports.page(int(args.limit))))
        for row in page.reports:
            _say(json.dumps(row, ensure_ascii=False))
        _say(f"{page.open} open report(s), {len(page.reports)} printed; {page.refused} "
             "refused because the list was full", file=sys.stderr)
        return 0
    if args.command == "resolve":
        ids = [int(n) for n in args.ids]
        missing = asyncio.run(_with_store(url, prefix, lambda _, r: r.reports.resolve(ids)))
        if missing:
            raise NothingDone(f"no open report {', '.join(map(str, missing))}; "
                              f"{len(ids) - len(missing)} resolved")
        print(f"{len(ids)} report(s) resolved")
        return 0
    if args.command == "suspicious":
        _say(asyncio.run(_suspicious(args, url, prefix)))
        return 0
    player = args.player.lower()
    name = printable(player)
    if args.command in ("mute", "unmute"):
        until = time.time() + args.minutes * 60 if args.command == "mute" else 0.0
        asyncio.run(_with_store(url, prefix, lambda _, r: r.operator_mute(player, until),
                                player=player))
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(until))
        print(f"{name}: chat muted until {when}" if until else f"{name}: chat allowed")
        return 0
    if args.command == "unlock":
        had = asyncio.run(_with_store(url, prefix, lambda a, _: a.unlock(player), player=player))
        print(f"{name}: failed logins forgotten" if had
              else f"{name}: no failed logins to forget")
        return 0
    ended = asyncio.run(_with_store(
        url, prefix, lambda a, _: a.revoke_player(player, "revoked by an operator"),
        player=player))
    print(f"{ended} token(s) of {name} ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m server runner-key create NAME | rotate NAME | list | revoke NAME``: the operator's
runner keys.

Redis is found as the server finds it: ``--redis-url`` / ``REDIS_URL``, else the embedded store
of the data folder (``--data-dir`` / ``TABLE42_DATA_DIR``, the server's default folder
otherwise), and ``--key-prefix`` / ``TABLE42_KEY_PREFIX`` (default ``t42:``). ``create`` prints
the new key once (only its digest is stored); ``rotate`` prints a new key for the same runner
and kills the old one in the same step (the runner keeps its tournaments); ``list`` prints each
key's name, id and creation time (never a key); ``revoke`` forgets a key at once (its
tournaments stay the name's: a key created later under the same name controls them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping, Sequence

from redis.exceptions import RedisError

from server.config import SettingsError
from server.config_args import STORE_SETTINGS, add_arguments, settings_from_args
from server.embedded_redis import EmbeddedRedisError, command_store
from server.exits import EXIT_USAGE, CommandFailed, Parser, run_command, store_unreachable
from server.store.redis_client import redis_client
from server.tournaments.keys import TournamentKeys
from server.tournaments.runner_keys import RunnerKeyError, RunnerKeys

PROG = "python -m server runner-key"


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="Manage tournament runner keys.")
    add_arguments(parser, STORE_SETTINGS)
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="make a key and print it once")
    create.add_argument("name")
    rotate = sub.add_parser("rotate", help="a new key for NAME, the old one dead at once "
                            "(NAME keeps its tournaments); printed once")
    rotate.add_argument("name")
    sub.add_parser("list", help="list the keys' names (never the keys)")
    revoke = sub.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name")
    return parser


async def _run(args: argparse.Namespace, redis_url: str, prefix: str) -> int:
    client = redis_client(redis_url)
    try:
        keys = RunnerKeys(client, TournamentKeys(prefix))
        if args.command == "create":
            key, runner = await keys.create(args.name)
            print(key)
            print(f"runner key {runner.name!r} (id {runner.id}) created; the key is shown "
                  "only now", file=sys.stderr)
            return 0
        if args.command == "rotate":
            key, runner, old = await keys.rotate(args.name)
            print(key)
            print(f"runner key {runner.name!r} rotated: new id {runner.id}, old id {old} no "
                  "longer works; the key is shown only now", file=sys.stderr)
            return 0
        if args.command == "list":
            for runner in await keys.list():
                created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(runner.created_at))
                print(f"{runner.name}\t{runner.id}\t{created}")
            return 0
        if await keys.revoke(args.name):
            print(f"runner key {args.name!r} revoked", file=sys.stderr)
            return 0
        raise CommandFailed(f"no runner key named {args.name!r} (python -m server runner-key "
                            "list shows them)")
    finally:
        await client.aclose()


def main(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Run one command; ``environ`` (the process environment when None) gives the settings
    no flag gives. Exit statuses as ``server/exits.py``: 1 for a key that does not exist or
    a store that cannot be reached, 2 for bad usage."""
    args = _parser().parse_args(argv)
    return run_command(PROG, lambda: _main(args, environ))


def _main(args: argparse.Namespace, environ: Mapping[str, str] | None) -> int:
    try:
        settings = settings_from_args(args, environ)
    except SettingsError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None
    try:
        with command_store(settings.redis_url, settings.data_folder(environ)) as url:
            try:
                return asyncio.run(_run(args, url, settings.key_prefix))
            except (RedisError, OSError) as exc:
                raise store_unreachable(url, exc) from None
    except EmbeddedRedisError as exc:
        raise CommandFailed(str(exc), EXIT_USAGE) from None
    except RunnerKeyError as exc:
        raise CommandFailed(str(exc)) from None
    except (RedisError, OSError) as exc:  # the embedded store of the data folder
        raise CommandFailed(f"Redis: {exc}") from None

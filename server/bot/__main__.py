"""``python -m server.bot``: a computer player on a Table42 server, through the public
protocol only (the client library).

    python -m server.bot --level casual --url ws://127.0.0.1:8080/ws --games 3  # 3 tables in turn
    python -m server.bot --level beginner --url ws://host/ws --against random --games 10
    python -m server.bot --level random --url ws://host/ws --join kB9rMFnnuYBV  # one game

It plays as a bot account (``POST /api/bot``, marked ``bot: true``: never rated, no
matchmaking, no tournaments), or with ``--token``. Each game it either opens a private
table and waits for someone to join (the default; the table id is printed), joins
``--join TABLE``, or asks the server for its own computer opponent (``--against LEVEL``;
then it plays as a guest, since a bot account may not ask for one).
Prints one line per game and exits 0 when all games were played. An expected failure is one
line on stderr and a status from ``server/exits.py``: 1 when the server cannot be reached or
refuses (an unknown ``--join`` table, a refused token), 2 for bad usage, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

import aiohttp

from server.bot.player import BotPlayer, GameLog
from server.bot.strategy import LEVEL_NAMES, Level
from server.client import Client, ClientError, Format, Refused, RequestFailed, guest_token
from server.client.accounts import bot_token as account_token
from server.exits import CommandFailed, Parser, run_command

PROG = "python -m server.bot"


async def bot_token(url: str, level: Level) -> str:
    """A bot account's token; a 429 with a short ``Retry-After`` is waited out first."""
    try:
        return await account_token(url, str(level))
    except ClientError as exc:
        raise CommandFailed(f"the server refused a bot account ({exc}); give a token with "
                            "--token") from None


BUSY_TRIES = 60
"""``busy`` refusals (an overloaded node, PROTOCOL.md §18) waited out before giving up."""


async def sit_down(client: Client, args: argparse.Namespace, tries: int = 100) -> str:
    """A table for the next game. The seat of the game just over is freed a moment after
    its end, so ``already_seated`` is retried for a few seconds; a ``busy`` node is asked
    again after its ``retry_after``."""
    busy = seated = 0
    while seated < tries:
        try:
            if args.join:
                await client.join(args.join)
                return str(args.join)
            if args.against:
                return await client.play_computer(args.against)
            table = await client.create_table("private")
            print(f"table {table}: waiting for an opponent", flush=True)
            return table
        except RequestFailed as exc:
            if exc.code == "busy" and busy < BUSY_TRIES:
                busy += 1
                wait = exc.error.raw.get("retry_after")
                await asyncio.sleep(float(wait) if isinstance(wait, int | float) else 1.0)
                continue
            if exc.code != "already_seated":
                raise
            seated += 1
            await asyncio.sleep(0.05)
    raise CommandFailed("still seated at the previous table after its end; try again in a "
                        "moment")


async def run(args: argparse.Namespace) -> int:
    level = Level(args.level)
    if args.token:
        token = args.token
    elif args.against:  # a bot account may not ask for a computer opponent: a guest may
        token = await guest_token(args.url)
    else:
        token = await bot_token(args.url, level)
    client = await Client.connect(args.url, token, fmt=Format(args.format),
                                  urls=args.urls[1:])
    bot = BotPlayer(client, level, seed=args.seed, decision_timeout=args.decision_timeout)
    won = 0
    try:
        for n in range(args.games):
            table = await sit_down(client, args)
            record: GameLog = await bot.play_table(table)
            client.forget(table)
            final = record.final or {}
            winner = final.get("winner")
            won += winner == client.player
            print(f"game {n + 1}: table {table} {final.get('type')} winner {winner} "
                  f"reason {final.get('reason')} points {final.get('points')} "
                  f"decisions {record.decisions}", flush=True)
            if args.join:
                break
    finally:
        await client.close()
    print(f"{client.player} ({level}) won {won} of {args.games if not args.join else 1}")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = Parser(prog=PROG, description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", choices=LEVEL_NAMES, default="beginner")
    parser.add_argument("--url", action="append", dest="urls", metavar="URL",
                        help="the server's /ws URL (default ws://127.0.0.1:8080/ws); given "
                             "several times, the nodes to reconnect to after a restart")
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--token", help="play with this token instead of a new bot account")
    parser.add_argument("--join", metavar="TABLE", help="join this table (one game)")
    parser.add_argument("--against", choices=LEVEL_NAMES,
                        help="play the server's computer player at this level")
    parser.add_argument("--format", choices=["json", "msgpack"], default="msgpack")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--decision-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    args.urls = args.urls or ["ws://127.0.0.1:8080/ws"]
    args.url = args.urls[0]
    for url in args.urls:
        if not url.startswith(("ws://", "wss://")):
            parser.error(f"--url must be the server's ws:// or wss:// address (its /ws), "
                         f"got {url!r}")
    if args.games < 1:
        parser.error("--games must be at least 1")
    return args


#: What to do after the server refused a request with this code.
ADVICE = {
    "no_such_table": "check the table id (it may have ended)",
    "table_full": "both seats are taken; join another table",
    "already_seated": "that player is seated at another table",
    "not_authenticated": "the token is not valid (expired?); leave --token out for a new "
                         "account",
}


async def _guarded(args: argparse.Namespace) -> int:
    """:func:`run`, with the failures a user can cause said in one line."""
    try:
        return await run(args)
    except RequestFailed as exc:
        advice = ADVICE.get(exc.code, "see PROTOCOL.md for the error codes")
        raise CommandFailed(f"the server refused: {exc} ({advice})") from None
    except Refused as exc:
        if exc.status == 401:
            raise CommandFailed(f"the server refused the token: {exc} (leave --token out for "
                                "a new bot account)") from None
        raise CommandFailed(f"the server refused the socket: {exc}") from None
    except (TimeoutError, ClientError, aiohttp.ClientError, OSError) as exc:
        raise CommandFailed(f"cannot reach the server at {args.url}: {exc or type(exc).__name__}"
                            " (is it running? is --url right?)") from None


INTERRUPT_AGAIN = 1.0
"""Seconds between two cancellations of a bot interrupted by Ctrl-C that still runs."""


async def _interruptible(args: argparse.Namespace) -> int:
    """:func:`_guarded`, stopped by Ctrl-C (SIGINT): its task is cancelled, and cancelled again
    every :data:`INTERRUPT_AGAIN` while it runs, so a cancellation lost on the way (Python
    3.11's ``asyncio.wait_for`` drops one that meets a result already there; a close
    handshake may wait on a server that does not answer) never leaves the bot running."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(_guarded(args))
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        if not task.done():
            task.cancel()
            loop.call_later(INTERRUPT_AGAIN, interrupt)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        return await task
    except (asyncio.CancelledError, CommandFailed):
        if interrupted:  # whatever the cancellation became on its way out
            raise KeyboardInterrupt from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_command(PROG, lambda: asyncio.run(_interruptible(args)))


if __name__ == "__main__":
    sys.exit(main())

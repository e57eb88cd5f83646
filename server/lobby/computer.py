"""Play the computer: ``play_computer`` seats the player against a bot started by this node.

The bot is a client like any other: a task of this node's event loop that connects to the
node's own WebSocket with a bot token (:meth:`server.store.accounts.Accounts.bot`) through the
client library and plays with :class:`server.bot.player.BotPlayer`. The ladder's levels
(``server/bot/ladder.py``) choose in a process pool (``bot_workers``; 0 = a thread), so a
bot's evaluation never holds the event loop; with ``SEARCHES_PER_WORKER`` deep searches per
process in flight, further decisions of the top rung search one roll deep instead (counted in
``fallbacks``).
A bot that errors, loses its socket or thinks longer than
``bot_decision_timeout`` forfeits (it leaves the table: a loss at the current cube) and
is logged; nothing it does can crash the node. A table taken over from another node (that
node drained or died) gets its bot back: the new owner runs it under a new token for the
same bot id (:meth:`ComputerOpponents.resume`).

Games against a bot are never rated (``rating.unrated_reason`` is ``bot``), count on no
ladder, and bots may not queue for matchmaking or play in tournaments
(``bot_not_allowed``). Limits (``too_many_bot_games``): ``bot_games_per_node`` games at
once on this node, ``bot_games_per_player`` games started per player per
``bot_games_window`` seconds (counted on this node).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
from collections import Counter, deque
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from server.bot.player import BotPlayer, BotStalled, Choice, Think, think_here, think_in
from server.bot.strategy import Level
from server.client import Client, ClientError, Format
from server.config import Settings
from server.exits import leave_interrupts_to_parent
from server.lobby.ports import Clock, GameStarter, Outbox
from server.lobby.refusals import error_reply, store_away
from server.lobby.registry import TableRegistry
from server.lobby.table import Table
from server.metrics import Metrics
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.ids import BOT_ID, network_key
from server.protocol.messages import MAX_VERSION, PlayComputer
from server.protocol.node_messages import Actor
from server.store.accounts import Accounts, Identity
from server.store.persistence import Persistence
from server.tables.ratings import RatingPlan

log = logging.getLogger(__name__)

STARTED_KEPT = 10_000
"""Players whose starts of games against the computer are tracked before those with no
start left in the window are forgotten (then again each time the count doubles)."""
SEARCHES_PER_WORKER = 2
"""Deep searches queued per pool process at most; more decisions search one roll deep, so a
busy node's top-rung bots stay prompt (slightly weaker) instead of late."""


@dataclass
class BotGame:
    table: str
    player: str
    bot: str
    level: Level
    task: asyncio.Task[None] | None = None
    address: str = ""  # the human's network (network_key), for bot_games_per_address


class ComputerOpponents:
    """Handles ``play_computer`` for this node and runs its bots. ``own_url()``: the
    WebSocket URL the bots connect to (this node's; None while it is not known: then the
    one its settings name)."""

    def __init__(self, settings: Settings, accounts: Accounts, games: GameStarter,
                 registry: TableRegistry, persistence: Persistence, outbox: Outbox,
                 clock: Clock, metrics: Metrics, own_url: Callable[[], str | None]) -> None:
        self.settings = settings
        self.accounts = accounts
        self.starter = games
        self.registry = registry
        self.persistence = persistence
        self.metrics = metrics
        self.outbox = outbox
        self.clock = clock
        self.own_url = own_url
        self.games: dict[str, BotGame] = {}  # table id -> game
        self._started: dict[str, deque[float]] = {}  # player -> start times in the window
        self._started_prune_at = STARTED_KEPT  # see _forget_old_starts
        self._executor: Executor | None = None
        self._searching = 0  # deep searches in the pool now
        self._starting = 0  # games past the limit checks, not yet in ``games``
        self._tokens: set[str] = set()  # tokens of this node's bots now playing
        self._by_address: Counter[str] = Counter()  # games (and starts) per human network
        self.fallbacks = 0  # decisions made one roll deep (the pool was busy)
        self._closing = False

    def owns_token(self, token: str | None) -> bool:
        """Whether ``token`` is one of this node's own bots (they connect from the node's
        address, and are not held to its per-address socket limit)."""
        return token is not None and token in self._tokens

    # --- the request -------------------------------------------------------------------------

    async def on_message(self, identity: Identity, actor: Actor, msg: PlayComputer) -> None:
        """``play_computer`` from ``identity`` on the socket of ``actor``."""
        try:
            reply = await self._start(identity, actor, msg)
        except Exception as exc:
            reply = error_reply(exc, msg.ref, None, doing=f"starting a game against the "
                                f"computer for {actor.player}", metrics=self.metrics)
        if reply is not None:
            self.outbox.push_conn_id(actor.conn, Outgoing(reply))

    def _check_limits(self, identity: Identity, now: float, address: str) -> None:
        settings = self.settings
        if identity.is_bot:
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "a computer player cannot ask for a computer opponent")
        most = settings.bot_games_per_address
        if settings.limits and most and self._by_address[address] >= most:
            self.metrics.refused("bot_games_per_address")
            raise ProtocolError(ErrorCode.TOO_MANY_BOT_GAMES,
                                f"at most {most} games against the computer from one address "
                                "at once; retry later")
        if len(self.games) + self._starting >= settings.bot_games_per_node:
            raise ProtocolError(ErrorCode.TOO_MANY_BOT_GAMES,
                                f"this server hosts at most {settings.bot_games_per_node} "
                                "games against the computer at once; retry later")
        started = self._started.get(identity.player)
        if started is not None:
            while started and started[0] <= now - settings.bot_games_window:
                started.popleft()
            if len(started) >= settings.bot_games_per_player:
                raise ProtocolError(
                    ErrorCode.TOO_MANY_BOT_GAMES,
                    f"at most {settings.bot_games_per_player} games against the computer "
                    f"per {settings.bot_games_window:g} s",
                )

    def _forget_old_starts(self, now: float) -> None:
        """Forget the players with no start left in ``bot_games_window`` (each new player,
        every guest among them, would otherwise stay for the node's life); the next look
        comes when the count has doubled, so a look costs O(1) per start."""
        cutoff = now - self.settings.bot_games_window
        self._started = {p: d for p, d in self._started.items() if d and d[-1] > cutoff}
        self._started_prune_at = max(STARTED_KEPT, 2 * len(self._started))

    async def _start(self, identity: Identity, actor: Actor, msg: PlayComputer
                     ) -> dict[str, object] | None:
        if self._closing or self.registry.closing:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "the server is shutting down")
        if not self.persistence.redis_up:  # as the lobby does while Redis is away
            raise store_away()
        now = self.clock.monotonic()
        address = network_key(actor.address)
        self._check_limits(identity, now, address)
        if not 0 <= msg.match_length <= self.settings.max_match_length:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"field 'match_length' must be in 0..{self.settings.max_match_length}",
                field="match_length",
            )
        # The checks and the starts below are apart by awaits: hold a place in both limits
        # at once, so that concurrent requests cannot all pass them.
        if len(self._started) >= self._started_prune_at:
            self._forget_old_starts(now)
        started = self._started.setdefault(identity.player, deque())
        started.append(now)
        self._starting += 1
        self._by_address[address] += 1  # given back when the game ends (_run_bot)
        reserved = True

        def release() -> None:
            nonlocal reserved
            if reserved:
                reserved = False
                self._starting -= 1

        try:
            return await self._seat(actor, msg, identity, address, release)
        except BaseException:
            started.remove(now)
            self._give_back(address)
            raise
        finally:
            release()

    def _give_back(self, address: str) -> None:
        self._by_address[address] -= 1
        if self._by_address[address] <= 0:
            del self._by_address[address]

    async def _seat(self, actor: Actor, msg: PlayComputer, identity: Identity,
                    address: str, release: Callable[[], None]) -> dict[str, object] | None:
        url = self._own_url()
        if url is None:  # not met: the request came on a socket of this node
            raise ProtocolError(ErrorCode.UNAVAILABLE, "this server's address is unknown")
        level = Level(str(msg.level))
        issued = await self.accounts.bot(str(level))
        self._tokens.add(issued.token)
        bot = issued.identity
        reply: dict[str, object] = {"type": "computer_game", "ref": msg.ref, "level": str(level),
                                    "bot": bot.player, "name": bot.name}

        async def announce(table: str, _plan: RatingPlan) -> None:
            # Before anyone is seated, so the answer comes before ``seated``/``game_start``.
            release()
            self.games[table] = BotGame(table, identity.player, bot.player, level,
                                        address=address)
            self.outbox.push_conn_id(actor.conn, Outgoing({**reply, "table": table}))

        try:
            table = await self.starter.start_rated_game(
                identity.player, bot.player,
                match_length=msg.match_length or None,
                names=(identity.name, bot.name),
                addresses=(actor.address, f"bot:{bot.player}"),
                announce=announce,
            )
        except BaseException:
            self._tokens.discard(issued.token)
            await self.accounts.revoke(issued.token)
            for table_id, game in list(self.games.items()):
                if game.bot == bot.player:
                    del self.games[table_id]
            raise
        game = self.games[table]
        game.task = asyncio.ensure_future(
            self._run_bot(game, url, issued.token, identity.player)
        )
        return None  # the answer went out in announce()

    # --- a game taken over from another node ----------------------------------------------

    def resume(self, table: Table) -> None:
        """``table`` was rebuilt here after its node drained or died: a computer player
        seated at it (its id is a bot id) plays on from this node, under a new token for
        the same id (its old bot task went with the old node)."""
        if self._closing or self.registry.closing or table.id in self.games:
            return
        players = [None if s is None else s.player for s in table.seats]
        for side, player in enumerate(players):
            match = None if player is None else BOT_ID.fullmatch(player)
            if match is None or player is None:
                continue
            url = self._own_url()
            if url is None:
                log.warning("table %s: bot %s not resumed (this node's address is unknown)",
                            table.id, player)
                return
            human = players[1 - side] or ""
            game = BotGame(table.id, human, player, Level(match.group(1)))
            self.games[table.id] = game
            game.task = asyncio.ensure_future(self._resume(game, url, human))
            log.info("table %s: bot %s resumed here", table.id, player)
            return

    async def _resume(self, game: BotGame, url: str, human: str) -> None:
        try:
            issued = await self.accounts.bot_again(game.bot)
        except (RedisError, OSError) as exc:
            log.warning("table %s: bot %s not resumed: %s", game.table, game.bot, exc)
            issued = None
        if issued is None:
            self.games.pop(game.table, None)
            return
        self._tokens.add(issued.token)
        self._by_address[game.address] += 1  # given back when the game ends (_run_bot)
        await self._run_bot(game, url, issued.token, human)

    def drop(self, table_id: str) -> None:
        """This node lost ``table_id`` to another node (its lease, or a drain): its bot
        here stops, without leaving the table (the new owner runs the seat's bot; a bot
        left here, hearing nothing, would stall and forfeit the game)."""
        game = self.games.get(table_id)
        if game is not None and game.task is not None:
            game.task.cancel()

    def _own_url(self) -> str | None:
        """This node's WebSocket URL: as composed (``own_url``), else as its settings
        name it (the port it listens on)."""
        url = self.own_url()
        if url is None and self.settings.port:
            host = self.settings.host
            if host in ("0.0.0.0", "::", ""):
                host = "127.0.0.1"
            return f"ws://{f'[{host}]' if ':' in host else host}:{self.settings.port}/ws"
        return url

    # --- the bot -------------------------------------------------------------------------

    def _think(self, level: Level) -> Think:
        # Only the random level chooses on the event loop (microseconds); the rungs' evaluator
        # (a millisecond with many plays) and searches (tens of milliseconds) run in the pool.
        if level is Level.RANDOM:
            return think_here
        if self._executor is None and self.settings.bot_workers > 0:
            self._executor = ProcessPoolExecutor(
                max_workers=self.settings.bot_workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=leave_interrupts_to_parent,
            )
        in_pool = think_in(self._executor)
        rung = level.rung
        if rung is None or rung.depth <= 1:
            return in_pool
        # A busy pool: a deep search decides one roll deep instead (milliseconds).
        quick = think_in(self._executor, quick=True)
        most = SEARCHES_PER_WORKER * max(1, self.settings.bot_workers)

        async def searching(level: Level, game: Mapping[str, Any], side: int, seed: int
                            ) -> Choice:
            # A search takes tens of milliseconds: with the pool busy, this decision is
            # made one roll deep rather than queued behind the others (and late).
            if self._searching >= most:
                self.fallbacks += 1
                return await quick(level, game, side, seed)
            self._searching += 1
            try:
                return await in_pool(level, game, side, seed)
            finally:
                self._searching -= 1

        return searching

    async def _run_bot(self, game: BotGame, url: str, token: str, opponent: str) -> None:
        client: Client | None = None
        try:
            client = await Client.connect(url, token, fmt=Format.MSGPACK, auto_reconnect=False)
            # The table's state now (its events so far are not needed): the game may even be
            # over already, when the opponent left before the bot came.
            await client.sync(game.table, since=MAX_VERSION)
            bot = BotPlayer(client, game.level, think=self._think(game.level),
                            decision_timeout=self.settings.bot_decision_timeout)
            record = await bot.play_table(game.table)
            if record.errors:
                log.warning("bot %s at %s saw errors: %s", game.bot, game.table, record.errors)
            with contextlib.suppress(ClientError, OSError):
                await client.request({"type": "leave", "table": game.table}, timeout=5.0)
        except asyncio.CancelledError:
            raise
        except BotStalled as exc:
            log.warning("bot %s at %s stalled (%s): it forfeits", game.bot, game.table, exc)
            await self._forfeit(game, client)
        except Exception:
            log.exception("bot %s at %s failed: it forfeits", game.bot, game.table)
            await self._forfeit(game, client)
        finally:
            self.games.pop(game.table, None)
            self._tokens.discard(token)
            self._give_back(game.address)
            if client is not None:
                await client.close()
            with contextlib.suppress(Exception):
                await self.accounts.revoke(token)

    async def _forfeit(self, game: BotGame, client: Client | None) -> None:
        """The bot leaves its table (a loss at the current cube): through its socket if it
        still has one, else directly at the table (this node owns it)."""
        if self._closing or self.registry.closing:
            return
        if client is not None and not client.is_closed:
            with contextlib.suppress(ClientError, OSError):
                await client.request({"type": "leave", "table": game.table}, timeout=5.0)
                return
        table = self.registry.tables.get(game.table)
        if table is None:
            return
        actor = Actor(game.bot, game.bot, False, f"bot:{game.bot}", self.settings.node_id, "")
        try:
            await table.leave(actor)
        except Exception:
            log.exception("could not forfeit bot %s at %s", game.bot, game.table)

    # --- shutdown ----------------------------------------------------------------------------

    def halt(self) -> list[asyncio.Task[None]]:
        """Start no game and stop every bot: each bot's task is cancelled and closes its
        socket on its way out. A stopping node reads no more frames (the web server stops
        reading when it shuts down), so a bot's close is answered by the node closing its
        sockets (``server/app.py``), not by a reply to the bot's close frame; the bots'
        tasks are returned, to be awaited after that."""
        self._closing = True
        tasks = [g.task for g in self.games.values() if g.task is not None]
        for task in tasks:
            task.cancel()
        return tasks

    async def stop(self) -> None:
        tasks = self.halt()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

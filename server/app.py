"""``create_app(settings)``: the aiohttp application, with no module-level state.

Application-wide objects live under typed ``web.AppKey``s and are opened and closed in
``cleanup_ctx`` (Redis client, write-behind flusher, node bus, lobby, matchmaking). Shutdown
order:

1. ``on_shutdown``: with live peers (a rolling restart) the node drains: its tables stop,
   what is buffered is stored, each table's lease is given back and the peers are told, so
   one of them takes each table over at once (``Lobby.hand_over``), and every WebSocket is
   closed with 1012 (service restart: reconnect, to another node). With no live peer every
   WebSocket is closed with 1001 (going away); the lobby stops its timers first, so closing
   sockets forfeits nobody, and a node that starts later takes the tables over. The node's
   own bots stop before all this, and their sockets are closed with the others (the web
   server reads no frame once it shuts down: a bot's own close would go unanswered);
2. cleanup: matchmaking stops pairing and removes this node's tickets; in-flight game
   settlements are awaited (``shutdown_timeout``), the write-behind
   buffer is flushed, the node says it is gone (peers clean up after it), the node bus says
   goodbye, the Redis client closes.

A finished result is written before it is announced, so nothing a player saw is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import redis.asyncio as aioredis
from aiohttp import web
from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.bot.review_answer import review_answer
from server.cluster.bus import NodeBus
from server.cluster.pulse import NodePulse
from server.config import Settings, SettingsError
from server.lobby.clock import LoopClock
from server.lobby.computer import ComputerOpponents
from server.lobby.listeners import LobbyListeners
from server.lobby.lobby import Lobby
from server.lobby.matchmaker import Matchmaker
from server.lobby.ownership import Ownership
from server.metrics import Metrics
from server.net.admission import Admission
from server.net.connection import CLOSE_GOING_AWAY, Connection, Hub
from server.net.cost_gate import CostGate
from server.net.games_api import GameRoutes
from server.net.heartbeat import SocketHeartbeat
from server.net.http_api import AccountRoutes
from server.net.http_middleware import http_middleware
from server.net.load import LoadLimits, LoadMeter
from server.net.load_watch import LoadWatch
from server.net.matchmaking_api import MatchmakingRoute
from server.net.public_api import PublicRoutes
from server.net.review_api import ReviewRoute
from server.net.review_jobs import ReviewJobs
from server.net.security_headers import add_security_headers
from server.net.socket_moves import SocketMoves
from server.net.static_files import add_static_routes
from server.net.ws import SocketHandler, session_limits
from server.rules import DiceSource, SecretDice
from server.store.accounts import Accounts
from server.store.keys import Keys
from server.store.persistence import Persistence
from server.store.redis_client import redis_client
from server.tick import TICK, Tick
from server.tournaments.api import TournamentRoutes
from server.tournaments.driver import BracketDriver
from server.tournaments.keys import TournamentKeys
from server.tournaments.runner_keys import RunnerKeys
from server.tournaments.service import Tournaments
from server.tournaments.store import TournamentStore

log = logging.getLogger(__name__)

DiceFactory = Callable[[], DiceSource]

SETTINGS = web.AppKey("settings", Settings)
REDIS = web.AppKey("redis", aioredis.Redis)
DICE_FACTORY: web.AppKey[DiceFactory] = web.AppKey("dice_factory")
PERSISTENCE = web.AppKey("persistence", Persistence)
ACCOUNTS = web.AppKey("accounts", Accounts)
RATINGS = web.AppKey("ratings", RatingStore)
BUS = web.AppKey("bus", NodeBus)
HUB = web.AppKey("hub", Hub)
LOBBY = web.AppKey("lobby", Lobby)
MATCHMAKER = web.AppKey("matchmaker", Matchmaker)
BRACKETS = web.AppKey("brackets", BracketDriver)
SOCKET_HEARTBEAT = web.AppKey("socket_heartbeat", SocketHeartbeat)
METRICS = web.AppKey("metrics", Metrics)
ACCOUNT_ROUTES = web.AppKey("account_routes", AccountRoutes)
COMPUTER = web.AppKey("computer", ComputerOpponents)
OWNERSHIP = web.AppKey("ownership", Ownership)
LOAD = web.AppKey("load", LoadMeter)
ADMISSION = web.AppKey("admission", Admission)
PULSE = web.AppKey("pulse", NodePulse)
"""The node's pulse thread: heartbeat, Redis probe, the loop's lag (``lag()``,
``stuck_for()``)."""
REVIEWS = web.AppKey("reviews", ReviewJobs)
COST_GATE = web.AppKey("cost_gate", CostGate)
CLOSE_SERVICE_RESTART = 1012
"""WebSocket close code for a drain: the client reconnects (to another node) at once."""


def create_app(settings: Settings, *, dice_factory: DiceFactory | None = None) -> web.Application:
    """Build the server. ``settings.redis_url`` must be set (``python -m server`` starts an
    embedded Redis when it is not). ``dice_factory`` makes the dice of each new table
    (default: ``SecretDice``); tests pass scripted dice."""
    if not settings.redis_url:
        raise SettingsError("redis_url is required (python -m server starts one if unset)")
    metrics = Metrics(enabled=settings.metrics)
    # The node's load, and the door that refuses new work while it is busy (built before the
    # app: its middleware is one of the app's).
    load = LoadMeter(LoadLimits(max_lag=settings.load_max_lag, max_cpu=settings.load_max_cpu,
                                busy_after=settings.load_busy_after,
                                calm_after=settings.load_calm_after))
    app = web.Application(
        client_max_size=settings.http_max_body,
        middlewares=[http_middleware(settings, metrics=metrics)],
    )
    admission = Admission(load, metrics)  # its sockets' door reads seats (see _services)
    app.middlewares.append(admission.middleware())
    app[LOAD] = load
    app[ADMISSION] = admission
    app[SETTINGS] = settings
    app[METRICS] = metrics
    app[DICE_FACTORY] = dice_factory if dice_factory is not None else SecretDice
    app[TICK] = Tick()  # every periodic duty of the node runs on it
    app.cleanup_ctx.append(_services)
    app.on_shutdown.append(_stop_brackets)
    app.on_shutdown.append(_close_sockets)
    add_static_routes(app)
    add_security_headers(app)
    return app


async def _services(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    assert settings.redis_url is not None
    redis = redis_client(settings.redis_url)  # a cluster client for redis+cluster://
    keys = Keys(settings.key_prefix)
    metrics = app[METRICS]
    tick = app[TICK]
    clock = LoopClock()
    hub = Hub(settings.max_send_buffer,
              on_token_end=lambda reason: metrics.tokens_ended.labels(reason).inc(), clock=clock)
    persistence = Persistence(redis, keys, settings, metrics,
                              gather_writes=hub.gather_writes, tick=tick)
    accounts = Accounts(redis, keys, settings, now=clock.now)
    ratings = RatingStore(redis, settings.key_prefix)
    bus = NodeBus(redis, keys, settings.node_id, alive_ttl=settings.lease_ttl,
                  alive_refresh=settings.lease_renew, tick=tick,
                  link_peers=settings.link_peers, link_dir=settings.link_dir,
                  unheard_for=settings.bus_unheard_for)
    # The parts built after the lobby (each needs it) are added to its listeners below.
    listeners = LobbyListeners()
    lobby = Lobby(settings, persistence, bus, hub, ratings, app[DICE_FACTORY], clock, metrics,
                  listeners=listeners)
    # What each flush of the store did goes to the lobby's takeover, and its health to the
    # lobby.
    persistence.on_stored = lobby.takeover.table_stored
    persistence.on_fenced = lobby.takeover.table_fenced
    persistence.on_store_lost = lobby.takeover.store_lost
    persistence.on_health = lobby.store_health
    app[REDIS] = redis
    app[PERSISTENCE] = persistence
    app[ACCOUNTS] = accounts
    app[RATINGS] = ratings
    app[BUS] = bus
    app[HUB] = hub
    app[LOBBY] = lobby
    heartbeat = SocketHeartbeat(hub, tick, settings.heartbeat)
    app[SOCKET_HEARTBEAT] = heartbeat
    # The heartbeat and the Redis probe run on a thread of their own: a busy loop is not
    # a dead node, nor a Redis outage (server/cluster/pulse.py).
    pulse = NodePulse(settings.redis_url, keys, settings.node_id,
                      lease_ttl=settings.lease_ttl, lease_renew=settings.lease_renew,
                      check_interval=settings.redis_check_interval,
                      stuck_limit=settings.loop_stuck_limit)
    app[PULSE] = pulse
    # The node's load is sampled with the pulse thread's reading of the loop's lag.
    load_watch = LoadWatch(app[LOAD], settings.load_sample_interval, metrics,
                           lag_reading=pulse.lag, burn_file=settings.load_test_burn_file)
    ownership = Ownership(settings, persistence, lobby.registry, lobby.takeover,
                          peers=lobby.liveness, bus=bus, clock=clock, requests=lobby.requests,
                          online_players=lobby.online_players, tick=tick, pulse=pulse)
    app[OWNERSHIP] = ownership
    matchmaker = Matchmaker(settings, redis, lobby.creation, hub, ratings, persistence,
                            registry=lobby.registry, peers=lobby.liveness,
                            players=lobby.delivery, metrics=metrics, clock=clock, tick=tick)
    app[MATCHMAKER] = matchmaker
    account_routes = AccountRoutes(accounts, persistence, settings.node_id,
                                   settings.list_limit, settings=settings, metrics=metrics,
                                   busy=app[LOAD].busy, monotonic=clock.monotonic)
    account_routes.add_to(app)
    app[ACCOUNT_ROUTES] = account_routes
    MatchmakingRoute(matchmaker).add_to(app)
    PublicRoutes(ratings, accounts, pair_limit=settings.pair_limit,
                 pair_window=settings.pair_window).add_to(app)
    cost_gate = CostGate(settings, metrics=metrics)
    reviews = ReviewJobs(review_answer, workers=settings.review_workers,
                         queue_max=settings.review_queue_max)
    app[REVIEWS] = reviews
    app[COST_GATE] = cost_gate
    tournament_keys = TournamentKeys(settings.key_prefix)
    runner_keys = RunnerKeys(redis, tournament_keys, now=clock.now)
    GameRoutes(lobby.records, accounts, cost_gate, runner_keys.name_of).add_to(app)
    ReviewRoute(lobby.records, accounts, cost_gate, reviews, runner_keys.name_of).add_to(app)
    tournaments = Tournaments(TournamentStore(redis, tournament_keys, keys, now=clock.now), lobby,
                              persistence, ratings)
    TournamentRoutes(tournaments, runner_keys, settings.max_match_length,
                     resolve_token=accounts.resolve, clock=clock.now).add_to(app)
    brackets = BracketDriver(tournaments, bus, settings.node_id,
                             period=settings.tournament_tick, lease=settings.tournament_lease,
                             tick=tick, call=settings.tournament_call)
    app[BRACKETS] = brackets
    computer = ComputerOpponents(settings, accounts, lobby.creation, lobby.registry,
                                 persistence, hub, clock, metrics, hub.own_url)
    app[COMPUTER] = computer
    # Sockets handed between the workers of one machine (server/net/socket_moves.py).
    moves = SocketMoves(settings, hub, bus, lobby, session_limits(settings), metrics,
                        link_up=lambda node: bus.link is not None and bus.link.is_up(node))
    listeners.socket_moves.append(moves.on_message)
    listeners.seated.append(matchmaker.players_seated)
    listeners.node_dead.append(matchmaker.node_died)
    listeners.restored.append(computer.resume)
    listeners.table_lost.append(computer.drop)
    listeners.released.append(ownership.tables_released)
    app.router.add_post("/api/bot", account_routes.limited_by("guest", account_routes.bot_token))
    app.router.add_get("/ws", SocketHandler(settings, accounts, lobby, hub, matchmaker,
                                            computer,
                                            admission=app[ADMISSION].with_seats(
                                                persistence.seat_of),
                                            moves=moves if moves.enabled else None).handle)
    await persistence.load_scripts()
    await persistence.claim_store()
    persistence.start(probed=True)  # by the pulse thread, from ownership.start()
    moves.start()
    await bus.start(lobby.on_node_messages)
    await ownership.start()
    await matchmaker.start()
    brackets.start()
    heartbeat.start()
    load_watch.start()
    log.info("node %s ready (key prefix %r)", settings.node_id, settings.key_prefix)
    try:
        yield
    finally:
        load_watch.stop()
        await heartbeat.stop()
        await brackets.stop()
        await matchmaker.stop()
        await computer.stop()
        reviews.close()
        await lobby.drain(settings.shutdown_timeout)
        await persistence.stop()
        await ownership.stop()
        await moves.stop()
        await bus.stop()
        await redis.aclose()
        log.info("node %s stopped", settings.node_id)


async def _stop_brackets(app: web.Application) -> None:
    """Before the sockets close: stop stepping brackets and give their leases back (a
    closing node would see its players leave and count them as no-shows)."""
    brackets = app.get(BRACKETS)
    if brackets is not None:
        await brackets.stop()


async def _close_sockets(app: web.Application) -> None:
    routes = app.get(ACCOUNT_ROUTES)
    if routes is not None:
        routes.draining = True  # /readyz: 503 from now on
    lobby = app.get(LOBBY)
    hub = app.get(HUB)
    if lobby is None or hub is None:
        return
    lobby.closing = True
    # The bots stop first (they start nothing more), and their sockets are closed with all
    # the others below: the web server reads no frame once it shuts down, so a bot's own
    # close frame would wait unanswered until the socket liveness dropped it.
    computer = app.get(COMPUTER)
    bots = computer.halt() if computer is not None else []
    ownership = app.get(OWNERSHIP)
    peers: list[str] = []
    if ownership is not None:
        try:
            peers = await ownership.peers_alive()
        except (RedisError, OSError) as exc:
            log.warning("shutdown: cannot tell whether peers are alive (%s)", exc)
    if peers:
        # Drain: the games go on at the peers; the clients reconnect to one of them.
        try:
            await lobby.hand_over()
        except (RedisError, OSError) as exc:
            log.warning("drain: handing tables over failed (%s); their leases expire", exc)
        code, reason = CLOSE_SERVICE_RESTART, "service restart"
    else:
        for table in lobby.tables.values():
            table.shutdown()
        code, reason = CLOSE_GOING_AWAY, "server shutting down"
    await close_all(hub.all(), code, reason, app[SETTINGS].shutdown_timeout)
    if bots:
        await asyncio.gather(*bots, return_exceptions=True)


async def close_all(conns: list[Connection], code: int, reason: str, timeout: float) -> None:
    """Close every socket at once, waiting at most ``timeout`` seconds for their closing
    handshakes; a socket still open then (a client that neither reads nor answers) is
    dropped. One slow client never holds a node's shutdown."""
    closing = [asyncio.ensure_future(conn.close(code, reason)) for conn in conns]
    if not closing:
        return
    _done, pending = await asyncio.wait(closing, timeout=timeout)
    if pending:
        log.warning("shutdown: %d sockets did not close in %.1fs: dropped", len(pending),
                    timeout)
    for conn, task in zip(conns, closing, strict=True):
        if task in pending:
            conn.abort()
            task.cancel()

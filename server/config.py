"""Server settings: one frozen value holding every limit, read from flags and the environment.

Every tunable of the server lives in :class:`Settings`, each with a default, an environment
variable and a command-line flag, all derived from one table (:data:`OPTIONS`) so the three
never drift apart. ``create_app(settings)`` is the only consumer; nothing reads the
environment anywhere else.

Environment variables are ``TABLE42_<FIELD>`` (for example ``TABLE42_DECISION_TIME``), except
``REDIS_URL``, which keeps its conventional name. Flags are ``--field-name``.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from server.matchmaking.policy import MatchmakingSettings

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ENV_PREFIX = "TABLE42_"


class SettingsError(ValueError):
    """A setting has a value outside its allowed range; the message names the setting."""


def _new_node_id() -> str:
    return secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server can be tuned by. Times are seconds (float), sizes are bytes."""

    # Network
    host: str = "127.0.0.1"
    port: int = 8080
    # Redis; None means "start an embedded redis-server" (only ``python -m server`` does that).
    redis_url: str | None = None
    # The embedded store's folder (used only without redis_url); None: default_data_dir().
    data_dir: str | None = None
    key_prefix: str = "t42:"
    node_id: str = field(default_factory=_new_node_id)
    # Comma-separated addresses or networks whose X-Forwarded-For header is believed.
    trusted_proxies: tuple[str, ...] = ()

    # Accounts
    token_ttl: float = 7 * 24 * 3600.0
    guest_token_ttl: float = 24 * 3600.0
    scrypt_n: int = 2**14
    scrypt_r: int = 8
    scrypt_p: int = 1
    max_concurrent_hashes: int = 4
    http_max_body: int = 4096
    # HTTP rate limit (server/net/http_middleware.py): token buckets per client address and per
    # bearer credential; 0 turns it off.
    http_rate_limit: float = 100.0
    http_rate_burst: int = 1000
    http_rate_max_clients: int = 100_000

    # WebSocket
    max_msg_size: int = 16 * 1024
    heartbeat: float = 20.0
    auth_timeout: float = 10.0
    rate_limit: float = 30.0
    rate_burst: int = 60
    flood_close_after: int = 100
    max_send_buffer: int = 256 * 1024
    max_connections_per_player: int = 8

    # Games
    decision_time: float = 60.0
    max_strikes: int = 3
    grace_period: float = 60.0
    max_match_length: int = 25
    max_watchers: int = 200
    max_open_tables: int = 10_000
    list_limit: int = 100
    finished_linger: float = 60.0
    next_game_delay: float = 0.0
    # A table taken over from a dead node: the player to act gets the time left on the clock
    # when its last event was stored, plus this.
    takeover_allowance: float = 10.0
    # A player whose socket was on a node found dead (the server's fault) has this long from
    # then to come back, instead of grace_period (when that ends later).
    node_loss_grace: float = 180.0
    # A table held while its node could not store (Redis away): each clock and grace period
    # goes on with the time it had left when the hold began, plus this.
    hold_allowance: float = 5.0
    # Presence events (player_disconnected / player_reconnected) one seat may add per game.
    presence_events: int = 4
    # Rating farming: two accounts may play this many rated games (a match counts once)
    # starting within pair_window seconds; later games of the pair are unrated
    # ("pair_limit") until the oldest leaves the window. 0 turns the limit off.
    pair_limit: int = 5
    pair_window: float = 24 * 3600.0

    # Persistence
    flush_interval: float = 0.05
    recent_events: int = 512
    event_log_max: int = 4000
    # A sync answer carries at most sync_page events; every sync_events_per_message events
    # it carries cost its socket one more message of its rate limit.
    sync_page: int = 200
    sync_events_per_message: int = 50
    event_log_ttl: float = 7 * 24 * 3600.0
    inbox_max: int = 200
    inbox_ttl: float = 30 * 24 * 3600.0
    presence_ttl: float = 24 * 3600.0
    shutdown_timeout: float = 10.0
    # Finished games' records (history, replay, .mat; docs/http-api.md "Games")
    game_record_ttl: float = 90 * 24 * 3600.0
    game_index_max: int = 1000  # games indexed per player (older ones drop out)

    # Table chat (PROTOCOL.md §16)
    chat_max_length: int = 300
    chat_rate: int = 5  # messages per chat_window per player, per node
    chat_window: float = 10.0
    chat_log_max: int = 1000  # messages kept per game of a table
    chat_mute_max: int = 200  # players one account may mute
    chat_history: int = 50  # messages in resume / watching

    # Matchmaking: window(waited) = min(cap, base + rate * waited), rating points and seconds
    matchmaking_window_base: float = 50.0
    matchmaking_window_rate: float = 10.0
    matchmaking_window_cap: float = 400.0
    matchmaking_new_players_pair_anyone: bool = True
    matchmaking_ticket_ttl: float = 1800.0  # 0 = tickets never expire
    matchmaking_scan_limit: int = 64
    matchmaking_pass_interval: float = 1.0
    matchmaking_hold: float = 0.8
    matchmaking_max_tickets: int = 100_000
    matchmaking_status_interval: float = 5.0

    # Ownership (server/lobby/ownership.py, docs/operations.md "Node loss and takeover"):
    # a node counts as alive for lease_ttl after its heartbeat (one per node every
    # lease_renew, whatever its table count); every node looks for dead nodes every
    # takeover_scan. A table is taken over at most lease_ttl + takeover_scan after its
    # owner's last heartbeat (7 s by default).
    lease_ttl: float = 6.0
    lease_renew: float = 2.0
    takeover_scan: float = 1.0
    forward_timeout: float = 30.0  # a request forwarded to a live owner that never answers

    # Tournaments: the bracket driver's period and the lease a node holds on a bracket
    tournament_tick: float = 1.0
    tournament_lease: float = 10.0

    # Hardening (docs/operations.md): per-address and per-account limits, HTTP
    # connection guards, metrics and logs. ``limits`` turns every limit of this block off at
    # once (benchmarks); a rate of 0 turns one off.
    limits: bool = True
    guest_rate: float = 0.2  # guest tokens per second per address
    guest_burst: int = 20
    register_rate: float = 0.05  # registrations per second per address
    register_burst: int = 10
    login_rate: float = 1.0  # login attempts per second per address
    login_burst: int = 20
    login_free_failures: int = 5  # failures per (account, address) before any delay
    login_delay_base: float = 1.0  # first delay; doubles with each further failure
    login_lock_after: int = 10  # failures per (account, address) that lock that pair
    login_lock_time: float = 900.0
    login_account_lock_after: int = 50  # failures from all addresses: unknown addresses wait
    login_fail_window: float = 3600.0  # failures are forgotten this long after the last
    hashes_per_address: int = 2  # password hashes one address may have queued or running
    max_sockets_per_address: int = 64
    table_create_rate: float = 1.0  # tables one player (and one address) may create per second
    table_create_burst: int = 10
    max_open_tables_per_address: int = 20
    http_header_timeout: float = 10.0  # a connection idle this long without a request closes
    http_body_timeout: float = 10.0
    http_max_connections: int = 0  # 0: the file-descriptor limit minus a reserve
    redis_check_interval: float = 0.5  # how often Redis is pinged for /readyz and refusals
    list_cache_ttl: float = 0.5  # seconds one page of the table list is served from memory
    metrics: bool = True
    json_logs: bool = False

    # Playing the computer
    bot_games_per_node: int = 100  # bot games this node hosts at once (0 = none)
    bot_games_per_player: int = 30  # bot games one player may start per bot_games_window
    bot_games_per_address: int = 10  # bot games from one address at once (0 = no limit)
    bot_games_window: float = 3600.0
    bot_decision_timeout: float = 15.0  # a bot slower than this forfeits
    bot_workers: int = 1  # processes for the strong bot's search (0 = a thread)

    # Processes (docs/deployment.md "Every core"): node processes python -m server runs on
    # one port (each a node of the cluster), and the event loop's implementation.
    workers: int = 1
    reuse_port: bool = False  # set for each worker of --workers
    uvloop: bool = True

    def __post_init__(self) -> None:
        _check(self)

    @property
    def trusted_networks(self) -> tuple[IPNetwork, ...]:
        """``trusted_proxies`` parsed as networks (a single address is a /32 or /128)."""
        return tuple(ipaddress.ip_network(p, strict=False) for p in self.trusted_proxies)

    @property
    def matchmaking(self) -> MatchmakingSettings:
        """The matchmaking policy's settings (the IPv6 prefix stays the same-address rule's)."""
        return MatchmakingSettings(
            window_base=self.matchmaking_window_base,
            window_rate=self.matchmaking_window_rate,
            window_cap=self.matchmaking_window_cap,
            new_players_pair_anyone=self.matchmaking_new_players_pair_anyone,
            ticket_ttl=self.matchmaking_ticket_ttl or None,
            scan_limit=self.matchmaking_scan_limit,
        )

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> Settings:
        """Settings from environment variables (see :data:`OPTIONS`), then ``overrides``."""
        values: dict[str, Any] = {}
        for option in OPTIONS:
            raw = environ.get(option.env)
            if raw is not None and raw != "":
                values[option.name] = option.parse(raw, option.env)
        values.update(overrides)
        return cls(**values)


def _check(s: Settings) -> None:
    def positive(name: str) -> None:
        if not getattr(s, name) > 0:
            raise SettingsError(f"{name} must be > 0, got {getattr(s, name)!r}")

    for name in (
        "token_ttl", "guest_token_ttl", "max_concurrent_hashes", "http_max_body",
        "max_msg_size", "heartbeat", "auth_timeout", "rate_limit", "rate_burst",
        "flood_close_after", "max_send_buffer", "max_connections_per_player",
        "decision_time", "max_strikes", "grace_period", "max_match_length", "max_watchers",
        "max_open_tables", "list_limit", "flush_interval", "recent_events", "event_log_max",
        "event_log_ttl", "inbox_max", "inbox_ttl", "presence_ttl", "shutdown_timeout",
        "game_record_ttl", "game_index_max", "chat_max_length", "chat_rate", "chat_window",
        "chat_log_max", "chat_mute_max", "chat_history",
        "sync_page", "sync_events_per_message", "presence_events", "node_loss_grace",
    ):
        positive(name)
    if not s.http_rate_limit >= 0:
        raise SettingsError(f"http_rate_limit must be >= 0 (0 = off), got {s.http_rate_limit!r}")
    for name in ("http_rate_burst", "http_rate_max_clients"):
        positive(name)
    if not 0 <= s.port <= 65535:
        raise SettingsError(f"port must be in 0..65535, got {s.port}")
    if s.scrypt_n < 2 or s.scrypt_n & (s.scrypt_n - 1):
        raise SettingsError(f"scrypt_n must be a power of two >= 2, got {s.scrypt_n}")
    if s.scrypt_r < 1 or s.scrypt_p < 1:
        raise SettingsError("scrypt_r and scrypt_p must be >= 1")
    if s.finished_linger < 0 or s.next_game_delay < 0:
        raise SettingsError("finished_linger and next_game_delay must be >= 0")
    if s.pair_limit < 0:
        raise SettingsError(f"pair_limit must be >= 0 (0 = no limit), got {s.pair_limit!r}")
    if not 1 <= s.pair_window <= 366 * 86400:
        raise SettingsError(f"pair_window must be 1 s to 366 days, got {s.pair_window!r}")
    if not s.takeover_allowance >= 0:
        raise SettingsError(
            f"takeover_allowance must be >= 0, got {s.takeover_allowance!r}")
    if not s.hold_allowance >= 0:
        raise SettingsError(f"hold_allowance must be >= 0, got {s.hold_allowance!r}")
    if "{" in s.key_prefix or "}" in s.key_prefix:
        raise SettingsError("key_prefix must not contain hash-tag braces")
    if not s.node_id or not all(c.isalnum() or c in "-_" for c in s.node_id):
        raise SettingsError(f"node_id must be letters, digits, '-' or '_', got {s.node_id!r}")
    for proxy in s.trusted_proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError as exc:
            raise SettingsError(f"trusted_proxies: {proxy!r} is not an address") from exc
    try:
        s.matchmaking  # noqa: B018 - builds and checks the policy settings
    except ValueError as exc:
        raise SettingsError(f"matchmaking_{exc}") from exc
    for name in ("matchmaking_pass_interval", "matchmaking_status_interval"):
        positive(name)
    if not 0 <= s.matchmaking_hold <= 5.0:
        raise SettingsError(f"matchmaking_hold must be in 0..5 s, got {s.matchmaking_hold!r}")
    if not s.matchmaking_ticket_ttl >= 0:
        raise SettingsError("matchmaking_ticket_ttl must be >= 0 seconds (0 = never)")
    for name in ("guest_rate", "register_rate", "login_rate", "table_create_rate",
                 "login_delay_base", "login_lock_time", "http_max_connections",
                 "list_cache_ttl"):
        if not getattr(s, name) >= 0:
            raise SettingsError(f"{name} must be >= 0, got {getattr(s, name)!r}")
    for name in ("guest_burst", "register_burst", "login_burst", "login_free_failures",
                 "login_lock_after", "login_account_lock_after", "login_fail_window",
                 "hashes_per_address", "max_sockets_per_address", "table_create_burst",
                 "max_open_tables_per_address", "http_header_timeout", "http_body_timeout",
                 "redis_check_interval"):
        positive(name)
    if s.bot_games_per_node < 0 or s.bot_games_per_player < 0 or s.bot_workers < 0 \
            or s.bot_games_per_address < 0:
        raise SettingsError("bot_games_per_node, bot_games_per_player, "
                            "bot_games_per_address and bot_workers must be >= 0")
    for name in ("bot_games_window", "bot_decision_timeout"):
        positive(name)
    if s.matchmaking_max_tickets < 0:
        raise SettingsError("matchmaking_max_tickets must be >= 0 (0 = no limit)")
    positive("tournament_tick")
    for name in ("lease_ttl", "lease_renew", "takeover_scan", "forward_timeout"):
        positive(name)
    if not s.lease_ttl >= 2 * s.lease_renew:
        raise SettingsError("lease_ttl must be at least twice lease_renew")
    if not 1 <= s.workers <= 1024:
        raise SettingsError(f"workers must be 1..1024 or auto, got {s.workers!r}")
    if not s.tournament_lease > 2 * s.tournament_tick:
        raise SettingsError("tournament_lease must be more than twice tournament_tick")


@dataclass(frozen=True, slots=True)
class Option:
    """One setting as the outside world sees it: flag, environment variable, parser, help."""

    name: str
    parse_value: Callable[[str], Any]
    help: str

    @property
    def env(self) -> str:
        return "REDIS_URL" if self.name == "redis_url" else ENV_PREFIX + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, raw: str, source: str) -> Any:
        try:
            return self.parse_value(raw)
        except ValueError as exc:
            raise SettingsError(f"{source}: cannot parse {raw!r}: {exc}") from exc


def _csv(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _workers(raw: str) -> int:
    """A count of processes, or ``auto``: one per core this process may run on."""
    if raw.strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    return int(raw)


def _flag(raw: str) -> bool:
    text = raw.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


OPTIONS: tuple[Option, ...] = (
    Option("host", str, "address to listen on"),
    Option("port", int, "TCP port to listen on (0 picks a free one)"),
    Option("redis_url", str, "Redis URL; unset starts an embedded redis-server"),
    Option("data_dir", str, "folder where the embedded redis-server (no REDIS_URL) keeps its "
           "data, an append-only file, from one start to the next (default "
           "$XDG_DATA_HOME/table42, else ~/.local/share/table42)"),
    Option("key_prefix", str, "prefix of every Redis key the server writes"),
    Option("node_id", str, "this node's name in Redis (random when unset)"),
    Option("trusted_proxies", _csv, "comma-separated proxy addresses/networks whose "
           "X-Forwarded-For header gives the client address"),
    Option("token_ttl", float, "lifetime of an account's bearer token, seconds"),
    Option("guest_token_ttl", float, "lifetime of a guest's bearer token, seconds"),
    Option("scrypt_n", int, "scrypt cost parameter n (power of two)"),
    Option("scrypt_r", int, "scrypt block size r"),
    Option("scrypt_p", int, "scrypt parallelism p"),
    Option("max_concurrent_hashes", int, "password hashes computed at once (others wait)"),
    Option("http_max_body", int, "largest HTTP request body, bytes"),
    Option("http_rate_limit", float, "HTTP requests per second one client address (and one "
           "bearer credential) may make on average (0 = no limit)"),
    Option("http_rate_burst", int, "HTTP requests one client address or credential may make "
           "in a burst"),
    Option("http_rate_max_clients", int, "clients whose HTTP rate buckets are kept at once "
           "(least recently seen forgotten first)"),
    Option("max_msg_size", int, "largest WebSocket message, bytes (bigger closes with 1009)"),
    Option("heartbeat", float, "WebSocket ping interval, seconds"),
    Option("auth_timeout", float, "seconds a socket may stay unauthenticated"),
    Option("rate_limit", float, "messages per second a connection may send on average"),
    Option("rate_burst", int, "messages a connection may send in a burst"),
    Option("flood_close_after", int, "rate-limited messages in a row before closing with 1008"),
    Option("max_send_buffer", int, "unsent bytes queued for a socket before it is dropped"),
    Option("max_connections_per_player", int, "sockets one player may hold at once"),
    Option("decision_time", float, "seconds for each decision (roll/double, move, take)"),
    Option("max_strikes", int, "timeouts in one game that forfeit it"),
    Option("grace_period", float, "seconds a disconnected player has to come back"),
    Option("max_match_length", int, "longest match a table may be created for, points"),
    Option("max_watchers", int, "watchers per table"),
    Option("max_open_tables", int, "tables waiting for an opponent, per node"),
    Option("list_limit", int, "most tables one list reply carries"),
    Option("finished_linger", float, "seconds a finished table stays for sync/watchers"),
    Option("next_game_delay", float, "pause between the games of a match, seconds"),
    Option("presence_events", int, "player_disconnected/player_reconnected events one seat "
           "may add per game; past it a seat's presence changes silently"),
    Option("pair_limit", int, "rated games two players may play within pair_window; later "
           "ones are unrated (pair_limit; 0 = no limit)"),
    Option("pair_window", float, "seconds the pair limit counts back from a game's start"),
    Option("flush_interval", float,
           "unused: writes are group-committed (kept so existing configurations parse)"),
    Option("recent_events", int, "events kept in memory per table for sync (older: Redis)"),
    Option("event_log_max", int, "events kept per table in Redis"),
    Option("sync_page", int, "most events one sync answer carries (complete: false, next: "
           "the version to go on from)"),
    Option("sync_events_per_message", int, "a sync answer costs its socket's rate limit one "
           "message more per this many events"),
    Option("event_log_ttl", float, "seconds a table's event log is kept after its last event"),
    Option("inbox_max", int, "undelivered rating events kept per player"),
    Option("inbox_ttl", float, "seconds an undelivered rating event is kept"),
    Option("presence_ttl", float, "seconds a player's presence record outlives its refresh"),
    Option("shutdown_timeout", float, "seconds to wait for in-flight settlements on shutdown"),
    Option("game_record_ttl", float, "seconds a finished game's record (and its chat) is kept"),
    Option("game_index_max", int, "finished games indexed per player (history)"),
    Option("chat_max_length", int, "characters of a chat message, once cleaned"),
    Option("chat_rate", int, "chat messages a player may send per chat_window (per node)"),
    Option("chat_window", float, "seconds of the chat rate window"),
    Option("chat_log_max", int, "chat messages kept per game of a table"),
    Option("chat_mute_max", int, "players one account may mute"),
    Option("chat_history", int, "chat messages sent with resume and watching"),
    Option("matchmaking_window_base", float, "matchmaking: rating window (± points) at 0 s"),
    Option("matchmaking_window_rate", float, "matchmaking: window growth, points per second"),
    Option("matchmaking_window_cap", float, "matchmaking: widest window, ± points"),
    Option("matchmaking_new_players_pair_anyone", _flag,
           "matchmaking: FIBS players with experience under 10 pair with anyone (1/0)"),
    Option("matchmaking_ticket_ttl", float,
           "matchmaking: seconds a ticket may wait before it expires (0 = never)"),
    Option("matchmaking_scan_limit", int,
           "matchmaking: unacceptable neighbours one ticket skips per pairing pass"),
    Option("matchmaking_pass_interval", float, "matchmaking: seconds between pairing passes"),
    Option("matchmaking_hold", float,
           "matchmaking: seconds a pool's lease is held after a pass (one pass per pool per "
           "hold, whatever the number of nodes)"),
    Option("matchmaking_max_tickets", int, "matchmaking: tickets one pool may hold (0 = any)"),
    Option("matchmaking_status_interval", float,
           "matchmaking: seconds between queue_status pushes to a waiting player"),
    Option("lease_ttl", float,
           "ownership: seconds a node counts as alive after its heartbeat (its tables are "
           "taken over after that)"),
    Option("lease_renew", float, "ownership: seconds between two heartbeats of a node"),
    Option("takeover_scan", float,
           "ownership: seconds between two looks for dead nodes and tables handed over"),
    Option("takeover_allowance", float,
           "ownership: seconds added to the clock of the player to act at a taken-over table"),
    Option("node_loss_grace", float,
           "ownership: seconds a player whose node was found dead has to come back, from then "
           "(instead of grace_period, when longer)"),
    Option("hold_allowance", float,
           "seconds added to each clock and grace period of a table held while Redis was "
           "away"),
    Option("forward_timeout", float,
           "ownership: seconds a request forwarded to a live owner may go unanswered before "
           "the sender answers it with unavailable"),
    Option("tournament_tick", float, "tournaments: seconds between two steps of a bracket"),
    Option("tournament_lease", float,
           "tournaments: seconds a node's lease on a bracket lasts unless renewed"),
    Option("limits", _flag, "1/0: every per-address and per-account limit below (off: "
           "benchmarks only)"),
    Option("guest_rate", float, "guest tokens one address may get per second (0 = any)"),
    Option("guest_burst", int, "guest tokens one address may get in a burst"),
    Option("register_rate", float, "registrations one address may make per second (0 = any)"),
    Option("register_burst", int, "registrations one address may make in a burst"),
    Option("login_rate", float, "login attempts one address may make per second (0 = any)"),
    Option("login_burst", int, "login attempts one address may make in a burst"),
    Option("login_free_failures", int, "failed logins per account and address before a delay"),
    Option("login_delay_base", float, "first delay after the free failures, seconds (doubles)"),
    Option("login_lock_after", int, "failed logins per account and address that lock that "
           "address out of that account for login_lock_time"),
    Option("login_lock_time", float, "seconds an account stays locked for one address"),
    Option("login_account_lock_after", int, "failed logins of one account from all addresses "
           "after which only addresses that logged in before may try"),
    Option("login_fail_window", float, "seconds failed logins are remembered"),
    Option("hashes_per_address", int, "password hashes one address may have queued or running"),
    Option("max_sockets_per_address", int, "WebSockets one address may hold at once"),
    Option("table_create_rate", float, "tables one player, and one address, may create per "
           "second (0 = any)"),
    Option("table_create_burst", int, "tables one player or address may create in a burst"),
    Option("max_open_tables_per_address", int, "open tables created from one address at once"),
    Option("http_header_timeout", float, "seconds a connection may wait without a complete "
           "request (slow headers, idle keep-alive) before it is closed"),
    Option("http_body_timeout", float, "seconds to receive a request body"),
    Option("http_max_connections", int, "open HTTP/WebSocket connections at most (0 = the "
           "file-descriptor limit minus a reserve)"),
    Option("redis_check_interval", float, "seconds between two Redis health checks"),
    Option("list_cache_ttl", float, "seconds a page of the table list is reused (0 = never; "
           "identical requests meanwhile share one Redis read)"),
    Option("metrics", _flag, "1/0: Prometheus metrics at /metrics"),
    Option("json_logs", _flag, "1/0: log one JSON object per line (with request/game ids)"),
    Option("bot_games_per_node", int, "games against the computer this node hosts at once"),
    Option("bot_games_per_player", int,
           "games against the computer one player may start per bot_games_window"),
    Option("bot_games_window", float, "the window of bot_games_per_player, seconds"),
    Option("bot_games_per_address", int, "games against the computer played from one "
           "address at once (0 = no limit; off with limits 0)"),
    Option("bot_decision_timeout", float,
           "seconds a computer player may think; slower, it forfeits"),
    Option("bot_workers", int, "processes running the strong computer player's search "
           "(0 = a thread of the server)"),
    Option("workers", _workers, "node processes sharing the port (SO_REUSEPORT), each a node "
           "of the cluster with its own id; auto = one per core"),
    Option("reuse_port", _flag, "1/0: listen with SO_REUSEPORT, sharing the port with other "
           "processes that do (each worker of --workers does)"),
    Option("uvloop", _flag, "1/0: run the event loop on uvloop when it is installed"),
)

assert {o.name for o in OPTIONS} == {f.name for f in fields(Settings)}, "OPTIONS out of sync"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting; every flag defaults to None (meaning "not given")."""
    for option in OPTIONS:
        parser.add_argument(
            option.flag, dest=option.name, default=None, metavar=option.name.upper(),
            help=f"{option.help} (env {option.env})",
        )


def settings_from(argv: Sequence[str] | None, environ: Mapping[str, str]) -> Settings:
    """Settings from the environment, overridden by flags in ``argv``."""
    parser = argparse.ArgumentParser(
        prog="python -m server", description="Table42 backgammon lobby and match server"
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {}
    for option in OPTIONS:
        raw = getattr(args, option.name)
        if raw is not None:
            overrides[option.name] = option.parse(raw, option.flag)
    return Settings.from_env(environ, **overrides)


def settings_from_env(environ: Mapping[str, str], **given: Any) -> Settings:
    """Settings from the environment, overridden by the ``given`` values that are not None
    (for commands beside the server that take a few of its flags)."""
    return Settings.from_env(environ, **{k: v for k, v in given.items() if v is not None})

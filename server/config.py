"""Server settings: one frozen value holding every limit, read from flags and the environment.

Every tunable of the server is declared once, as a field of :class:`Settings`: its name, its
type (the annotation), its default, its bounds, its help and its group all sit in that one
line (``decision_time: float = _games(60.0, "...", gt=0)``). The flag (``--decision-time``),
the environment variable (``TABLE42_DECISION_TIME``; ``REDIS_URL`` keeps its conventional
name), the parsing, the range check and the grouped ``--help`` are derived from it.

This module is the only one that reads the environment: ``python -m server``, its
``runner-key`` command and ``python -m server.admin`` all get their settings here. The
command line (one flag per setting, ``--help``, the few flags of the commands beside the
server) is :mod:`server.config_args`.

To add a setting: add one field in its group's block with the group's declarer
(``_network``, ``_games``, ...), giving the default, a help line and its bounds (``ge``,
``gt``, ``le``); ``parse``/``metavar`` when its text is not read as its annotation says; a
rule tying two settings together goes in :func:`_check`.
"""

from __future__ import annotations

import ipaddress
import math
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from server.matchmaking.policy import MatchmakingSettings

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ENV_PREFIX = "TABLE42_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class SettingsError(ValueError):
    """A setting has a value outside its allowed range; the message names the setting."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """What a setting is beside its name, type and default: its group in ``--help``, its help
    line, its bounds (``ge``: at least, ``gt``: more than, ``le``: at most) and, when it is not
    ``TABLE42_<NAME>``, its environment variable."""

    group: str
    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    env: str | None = None
    shown_default: str | None = None  # the default as --help shows it, when not the value
    parse: Callable[[str], Any] | None = None  # when the annotation's parser will not do
    metavar: str | None = None  # the placeholder in --help, when not the annotation's

    def bounds(self) -> str:
        """The allowed range in words (``> 0``, ``0..65535``), empty when any value goes."""
        low = f">= {self.ge:g}" if self.ge is not None else (
            f"> {self.gt:g}" if self.gt is not None else "")
        if self.le is None:
            return low
        if self.ge is not None:
            return f"{self.ge:g}..{self.le:g}"
        return f"{low}, <= {self.le:g}" if low else f"<= {self.le:g}"


def _declarer(group: str) -> Callable[..., Any]:
    """The function that declares the settings of one ``--help`` group."""

    def declare(default: Any = MISSING, help: str = "", *,
                ge: float | None = None, gt: float | None = None, le: float | None = None,
                env: str | None = None, factory: Callable[[], Any] | None = None,
                shown_default: str | None = None, parse: Callable[[str], Any] | None = None,
                metavar: str | None = None) -> Any:
        metadata = {"setting": Declaration(group, help, ge, gt, le, env, shown_default, parse,
                                           metavar)}
        if factory is not None:
            return field(default_factory=factory, metadata=metadata)
        return field(default=default, metadata=metadata)

    return declare


_network = _declarer("network")
_store = _declarer("Redis and the embedded store")
_accounts = _declarer("accounts")
_websocket = _declarer("WebSocket connections")
_socket_memory = _declarer("memory per socket and account")
_games = _declarer("tables and games")
_persistence = _declarer("event logs and records")
_chat = _declarer("table chat")
_matchmaking = _declarer("matchmaking")
_ownership = _declarer("table ownership and takeover")
_tournaments = _declarer("tournaments")
_limits = _declarer("limits per address and account, HTTP guards")
_logs = _declarer("logs and metrics")
_computer = _declarer("playing the computer")
_processes = _declarer("processes")
_overload = _declarer("overload: new work refused while the node is busy")


def _workers(raw: str) -> int:
    """A count of processes, or ``auto``: one per core this process may run on."""
    if raw.strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    return int(raw)


def _new_node_id() -> str:
    return secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server can be tuned by. Times are seconds (float), sizes are bytes."""

    host: str = _network("127.0.0.1", "address to listen on")
    port: int = _network(8080, "TCP port to listen on (0 picks a free one)", ge=0, le=65535)
    node_id: str = _network(help="this node's name in Redis (letters, digits, '-', '_')",
                            factory=_new_node_id, shown_default="random")
    trusted_proxies: tuple[str, ...] = _network(
        (), "comma-separated proxy addresses/networks whose X-Forwarded-For header gives the "
        "client address")

    redis_url: str | None = _store(
        None, "Redis URL; unset: the embedded redis-server of the data folder (started by "
        "python -m server; a command uses the running one, or starts it for itself)",
        env="REDIS_URL")
    data_dir: str | None = _store(
        None, "folder where the embedded redis-server (no REDIS_URL) keeps its data, an "
        "append-only file, from one start to the next",
        shown_default="$XDG_DATA_HOME/table42, else ~/.local/share/table42")
    key_prefix: str = _store("t42:", "prefix of every Redis key the server writes (no braces)")
    # The embedded store's supervisor (server/store_supervisor.py, docs/operations.md "When
    # the embedded store dies"): a redis-server that dies is started again, this often at most.
    embedded_restarts: int = _store(
        5, "times the embedded redis-server is started again after it died within "
        "embedded_restart_window; one more death ends the server (exit status 3)", ge=0)
    embedded_restart_window: float = _store(
        60.0, "seconds over which embedded_restarts are counted", gt=0)

    token_ttl: float = _accounts(7 * 24 * 3600.0, "lifetime of an account's bearer token, "
                                 "seconds", gt=0)
    guest_token_ttl: float = _accounts(24 * 3600.0, "lifetime of a guest's bearer token, "
                                       "seconds", gt=0)
    scrypt_n: int = _accounts(2**14, "scrypt cost parameter n (a power of two)", ge=2)
    scrypt_r: int = _accounts(8, "scrypt block size r", ge=1)
    scrypt_p: int = _accounts(1, "scrypt parallelism p", ge=1)
    max_concurrent_hashes: int = _accounts(4, "password hashes computed at once (others "
                                           "wait)", gt=0)
    http_max_body: int = _accounts(4096, "largest HTTP request body, bytes", gt=0)
    # HTTP rate limit (server/net/http_middleware.py): token buckets per client address and per
    # bearer credential.
    http_rate_limit: float = _accounts(
        100.0, "HTTP requests per second one client address (and one bearer credential) may "
        "make on average (0 = no limit)", ge=0)
    http_rate_burst: int = _accounts(1000, "HTTP requests one client address or credential "
                                     "may make in a burst", gt=0)
    http_rate_max_clients: int = _accounts(
        100_000, "clients whose HTTP rate buckets are kept at once (least recently seen "
        "forgotten first)", gt=0)
    # Costly reads (server/net/cost_gate.py, server/net/review_jobs.py; docs/operations.md
    # "Costly reads"): a CPU budget in cost units (about a millisecond of CPU each) per
    # client address and per bearer credential for the record, .mat and review routes, and
    # the worker processes that compute reviews.
    http_cost_rate: float = _accounts(
        50.0, "cost units per second one client address (and one bearer credential) may "
        "spend on record, .mat and review requests (0 = no budget)", ge=0)
    http_cost_burst: float = _accounts(
        1000.0, "cost units one client address or credential may spend in a burst", gt=0)
    review_workers: int = _accounts(
        1, "processes computing game reviews (started at the first review; 0 = a thread of "
        "the server)", ge=0)
    review_queue_max: int = _accounts(
        16, "games whose review this node computes or queues at once; more answer 503 busy",
        gt=0)

    max_msg_size: int = _websocket(16 * 1024, "largest WebSocket message, bytes (bigger "
                                   "closes with 1009)", gt=0)
    heartbeat: float = _websocket(20.0, "WebSocket ping interval, seconds", gt=0)
    auth_timeout: float = _websocket(10.0, "seconds a socket may stay unauthenticated", gt=0)
    rate_limit: float = _websocket(30.0, "messages per second a connection may send on "
                                   "average", gt=0)
    rate_burst: int = _websocket(60, "messages a connection may send in a burst", gt=0)
    flood_close_after: int = _websocket(100, "rate-limited messages in a row before closing "
                                        "with 1008", gt=0)
    max_send_buffer: int = _websocket(256 * 1024, "unsent bytes queued for a socket before "
                                      "it is dropped", gt=0)
    max_connections_per_player: int = _websocket(8, "sockets one player may hold at once",
                                                 gt=0)
    # Memory per socket and account (docs/operations.md "Memory per socket"): everything a
    # client can make the node keep has a bound, whatever the per-address limits say.
    socket_delivered_ids: int = _socket_memory(
        256, "rating/tournament event ids one socket remembers as delivered to it (the "
        "newest; at least inbox_max)", gt=0)
    socket_watch_max: int = _socket_memory(32, "tables one socket may watch at once", gt=0)
    reports_per_player: int = _socket_memory(
        20, "chat reports one account may file per reports_window", gt=0)
    reports_window: float = _socket_memory(24 * 3600.0, "seconds of the reports_per_player "
                                           "window", gt=0)
    reports_kept: int = _socket_memory(10_000, "open chat reports kept for the operators "
                                       "(past it new reports are refused and counted)", gt=0)

    decision_time: float = _games(60.0, "seconds for each decision (roll/double, move, take)",
                                  gt=0)
    max_strikes: int = _games(3, "timeouts in one game that forfeit it", gt=0)
    grace_period: float = _games(60.0, "seconds a disconnected player has to come back", gt=0)
    max_match_length: int = _games(25, "longest match a table may be created for, points",
                                   gt=0)
    max_watchers: int = _games(200, "watchers per table", gt=0)
    max_open_tables: int = _games(10_000, "tables waiting for an opponent, per node", gt=0)
    list_limit: int = _games(100, "most tables one list reply carries", gt=0)
    finished_linger: float = _games(60.0, "seconds a finished table stays for sync/watchers",
                                    ge=0)
    next_game_delay: float = _games(0.0, "pause between the games of a match, seconds", ge=0)
    presence_events: int = _games(4, "player_disconnected/player_reconnected events one seat "
                                  "may add per game; past it a seat's presence changes "
                                  "silently", gt=0)
    # Rating farming: two accounts may play this many rated games (a match counts once)
    # starting within pair_window seconds; later games of the pair are unrated
    # ("pair_limit") until the oldest leaves the window.
    pair_limit: int = _games(5, "rated games two players may play within pair_window; later "
                             "ones are unrated (pair_limit; 0 = no limit)", ge=0)
    pair_window: float = _games(24 * 3600.0, "seconds the pair limit counts back from a "
                                "game's start", ge=1, le=366 * 86400)

    recent_events: int = _persistence(512, "events kept in memory per table for sync (older: "
                                      "Redis)", gt=0)
    event_log_max: int = _persistence(4000, "events kept per table in Redis", gt=0)
    # A sync answer carries at most sync_page events; every sync_events_per_message events
    # it carries cost its socket one more message of its rate limit.
    sync_page: int = _persistence(200, "most events one sync answer carries (complete: "
                                  "false, next: the version to go on from)", gt=0)
    sync_events_per_message: int = _persistence(
        50, "a sync answer costs its socket's rate limit one message more per this many "
        "events", gt=0)
    event_log_ttl: float = _persistence(7 * 24 * 3600.0, "seconds a table's event log is kept "
                                        "after its last event", gt=0)
    inbox_max: int = _persistence(200, "undelivered rating events kept per player", gt=0)
    inbox_ttl: float = _persistence(30 * 24 * 3600.0, "seconds an undelivered rating event "
                                    "is kept", gt=0)
    presence_ttl: float = _persistence(24 * 3600.0, "seconds a player's presence record "
                                       "outlives its refresh", gt=0)
    shutdown_timeout: float = _persistence(10.0, "seconds to wait for in-flight settlements "
                                           "on shutdown", gt=0)
    # Finished games' records (history, replay, .mat; docs/http-api.md "Games")
    game_record_ttl: float = _persistence(90 * 24 * 3600.0, "seconds a finished game's record "
                                          "(and its chat) is kept", gt=0)
    game_index_max: int = _persistence(1000, "finished games indexed per player (older ones "
                                       "drop out of the history)", gt=0)
    # The records' budget (server/store/record_budget.py, docs/operations.md "The records'
    # budget"): finished games kept as records per account and per address in an hour.
    records_per_hour: int = _persistence(
        60, "finished games kept as records per account per hour; past it new games are "
        "refused (rate_limited) and games that still end are not recorded (0 = no limit; "
        "off with limits 0)", ge=0)
    records_per_hour_per_address: int = _persistence(
        120, "the same per network address (an IPv6 /64) (0 = no limit; off with limits 0)",
        ge=0)

    # Table chat (PROTOCOL.md §16)
    chat_max_length: int = _chat(300, "characters of a chat message, once cleaned", gt=0)
    chat_rate: int = _chat(5, "chat messages a player may send per chat_window (per node)",
                           gt=0)
    chat_window: float = _chat(10.0, "seconds of the chat rate window", gt=0)
    chat_log_max: int = _chat(1000, "chat messages kept per game of a table", gt=0)
    chat_mute_max: int = _chat(200, "players one account may mute", gt=0)
    chat_history: int = _chat(50, "chat messages sent with resume and watching", gt=0)

    # window(waited) = min(cap, base + rate * waited), rating points and seconds
    matchmaking_window_base: float = _matchmaking(50.0, "rating window (± points) at 0 s",
                                                  ge=0)
    matchmaking_window_rate: float = _matchmaking(10.0, "window growth, points per second",
                                                  ge=0)
    matchmaking_window_cap: float = _matchmaking(400.0, "widest window, ± points (at least "
                                                 "the base)", ge=0)
    matchmaking_new_players_pair_anyone: bool = _matchmaking(
        True, "FIBS players with experience under 10 pair with anyone (1/0)")
    matchmaking_ticket_ttl: float = _matchmaking(1800.0, "seconds a ticket may wait before it "
                                                 "expires (0 = never)", ge=0)
    matchmaking_scan_limit: int = _matchmaking(64, "unacceptable neighbours one ticket skips "
                                               "per pairing pass", ge=1)
    matchmaking_pass_interval: float = _matchmaking(1.0, "seconds between pairing passes",
                                                    gt=0)
    matchmaking_hold: float = _matchmaking(
        0.8, "seconds a pool's lease is held after a pass (one pass per pool per hold, "
        "whatever the number of nodes)", ge=0, le=5.0)
    matchmaking_max_tickets: int = _matchmaking(100_000, "tickets one pool may hold (0 = "
                                                "any)", ge=0)
    matchmaking_status_interval: float = _matchmaking(
        5.0, "seconds between queue_status pushes to a waiting player", gt=0)

    # Ownership (server/lobby/ownership.py, docs/operations.md "Node loss and takeover"):
    # a node counts as alive for lease_ttl after its heartbeat (one per node every
    # lease_renew, whatever its table count); every node looks for dead nodes every
    # takeover_scan. A table is taken over at most lease_ttl + takeover_scan after its
    # owner's last heartbeat (7 s by default).
    lease_ttl: float = _ownership(6.0, "seconds a node counts as alive after its heartbeat "
                                  "(its tables are taken over after that; at least twice "
                                  "lease_renew)", gt=0)
    lease_renew: float = _ownership(2.0, "seconds between two heartbeats of a node", gt=0)
    takeover_scan: float = _ownership(1.0, "seconds between two looks for dead nodes and "
                                      "tables handed over", gt=0)
    # Busy is not dead (server/cluster/pulse.py, docs/operations.md "Busy or dead"): the
    # heartbeat runs on a thread of its own and goes on while the event loop is busy; a loop
    # that has run nothing for loop_stuck_limit counts as hung and the heartbeat ends then.
    loop_stuck_limit: float = _ownership(
        30.0, "seconds a node's event loop may run nothing (one long task) before the node "
        "counts as dead and its tables are taken over (its heartbeat goes on until then)",
        gt=0)
    # A table taken over from a dead node: the player to act gets the time left on the clock
    # when its last event was stored, plus this.
    takeover_allowance: float = _ownership(10.0, "seconds added to the clock of the player to "
                                           "act at a taken-over table", ge=0)
    # A table held while its node could not store (Redis away): each clock and grace period
    # goes on with the time it had left when the hold began, plus this.
    hold_allowance: float = _ownership(5.0, "seconds added to each clock and grace period of a "
                                       "table held while Redis was away", ge=0)
    # A player whose socket was on a node found dead (the server's fault) has this long from
    # then to come back, instead of grace_period (when that ends later).
    node_loss_grace: float = _ownership(180.0, "seconds a player whose node was found dead has "
                                        "to come back, from then (instead of grace_period, "
                                        "when longer)", gt=0)
    forward_timeout: float = _ownership(
        30.0, "seconds a request forwarded to a live owner may go unanswered before the "
        "sender answers it with unavailable", gt=0)
    # A node message nobody heard (server/cluster/bus.py).
    bus_unheard_for: float = _ownership(
        3.0, "seconds a node message that no node heard (its listener reconnecting) is "
        "published again before it is given up; a forwarded request given up is answered "
        "unavailable with retry_after", gt=0)
    # Replicated before announced (server/store/replicas.py, docs/deployment.md "Redis
    # Cluster"): a table's events, a result and a rating are told once this many replicas of
    # the master that took them have them (WAIT), on a master that has replicas; a WAIT that
    # times out holds the table as during an outage.
    replica_wait: int = _ownership(1, "replicas of a write's master that must have it before "
                                   "it is announced (0 = none; a master with fewer replicas "
                                   "waits for those it has)", ge=0, le=16)
    replica_wait_timeout: float = _ownership(
        0.5, "seconds a write waits for its replicas before the table holds as during an "
        "outage", gt=0, le=60)

    tournament_tick: float = _tournaments(1.0, "seconds between two steps of a bracket", gt=0)
    tournament_lease: float = _tournaments(10.0, "seconds a node's lease on a bracket lasts "
                                           "unless renewed (more than twice the tick)", gt=0)
    # The call of a tournament match (docs/operations.md, "The tournament call").
    tournament_call: float = _tournaments(
        5.0, "seconds a tournament match's call stays on the players' screens before its "
        "table opens (at most half the no-show time; 0: at once)", ge=0)

    # Hardening (docs/operations.md). ``limits`` turns every limit of this block off at once
    # (benchmarks); a rate of 0 turns one off.
    limits: bool = _limits(True, "1/0: every per-address and per-account limit of this group "
                           "(off: benchmarks only)")
    guest_rate: float = _limits(0.2, "guest tokens one address may get per second (0 = any)",
                                ge=0)
    guest_burst: int = _limits(20, "guest tokens one address may get in a burst", gt=0)
    register_rate: float = _limits(0.05, "registrations one address may make per second "
                                   "(0 = any)", ge=0)
    register_burst: int = _limits(10, "registrations one address may make in a burst", gt=0)
    login_rate: float = _limits(1.0, "login attempts one address may make per second "
                                "(0 = any)", ge=0)
    login_burst: int = _limits(20, "login attempts one address may make in a burst", gt=0)
    login_free_failures: int = _limits(5, "failed logins per account and address before a "
                                       "delay", gt=0)
    login_delay_base: float = _limits(1.0, "first delay after the free failures, seconds "
                                      "(doubles with each further failure)", ge=0)
    login_lock_after: int = _limits(10, "failed logins per account and address that lock "
                                    "that address out of that account for login_lock_time",
                                    gt=0)
    login_lock_time: float = _limits(900.0, "seconds an account stays locked for one address",
                                     ge=0)
    login_account_lock_after: int = _limits(
        50, "failed logins of one account from all addresses after which only addresses that "
        "logged in before may try", gt=0)
    login_fail_window: float = _limits(3600.0, "seconds failed logins are remembered after "
                                       "the last", gt=0)
    hashes_per_address: int = _limits(2, "password hashes one address may have queued or "
                                      "running", gt=0)
    max_sockets_per_address: int = _limits(64, "WebSockets one address may hold at once", gt=0)
    table_create_rate: float = _limits(1.0, "tables one player, and one address, may create "
                                       "per second (0 = any)", ge=0)
    table_create_burst: int = _limits(10, "tables one player or address may create in a "
                                      "burst", gt=0)
    max_open_tables_per_address: int = _limits(20, "open tables created from one address at "
                                               "once", gt=0)
    report_rate: float = _limits(1 / 60, "chat reports one account, and one address, may "
                                 "file per second (0 = any)", ge=0)
    report_burst: int = _limits(10, "chat reports one account or address may file in a burst",
                                gt=0)
    http_header_timeout: float = _limits(
        10.0, "seconds a connection may wait without a complete request (slow headers, idle "
        "keep-alive) before it is closed", gt=0)
    http_body_timeout: float = _limits(10.0, "seconds to receive a request body", gt=0)
    http_max_connections: int = _limits(0, "open HTTP/WebSocket connections at most (0 = the "
                                        "file-descriptor limit minus a reserve)", ge=0)
    redis_check_interval: float = _limits(0.5, "seconds between two Redis health checks (for "
                                          "/readyz and refusals)", gt=0)
    list_cache_ttl: float = _limits(0.5, "seconds a page of the table list is reused (0 = "
                                    "never; identical requests meanwhile share one Redis "
                                    "read)", ge=0)

    # Overload (server/net/load.py, docs/operations.md "Overload"): busy once the loop's lag
    # or the CPU share stays over its limit for load_busy_after seconds; calm again once both
    # stay under 70% of their limits for load_calm_after seconds. 0 turns a limit off.
    load_max_lag: float = _overload(0.1, "seconds of event-loop lag (smoothed) over which the "
                                    "node counts as loaded (0 = not judged)", ge=0)
    load_max_cpu: float = _overload(0.9, "CPU share of one core (smoothed) over which the node "
                                    "counts as loaded (0 = not judged)", ge=0)
    load_busy_after: float = _overload(3.0, "seconds a loaded node waits before it refuses "
                                       "new work (busy)", ge=0)
    load_calm_after: float = _overload(5.0, "seconds under 70% of both limits before a busy "
                                       "node takes new work again", ge=0)
    load_sample_interval: float = _overload(0.25, "seconds between two load samples (one "
                                            "timer)", gt=0, le=10)
    load_test_burn_file: str = _overload("", "tests only: while this file exists, each load "
                                         "sample stalls the loop for the seconds it holds "
                                         "(empty = off)")

    log_level: str = _logs("INFO", "log level: DEBUG, INFO, WARNING, ERROR or CRITICAL")
    json_logs: bool = _logs(False, "1/0: log one JSON object per line (with request/game ids)")
    metrics: bool = _logs(True, "1/0: Prometheus metrics at /metrics")

    bot_games_per_node: int = _computer(100, "games against the computer this node hosts at "
                                        "once (0 = none)", ge=0)
    bot_games_per_player: int = _computer(30, "games against the computer one player may "
                                          "start per bot_games_window", ge=0)
    bot_games_window: float = _computer(3600.0, "the window of bot_games_per_player, seconds",
                                        gt=0)
    bot_games_per_address: int = _computer(10, "games against the computer played from one "
                                           "address at once (0 = no limit; off with limits "
                                           "0)", ge=0)
    bot_decision_timeout: float = _computer(15.0, "seconds a computer player may think; "
                                            "slower, it forfeits", gt=0)
    bot_workers: int = _computer(1, "processes running the computer players' evaluation and "
                                 "search (0 = a thread of the server)", ge=0)

    # Processes (docs/deployment.md "Every core"): node processes python -m server runs on
    # one port (each a node of the cluster), and the event loop's implementation.
    workers: int = _processes(1, "node processes sharing the port (SO_REUSEPORT), each a node "
                              "of the cluster with its own id; auto = one per core",
                              ge=1, le=1024, parse=_workers, metavar="N|auto")
    reuse_port: bool = _processes(False, "1/0: listen with SO_REUSEPORT, sharing the port with "
                                  "other processes that do (each worker of --workers does)")
    local_link: bool = _processes(True, "1/0: the workers of --workers send each other node "
                                  "messages over Unix sockets (else through Redis pub/sub)")
    socket_moves: bool = _processes(True, "1/0: a worker of --workers hands a socket over to "
                                    "the sibling that owns its player's table (needs the "
                                    "local link), so moves never cross between workers")
    link_dir: str = _processes("", "folder of the local link's Unix sockets between sibling "
                               "workers (set by --workers; empty = off)")
    link_peers: tuple[str, ...] = _processes(
        (), "comma-separated node ids of the sibling workers reached over the local link "
        "(set by --workers)")
    uvloop: bool = _processes(True, "1/0: run the event loop on uvloop when it is installed")

    def __post_init__(self) -> None:
        _check(self)

    @property
    def siblings(self) -> frozenset[str]:
        """The other workers of this machine's ``--workers`` command (``link_peers`` less
        this node)."""
        return frozenset(self.link_peers) - {self.node_id}

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
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from environment variables (``os.environ`` when None), then
        ``overrides``; an unset or empty variable keeps the default."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for option in OPTIONS:
            raw = env.get(option.env)
            if raw is not None and raw != "":
                values[option.name] = option.parse(raw, option.env)
        values.update(overrides)
        return cls(**values)

    def data_folder(self, environ: Mapping[str, str] | None = None) -> Path:
        """The embedded store's folder: ``data_dir``, else ``$XDG_DATA_HOME/table42``, else
        ``~/.local/share/table42`` (``environ``: ``os.environ`` when None)."""
        if self.data_dir:
            return Path(self.data_dir).expanduser()
        env = os.environ if environ is None else environ
        base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(base).expanduser() / "table42"


REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://")
"""The URLs of a Redis the server can use (``redis+cluster://``: a Redis Cluster)."""


def _check(s: Settings) -> None:
    """Every declared bound, then the rules no single bound states."""
    for option in OPTIONS:
        value = getattr(s, option.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        d = option.declaration
        if not ((d.ge is None or value >= d.ge) and (d.gt is None or value > d.gt)
                and (d.le is None or value <= d.le)) or math.isnan(value):
            raise SettingsError(f"{option.name} must be {d.bounds()}, got {value!r}")
    if s.scrypt_n & (s.scrypt_n - 1):
        raise SettingsError(f"scrypt_n must be a power of two >= 2, got {s.scrypt_n}")
    if s.redis_url is not None and not s.redis_url.startswith(REDIS_SCHEMES):
        raise SettingsError(f"redis_url must start with {', '.join(REDIS_SCHEMES)}, "
                            f"got {s.redis_url!r}")
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
    if s.log_level.upper() not in LOG_LEVELS:
        raise SettingsError(f"log_level must be one of {', '.join(LOG_LEVELS)}, "
                            f"got {s.log_level!r}")
    if s.socket_delivered_ids < s.inbox_max:
        raise SettingsError("socket_delivered_ids must be at least inbox_max")
    if not s.lease_ttl >= 2 * s.lease_renew:
        raise SettingsError("lease_ttl must be at least twice lease_renew")
    if not s.tournament_lease > 2 * s.tournament_tick:
        raise SettingsError("tournament_lease must be more than twice tournament_tick")


def _csv(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _flag(raw: str) -> bool:
    text = raw.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


#: How a flag's or variable's text becomes a value, and its placeholder in ``--help``, by the
#: field's annotation.
PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "str": (str, "TEXT"), "str | None": (str, "TEXT"), "int": (int, "N"),
    "float": (float, "X"), "bool": (_flag, "1|0"), "tuple[str, ...]": (_csv, "A,B"),
}


@dataclass(frozen=True, slots=True)
class Option:
    """One setting as the outside world sees it, derived from its field of :class:`Settings`:
    flag, environment variable, parser, help and group."""

    name: str
    declaration: Declaration
    parse_value: Callable[[str], Any]
    metavar: str
    default: Any

    @property
    def env(self) -> str:
        return self.declaration.env or ENV_PREFIX + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def help(self) -> str:
        """The help line with the bounds, the default and the variable (for ``--help``)."""
        d = self.declaration
        parts = [d.bounds()] if d.bounds() else []
        parts.append(f"default {d.shown_default or shown(self.default)}")
        parts.append(f"env {self.env}")
        return f"{d.help} [{'; '.join(parts)}]".replace("%", "%%")

    def parse(self, raw: str, source: str) -> Any:
        try:
            return self.parse_value(raw)
        except ValueError as exc:
            raise SettingsError(f"{source}: cannot parse {raw!r}: {exc}") from exc


def shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value) or "none"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}" if abs(value) < 1e6 else str(int(value))
    return str(value)


def _options() -> tuple[Option, ...]:
    options = []
    for f in fields(Settings):
        declaration = f.metadata["setting"]
        assert isinstance(declaration, Declaration), f.name
        parse, metavar = PARSERS[str(f.type)]
        options.append(Option(f.name, declaration, declaration.parse or parse,
                              declaration.metavar or metavar,
                              None if f.default is MISSING else f.default))
    return tuple(options)


#: Every setting, in declaration order (the order of ``--help``).
OPTIONS: tuple[Option, ...] = _options()
BY_NAME = {option.name: option for option in OPTIONS}


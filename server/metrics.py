"""Prometheus metrics of one node (``GET /metrics``), every one documented in
docs/operations.md.

Each application has its own :class:`Metrics` with its own registry (several in-process
servers in one test never share counters). With ``settings.metrics`` off every metric is a
no-op object with the same methods, so the hot paths (a move) call them unconditionally.
"""

from __future__ import annotations

from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_FAST = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_SLOW = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _Metric(Protocol):
    def inc(self, amount: float = 1) -> None: ...
    def dec(self, amount: float = 1) -> None: ...
    def set(self, value: float) -> None: ...
    def observe(self, amount: float) -> None: ...
    def labels(self, *values: str) -> Any: ...


class _Null:
    """Stands for any metric when metrics are off."""

    __slots__ = ()

    def inc(self, amount: float = 1) -> None:
        pass

    def dec(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass

    def labels(self, *values: str) -> _Null:
        return self


_NULL = _Null()


class Metrics:
    """The node's metrics; ``enabled=False`` makes every one a no-op."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
            return Counter(name, doc, labels, registry=r) if enabled else _NULL

        def gauge(name: str, doc: str) -> Any:
            return Gauge(name, doc, registry=r) if enabled else _NULL

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Any:
            return Histogram(name, doc, buckets=buckets, registry=r) if enabled else _NULL

        self.connections = gauge("table42_connections", "WebSockets open on this node")
        self.connections_opened = counter("table42_connections_opened",
                                          "WebSockets opened on this node")
        self.http_connections = gauge("table42_http_connections",
                                      "TCP connections open to this node's HTTP server")
        self.tables = gauge("table42_tables", "tables in this node's memory (live)")
        self.games = gauge("table42_games", "games in progress on this node")
        self.games_finished = counter("table42_games_finished", "games that ended on this node")
        self.moves = counter("table42_moves", "game commands (roll, play, double, ...) applied")
        self.settlements = counter("table42_settlements",
                                   "game results stored (rated or not), after every retry")
        self.settlement_retries = counter("table42_settlement_retries",
                                          "retries of an end-of-game write Redis refused")
        self.settlements_pending = gauge(
            "table42_settlements_pending",
            "finished games whose result, rating, seat release or inbox is not stored yet")
        self.errors = counter("table42_errors", "error replies sent, by code", ("code",))
        self.refusals = counter("table42_refusals", "requests refused by a limit, by limit",
                                ("limit",))
        self.tokens_ended = counter("table42_token_sockets_closed",
                                    "sockets closed because their token ended, by reason",
                                    ("reason",))
        self.rating_events = counter("table42_rating_events",
                                     "rating/boosted events delivered, by path", ("path",))
        self.redis_up = gauge("table42_redis_up", "1 when the last Redis check answered")
        self.redis_rtt = histogram("table42_redis_roundtrip_seconds",
                                   "Redis round trips (health checks and write-behind flushes)",
                                   _FAST)
        self.move_time = histogram("table42_move_seconds",
                                   "time to handle one game command on the owner node", _FAST)
        self.rating_delay = histogram("table42_game_end_to_rating_seconds",
                                      "from a game's last move to its rating events' push",
                                      _SLOW)

    def error(self, code: str) -> None:
        self.errors.labels(code).inc()

    def refused(self, limit: str) -> None:
        self.refusals.labels(limit).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry) if self.enabled else b""

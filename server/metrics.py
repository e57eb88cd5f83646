"""Prometheus metrics of one node (``GET /metrics``), every one documented in
docs/operations.md.

Each application has its own :class:`Metrics` with its own registry (several in-process
servers in one test never share counters). With ``settings.metrics`` off every metric is a
no-op object with the same methods, so the hot paths (a move) call them unconditionally.

The metrics are this module's own plain-Python counters, gauges and histograms, exposed
through one collector in exactly the text ``prometheus_client``'s classes would write (names,
``_total``/``_created`` samples, ``le`` labels, order). ``prometheus_client``'s own classes
take a lock on every update, which the event loop, the only writer, does not need: a move's
``moves.inc()`` and ``move_time.observe()`` cost less than half of theirs.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString as _go_float

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_FAST = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_SLOW = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


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


class _Family:
    """A metric with its children by label values (one child, ``()``, when unlabelled)."""

    kind = ""

    def __init__(self, name: str, doc: str, labelnames: tuple[str, ...] = ()) -> None:
        self.name = name
        self.doc = doc
        self.labelnames = labelnames
        self.children: dict[tuple[str, ...], Any] = {}

    def child(self) -> Any:
        raise NotImplementedError

    def labels(self, *values: str) -> Any:
        found = self.children.get(values)
        if found is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}")
            found = self.children[values] = self.child()
        return found

    def samples(self, child: Any, labels: dict[str, str]) -> Iterator[tuple[str, dict[str, str],
                                                                          float]]:
        raise NotImplementedError

    def collect(self) -> Metric:
        metric = Metric(self.name, self.doc, self.kind)
        for values, child in list(self.children.items()):
            labels = dict(zip(self.labelnames, values, strict=True))
            for suffix, extra, value in self.samples(child, labels):
                metric.add_sample(self.name + suffix, {**labels, **extra}, value)
        return metric


class _CounterValue:
    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("counters only go up")
        self.value += amount


class _Counter(_Family):
    kind = "counter"

    def __init__(self, name: str, doc: str, labelnames: tuple[str, ...] = ()) -> None:
        super().__init__(name, doc, labelnames)
        if not labelnames:
            self.inc = self.labels().inc

    def child(self) -> _CounterValue:
        return _CounterValue()

    def samples(self, child: Any, labels: dict[str, str]) -> Iterator[tuple[str, dict[str, str],
                                                                          float]]:
        yield "_total", {}, child.value
        yield "_created", {}, child.created


class _Gauge(_Family):
    kind = "gauge"

    def __init__(self, name: str, doc: str) -> None:
        super().__init__(name, doc)
        self.value = 0.0
        self.children[()] = self

    def child(self) -> _Gauge:
        return self

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)

    def samples(self, child: Any, labels: dict[str, str]) -> Iterator[tuple[str, dict[str, str],
                                                                          float]]:
        yield "", {}, child.value


class _Histogram(_Family):
    kind = "histogram"

    def __init__(self, name: str, doc: str, buckets: tuple[float, ...]) -> None:
        super().__init__(name, doc)
        self.bounds = (*buckets, float("inf"))
        self.labels_le: dict[float, str] = {b: _go_float(b) for b in self.bounds}  # type: ignore[no-untyped-call]
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0
        self.created = time.time()
        self.children[()] = self

    def child(self) -> _Histogram:
        return self

    def observe(self, amount: float) -> None:
        self.sum += amount
        # The first bucket whose bound is >= amount (prometheus: amount <= bound).
        self.counts[bisect_left(self.bounds, amount)] += 1

    def samples(self, child: Any, labels: dict[str, str]) -> Iterator[tuple[str, dict[str, str],
                                                                          float]]:
        total = 0.0
        for bound, count in zip(self.bounds, self.counts, strict=True):
            total += count
            yield "_bucket", {"le": self.labels_le[bound]}, total
        yield "_count", {}, total
        yield "_sum", {}, self.sum
        yield "_created", {}, self.created


class _Collector(Collector):
    def __init__(self, families: list[_Family]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.collect()

    def describe(self) -> Iterator[Metric]:
        for family in self.families:
            yield Metric(family.name, family.doc, family.kind)


class Metrics:
    """The node's metrics; ``enabled=False`` makes every one a no-op."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry = CollectorRegistry(auto_describe=True)
        families: list[_Family] = []

        def add(family: _Family) -> Any:
            families.append(family)
            return family

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
            return add(_Counter(name, doc, labels)) if enabled else _NULL

        def gauge(name: str, doc: str) -> Any:
            return add(_Gauge(name, doc)) if enabled else _NULL

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Any:
            return add(_Histogram(name, doc, buckets)) if enabled else _NULL

        self.connections = gauge("table42_connections", "WebSockets open on this node")
        self.connections_opened = counter("table42_connections_opened",
                                          "WebSockets opened on this node")
        self.socket_moves = counter(
            "table42_socket_moves", "sockets summoned by a sibling worker, by what happened: "
            "moved (handed over), stayed (not at rest, or it must stay), refused (by the "
            "sibling), failed (closed with 1012 to reconnect)", ("result",))
        self.forwarded = counter(
            "table42_commands_forwarded", "table commands of this node's sockets sent to the "
            "table's owner, by where it is: sibling (a worker of this machine), node",
            ("to",))
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
        # Overload (server/net/load.py, docs/operations.md "Overload")
        self.loop_lag = gauge("table42_loop_lag_seconds",
                              "the event loop's lag, smoothed (how late a due timer runs)")
        self.cpu_share = gauge("table42_cpu_share",
                               "the process's CPU time over wall time, smoothed (1: one core)")
        self.busy = gauge("table42_busy", "1 while the node refuses new work (busy)")
        self.busy_refusals = counter("table42_busy_refusals",
                                     "new work refused while the node is busy, by kind",
                                     ("kind",))
        if enabled:
            self.registry.register(_Collector(families))

    def error(self, code: str) -> None:
        self.errors.labels(code).inc()

    def refused(self, limit: str) -> None:
        self.refusals.labels(limit).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry) if self.enabled else b""

"""The move path's plumbing keeps what it replaced: the metrics write the same text as
``prometheus_client``'s own classes, and the one-pass depth and timestamp check of
``codec.decode`` refuses exactly what the two iterative walks refused, with the same error."""

from __future__ import annotations

import re
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from server.metrics import _FAST, _SLOW, Metrics
from server.protocol import codec
from server.protocol.codec import WireFormat
from server.protocol.errors import FrameError

CREATED = re.compile(rb"^(\w+_created(?:\{[^}]*\})?) [0-9.e+]+$", re.MULTILINE)


def _reference(metrics: Metrics) -> CollectorRegistry:
    """The same metrics as ``prometheus_client`` classes, in a registry of their own."""
    registry = CollectorRegistry(auto_describe=True)
    from server import metrics as module

    for name, family in vars(metrics).items():
        if isinstance(family, module._Counter):
            ref: Any = Counter(family.name, family.doc, family.labelnames, registry=registry)
            for values, child in family.children.items():
                target = ref.labels(*values) if values else ref
                target.inc(child.value)
        elif isinstance(family, module._Gauge):
            Gauge(family.name, family.doc, registry=registry).set(family.value)
        elif isinstance(family, module._Histogram):
            buckets = _FAST if family.bounds[:-1] == _FAST else _SLOW
            assert family.bounds[:-1] == buckets, name
            hist = Histogram(family.name, family.doc, buckets=buckets, registry=registry)
            for bound, count in zip(family.bounds, family.counts, strict=True):
                for _ in range(count):
                    hist.observe(bound)  # an amount equal to a bound falls in that bucket
            hist._sum.set(family.sum)
    return registry


def test_metrics_write_what_prometheus_client_writes() -> None:
    metrics = Metrics()
    for amount in (0.00005, 0.0001, 0.0003, 0.2, 7.0):
        metrics.move_time.observe(amount)
        metrics.moves.inc()
    metrics.rating_delay.observe(0.02)
    metrics.error("bad_frame")
    metrics.error("bad_frame")
    metrics.refused("guest_per_address")
    metrics.games.inc()
    metrics.games.inc()
    metrics.games.dec()
    metrics.redis_up.set(1)
    ours = CREATED.sub(rb"\1 T", metrics.render())
    theirs = CREATED.sub(rb"\1 T", generate_latest(_reference(metrics)))
    assert ours == theirs
    assert metrics.registry.get_sample_value("table42_moves_total") == 5
    assert metrics.registry.get_sample_value(
        "table42_move_seconds_bucket", {"le": "0.0001"}) == 2
    assert metrics.registry.get_sample_value("table42_errors_total", {"code": "bad_frame"}) == 2
    assert Metrics(enabled=False).render() == b""


def _old_verdict(obj: Any, fmt: WireFormat, limit: int) -> str | None:
    if not codec._depth_ok(obj, limit):
        return "deep"
    if fmt is WireFormat.MSGPACK and codec._has_timestamp(obj):
        return "timestamp"
    return None


def _new_verdict(obj: Any, fmt: WireFormat, limit: int) -> str | None:
    try:
        codec._check(obj, fmt, limit)
    except FrameError as exc:
        return "deep" if "deeper" in str(exc) else "timestamp"
    return None


scalars = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans(),
                    st.just(msgpack.Timestamp(1, 0)))
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=2), inner, max_size=3)),
    max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(documents, st.sampled_from([0, 1, 2, 3, 5, 32]), st.sampled_from(list(WireFormat)))
def test_one_pass_check_refuses_what_the_two_walks_refused(
        obj: Any, limit: int, fmt: WireFormat) -> None:
    assert _new_verdict(obj, fmt, limit) == _old_verdict(obj, fmt, limit)


def test_decode_messages_unchanged() -> None:
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    raw = msgpack.packb({"type": "play", "x": deep})
    for data, fmt, expected in (
        (raw, WireFormat.MSGPACK, "msgpack document nests deeper than 32"),
        (msgpack.packb({"t": msgpack.Timestamp(5, 0)}, datetime=False), WireFormat.MSGPACK,
         "msgpack extension type -1 (timestamp) is not allowed"),
    ):
        try:
            codec.decode(data, fmt)
        except FrameError as exc:
            assert str(exc).endswith(expected), str(exc)
        else:
            raise AssertionError("accepted")

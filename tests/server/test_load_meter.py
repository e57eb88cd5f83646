"""The load meter (server/net/load.py), pure: a driven clock, no sleeps.

Busy only after a reading has stayed over its limit for ``busy_after``; calm only after both
have stayed under 70% of their limits for ``calm_after``; a lone stall is not load; the wait
it tells a refused client is the calm hold still to run.
"""

from __future__ import annotations

import pytest

from server.net.load import CALM_SHARE, LAG_CAP, LoadLimits, LoadMeter

STEP = 0.25
LIMITS = LoadLimits(max_lag=0.1, max_cpu=0.9, busy_after=3.0, calm_after=5.0)


class Driven:
    """A meter fed by a driven clock: each step is STEP seconds of the given lag and CPU."""

    def __init__(self, limits: LoadLimits = LIMITS) -> None:
        self.meter = LoadMeter(limits)
        self.now = 100.0
        self.cpu_seconds = 0.0
        self.changes: list[tuple[float, bool]] = []
        self.meter.observe(self.now, 0.0, self.cpu_seconds)

    def run(self, seconds: float, *, lag: float = 0.0, cpu: float = 0.0) -> None:
        for _ in range(round(seconds / STEP)):
            self.now += STEP
            self.cpu_seconds += cpu * STEP
            changed = self.meter.observe(self.now, lag, self.cpu_seconds)
            if changed is not None:
                self.changes.append((self.now, changed))


def test_an_idle_node_is_never_busy() -> None:
    node = Driven()
    node.run(60, lag=0.002, cpu=0.05)
    assert not node.meter.busy() and node.changes == []
    assert node.meter.lag() == pytest.approx(0.002, rel=0.01)
    assert node.meter.cpu() == pytest.approx(0.05, rel=0.01)


def test_busy_after_the_lag_stays_over_its_limit() -> None:
    node = Driven()
    node.run(2.5, lag=0.3)
    assert not node.meter.busy()  # over the limit, but not for busy_after yet
    node.run(2.0, lag=0.3)
    assert node.meter.busy()
    (when, state), = node.changes
    assert state is True and 3.0 <= when - 100.0 <= 4.0


def test_busy_after_the_cpu_stays_over_its_limit() -> None:
    node = Driven()
    node.run(10, lag=0.01, cpu=1.0)
    assert node.meter.busy()
    assert node.meter.cpu() > 0.9 and node.meter.lag() < 0.1


def test_a_short_burst_is_not_busy() -> None:
    node = Driven()
    for _ in range(10):
        node.run(2.0, lag=0.5, cpu=1.0)  # loaded 2 s, idle 2 s: never 3 s in a row
        node.run(2.0)
    assert node.changes == []


def test_a_single_stall_fades_before_it_counts() -> None:
    node = Driven()
    node.now += 30.0  # a 30 s stall (a paused process): one sample, late by 30 s
    node.meter.observe(node.now, 30.0, node.cpu_seconds)
    assert node.meter.lag() == pytest.approx(LAG_CAP)
    node.run(20, lag=0.002)
    assert node.changes == []


def test_hysteresis_calm_only_under_the_lower_level_for_calm_after() -> None:
    node = Driven()
    node.run(5, lag=0.3)
    assert node.meter.busy()
    # Just under the limit but over 70% of it: still busy, however long.
    node.run(60, lag=0.09)
    assert node.meter.busy()
    # Under 70% of the limit: calm after calm_after (plus the smoothing's fall).
    assert 0.1 * CALM_SHARE > 0.05
    node.run(4.0, lag=0.05)
    assert node.meter.busy()
    node.run(3.0, lag=0.05)
    assert not node.meter.busy()
    assert [state for _when, state in node.changes] == [True, False]


def test_one_high_sample_while_calming_starts_the_calm_hold_again() -> None:
    node = Driven()
    node.run(5, lag=0.3)
    node.run(4.5, lag=0.01)
    assert node.meter.busy()
    node.run(0.5, lag=1.0)  # a relapse
    node.run(4.5, lag=0.01)
    assert node.meter.busy()
    node.run(3.0, lag=0.01)
    assert not node.meter.busy()


def test_retry_after_is_the_calm_hold_left() -> None:
    node = Driven()
    node.run(5, lag=0.3)
    assert node.meter.busy()
    assert node.meter.retry_after() == pytest.approx(5.0)  # still loaded: the whole hold
    node.run(2.0, lag=0.0)  # the smoothed lag falls under 70% within the first second
    assert 3.0 <= node.meter.retry_after() < 5.0
    node.run(60, lag=0.0)
    assert not node.meter.busy()
    assert node.meter.retry_after() >= 1.0


def test_a_limit_of_zero_is_off() -> None:
    node = Driven(LoadLimits(max_lag=0.0, max_cpu=0.9, busy_after=1.0, calm_after=1.0))
    node.run(10, lag=0.9, cpu=0.1)
    assert not node.meter.busy()
    off = Driven(LoadLimits(max_lag=0.0, max_cpu=0.0, busy_after=0.0, calm_after=0.0))
    off.run(10, lag=0.9, cpu=1.0)
    assert not off.meter.busy() and off.changes == []


def test_time_going_backwards_or_standing_still_is_harmless() -> None:
    meter = LoadMeter(LIMITS)
    meter.observe(10.0, 0.0, 1.0)
    meter.observe(10.0, 0.5, 1.0)
    meter.observe(9.0, -1.0, 0.5)
    assert 0.0 <= meter.lag() <= LAG_CAP and meter.cpu() >= 0.0


def test_strained_at_once_busy_only_after_the_hold() -> None:
    node = Driven()
    assert not node.meter.strained()
    node.run(0.5, lag=0.3)
    assert node.meter.strained() and not node.meter.busy()
    assert node.meter.retry_after() == 1.0
    node.run(5, lag=0.3)
    assert node.meter.strained() and node.meter.busy()
    node.run(60, lag=0.0)
    assert not node.meter.strained() and not node.meter.busy()

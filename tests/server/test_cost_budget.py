"""The cost budget of the costly HTTP routes (``server/cost_budget.py``, pure), table-driven:
what a key may start, what it is charged, how it refills and what it is told to wait; and
``Accept-Encoding`` as the served records read it."""

from __future__ import annotations

import pytest

from server.cost_budget import COSTS, RECORD_BYTES_PER_UNIT, CostBudget, record_cost
from server.store.record_bytes import accepts_gzip

# (rate, burst, steps, expected waits): each step is ("charge", cost, at) or ("wait", at);
# the waits, in order, are what each "wait" step answers.
CASES = [
    ("a full bucket starts", 10.0, 100.0, [("wait", 0.0)], [0.0]),
    ("spent down to zero: wait for a unit", 10.0, 100.0,
     [("charge", 100.0, 0.0), ("wait", 0.0)], [0.0]),
    ("below zero: wait until above", 10.0, 100.0,
     [("charge", 150.0, 0.0), ("wait", 0.0), ("wait", 4.0), ("wait", 5.1)], [5.0, 1.0, 0.0]),
    ("debt is capped at -burst", 10.0, 100.0,
     [("charge", 1000.0, 0.0), ("wait", 0.0)], [10.0]),
    ("refills up to burst only", 10.0, 100.0,
     [("charge", 50.0, 0.0), ("charge", 120.0, 100.0), ("wait", 100.0)], [2.0]),
    ("time going backwards refills nothing", 10.0, 100.0,
     [("charge", 120.0, 10.0), ("wait", 5.0)], [2.0]),
    ("a refund gives units back", 10.0, 100.0,
     [("charge", 150.0, 0.0), ("charge", -60.0, 0.0), ("wait", 0.0)], [0.0]),
    ("a refund fills up to burst only", 10.0, 100.0,
     [("charge", -60.0, 0.0), ("charge", 150.0, 0.0), ("wait", 0.0)], [5.0]),
    ("rate 0: no budget", 0.0, 1.0, [("charge", 1e9, 0.0), ("wait", 0.0)], [0.0]),
]


@pytest.mark.parametrize(("rate", "burst", "steps", "waits"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_budget(rate: float, burst: float, steps: list[tuple[str, float] |
                                                             tuple[str, float, float]],
                    waits: list[float]) -> None:
    budget = CostBudget(rate, burst)
    seen = []
    for step in steps:
        if step[0] == "charge":
            budget.charge("k", step[1], step[2])  # type: ignore[misc]
        else:
            seen.append(budget.wait("k", step[1]))
    assert seen == pytest.approx(waits, abs=1e-6)


def test_keys_are_apart_and_bounded() -> None:
    budget = CostBudget(1.0, 10.0, max_keys=2)
    budget.charge("a", 20.0, 0.0)
    assert budget.wait("a", 0.0) > 0 and budget.wait("b", 0.0) == 0.0
    budget.wait("c", 0.0)  # a third key: the least recently seen ("a") is forgotten
    assert len(budget) == 2 and budget.wait("a", 0.0) == 0.0


@pytest.mark.parametrize(("size", "decompressed", "cost"), [
    (0, False, COSTS["record"]),
    (RECORD_BYTES_PER_UNIT, False, COSTS["record"] + 1),
    (RECORD_BYTES_PER_UNIT, True, COSTS["record"] + 2),
    (8 * RECORD_BYTES_PER_UNIT, False, COSTS["record"] + 8),
])
def test_a_record_costs_by_its_size(size: int, decompressed: bool, cost: float) -> None:
    assert record_cost(size, decompressed=decompressed) == pytest.approx(cost)


def test_a_computed_review_costs_far_more_than_a_kept_one_or_a_record() -> None:
    assert COSTS["review"] > 10 * COSTS["review_cached"] >= 10 * COSTS["record"]


@pytest.mark.parametrize(("header", "accepted"), [
    (None, False), ("", False), ("gzip", True), ("gzip, deflate, br", True),
    ("br;q=1.0, gzip;q=0.8", True), ("gzip;q=0", False), ("identity", False),
    ("*", True), ("x-gzip", True), ("deflate", False), ("gzip;q=bad", False),
])
def test_accept_encoding(header: str | None, accepted: bool) -> None:
    assert accepts_gzip(header) is accepted


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        CostBudget(-1.0, 1.0)
    with pytest.raises(ValueError):
        CostBudget(1.0, 0.0)

"""The pure core of the node's tick: due times on a grid, no overlap, pokes (no clock)."""

from __future__ import annotations

import pytest

from server.schedule import SLACK, Schedule


def test_nothing_scheduled_is_nothing_due() -> None:
    schedule = Schedule()
    assert schedule.next_due() is None
    assert schedule.take_due(1e9) == []


def test_a_duty_is_first_due_one_period_on_or_when_told() -> None:
    schedule = Schedule()
    schedule.add("beat", 2.0, now=10.0)
    schedule.add("check", 0.5, now=10.0, first=0)
    assert schedule.next_due() == 10.0
    assert schedule.take_due(10.0) == ["check"]
    assert schedule.take_due(11.9) == []
    assert schedule.take_due(12.0) == ["beat"]


def test_duties_whose_periods_divide_one_another_fall_due_together() -> None:
    schedule = Schedule()
    for name, period in (("check", 0.5), ("scan", 1.0), ("beat", 2.0)):
        schedule.add(name, period, now=0.0)
    wakes: list[tuple[float, list[str]]] = []
    now = 0.0
    while now < 4.0:
        due = schedule.next_due()
        assert due is not None
        now = due
        taken = schedule.take_due(now)
        wakes.append((now, sorted(taken)))
        for name in taken:
            schedule.finished(name, now + 0.01)  # each run takes 10 ms
    assert [at for at, _ in wakes] == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
    assert wakes[3] == (2.0, ["beat", "check", "scan"])
    assert wakes[0] == (0.5, ["check"])


def test_a_duty_being_run_is_not_due_again_until_it_ends() -> None:
    schedule = Schedule()
    schedule.add("scan", 1.0, now=0.0)
    assert schedule.take_due(1.0) == ["scan"]
    assert schedule.running("scan")
    assert schedule.next_due() is None
    assert schedule.take_due(5.0) == []
    # Ended at 3.4: due at the next point of its grid, the missed ones skipped.
    schedule.finished("scan", 3.4)
    assert not schedule.running("scan")
    assert schedule.next_due() == 4.0


def test_a_run_ending_before_its_next_point_keeps_the_grid() -> None:
    schedule = Schedule()
    schedule.add("beat", 2.0, now=0.0)
    assert schedule.take_due(2.0 + SLACK / 2) == ["beat"]
    schedule.finished("beat", 3.9)
    assert schedule.next_due() == 4.0


def test_a_poke_makes_a_duty_due_at_once_or_right_after_its_run() -> None:
    schedule = Schedule()
    schedule.add("scan", 1.0, now=0.0)
    schedule.poke("scan", 0.3)
    assert schedule.take_due(0.3) == ["scan"]
    schedule.poke("scan", 0.35)  # poked while running
    assert schedule.next_due() is None
    schedule.finished("scan", 0.4)
    assert schedule.take_due(0.4) == ["scan"]
    schedule.finished("scan", 0.45)
    assert schedule.next_due() == 1.0
    schedule.poke("missing", 0.5)  # not scheduled: nothing


def test_a_removed_duty_is_never_due_and_may_be_added_again() -> None:
    schedule = Schedule()
    schedule.add("tick", 1.0, now=0.0)
    schedule.remove("tick")
    assert "tick" not in schedule and len(schedule) == 0
    assert schedule.next_due() is None
    schedule.finished("tick", 2.0)  # a run that ends after its removal: ignored
    schedule.add("tick", 1.0, now=5.0)
    assert schedule.take_due(6.0) == ["tick"]


def test_bad_duties_are_refused() -> None:
    schedule = Schedule()
    schedule.add("a", 1.0, now=0.0)
    with pytest.raises(ValueError, match="already"):
        schedule.add("a", 1.0, now=0.0)
    for period in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="period"):
            schedule.add("b", period, now=0.0)


def test_a_run_taken_early_and_ended_before_its_due_time_is_not_run_twice() -> None:
    schedule = Schedule()
    schedule.add("check", 0.5, now=0.0)
    assert schedule.take_due(0.5 - SLACK / 2) == ["check"]
    schedule.finished("check", 0.5 - SLACK / 4)
    assert schedule.next_due() == 1.0

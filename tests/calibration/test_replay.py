"""Replay (pure): the rules, the 7-day window and its trimming, spread and rank comparison."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rating_plugin import fibs, table42
from rating_plugin.analysis.gamelog import GameRecord, PodiumEntry, PodiumRecord
from rating_plugin.analysis.replay import PlayerState, Replayer, Rules, compare, mismatch, spread
from rating_plugin.analysis.synth import SynthConfig, generate
from rating_plugin.errors import InvalidInputError
from rating_plugin.rounding import round_half_away
from rating_plugin.table42 import CubeRule

DAY = 86400.0
T0 = 1_700_000_000.0


def game(seq: int, winner: str, loser: str, at: float, cube: int = 1) -> GameRecord:
    return GameRecord("table42", seq, f"g{seq}", "normal", at, cube, None, winner, loser, 0, 0)


@pytest.mark.parametrize(
    ("version", "divisor", "heavy_games", "cube_rule"),
    [
        ("1.3.1", 1200, 50, CubeRule.COEFFICIENT),
        ("1.2.0", 800, None, CubeRule.COEFFICIENT),
        ("1.0.5", 400, None, CubeRule.COEFFICIENT),
        ("pre-1.0.5", 400, None, CubeRule.MULTIPLY),
    ],
)
def test_presets(version: str, divisor: int, heavy_games: int | None,
                 cube_rule: CubeRule) -> None:
    rules = Rules.from_version(version)
    assert (rules.divisor, rules.heavy_games, rules.cube_rule) == (divisor, heavy_games,
                                                                   cube_rule)
    assert Rules.from_version(version, divisor=1000).divisor == 1000


@pytest.mark.parametrize(
    ("field", "value"),
    [("divisor", 0), ("divisor", math.inf), ("k", 0), ("heavy_k", 1.5), ("heavy_games", 0),
     ("window_seconds", 0), ("late_grace", -1), ("fibs_scale", -2)],
)
def test_bad_rules_name_the_field(field: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match=rf"^{field}: "):
        Rules(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cube", "change"),
    [(1, 16), (2, 19), (4, 21), (8, 24), (16, 27), (32, 29), (64, 32)],  # docs/rating-engine.md
)
def test_a_first_game_scores_as_the_spec_says(cube: int, change: int) -> None:
    done = Replayer().apply(game(1, "a", "b", T0, cube))
    assert done.after == (1500 + change, 1500 - change)
    assert done.k == (32, 32)


def test_the_heavy_week_window_counts_games_in_t_minus_7_days_to_t() -> None:
    replayer = Replayer()
    for i in range(50):  # 50 games for "a", one per minute, against fresh opponents
        replayer.apply(game(i + 1, "a", f"o{i}", T0 + 60 * i))
    # Exactly 7 days after the first game: all 50 still count (start is inclusive): K 16.
    done = replayer.apply(game(51, "a", "x", T0 + 7 * DAY))
    assert done.recent == (50, 0) and done.k == (16, 32)
    # One millisecond later the first game has left the window: 50 (the game above counts).
    done = replayer.apply(game(52, "a", "y", T0 + 7 * DAY + 0.001))
    assert done.recent == (50, 0)
    # A game finishing at the same millisecond as game 52 does not count game 52.
    same = replayer.apply(game(53, "b", "a", T0 + 7 * DAY + 0.001))
    assert same.recent == (0, 50)


def test_a_settlement_later_than_the_grace_sees_the_trimmed_window() -> None:
    grace = 3600.0
    trimmed = Replayer(Rules(late_grace=grace))
    exact = Replayer(Rules(late_grace=30 * DAY))
    games = [game(i + 1, "a", f"o{i}", T0 + 60 * i) for i in range(60)]
    games.append(game(61, "a", "z", T0 + 8 * DAY))  # newest: trims what is older than 1 day
    games.append(game(62, "a", "w", T0 + 3600 * 2))  # 2 hours after the first: 60 - 1 before
    for record in games:
        a, b = trimmed.apply(record), exact.apply(record)
    assert b.recent == (60, 0) and b.k == (16, 32)
    assert a.recent == (0, 0) and a.k == (32, 32)  # the store kept only 7 days + 1 hour


def test_podium_prizes_add_to_the_rating_and_can_be_switched_off() -> None:
    award = PodiumRecord(2, "t", T0, (PodiumEntry("a", 50), PodiumEntry("c", 25)))
    on, off = Replayer(), Replayer(Rules(podium=False))
    for replayer in (on, off):
        replayer.apply(game(1, "a", "b", T0))
        replayer.apply(award)
    assert (on.table42["a"].rating, on.table42["c"].rating) == (1516 + 50, 1525)
    assert (off.table42["a"].rating, off.table42["c"].rating) == (1516, 1500)
    assert on.table42["c"].games == 0


def test_fibs_replay_matches_the_spec_example() -> None:
    match = GameRecord("fibs", 1, "m1", "normal", T0, 1, 9, "a", "b", 1500.0, 1500.0)
    replayer = Replayer()
    done = replayer.apply(match)
    assert done.after == (1530.0, 1470.0)  # equal players, match to 9: 6, x5 for newcomers
    assert done.experience == (0, 0)
    for name in ("a", "b"):  # established players (experience 400): multiplier 1
        replayer.fibs[name].experience = 400
        replayer.fibs[name].rating = 1500.0
    done = replayer.apply(GameRecord("fibs", 2, "m2", "normal", T0, 1, 9, "a", "b", 0, 0))
    assert done.after == (1506.0, 1494.0)  # FIBS examples: equal players, match to 9: +6


def test_mismatch_names_the_first_number_not_reproduced() -> None:
    record = GameRecord("table42", 1, "g1", "normal", T0, 1, None, "a", "b", 1500, 1500,
                        winner_after=1516, loser_after=1485, winner_k=32, loser_k=32)
    assert mismatch(record, Replayer().apply(record)) == (
        "seq 1 (table42): loser b after: logged 1485, replayed 1484"
    )


def test_a_synthetic_log_replays_to_itself_and_other_rules_change_the_board() -> None:
    log = list(generate(SynthConfig(games=3000, players=50, podium_every=300, seed=9)))
    assert log == list(generate(SynthConfig(games=3000, players=50, podium_every=300, seed=9)))
    same, other = Replayer(), Replayer(Rules.from_version("1.0.5"))
    assert all(mismatch(r, same.apply(r)) is None for r in log)
    other.run(log)
    identical = compare(same, Replayer().run(log))
    assert (identical.changed_rank, identical.rank_correlation) == (0, 1.0)
    result = compare(same, other, top=5)
    assert result.players == 50 and result.active == 50
    assert result.changed_rank > 0 and 0 < result.rank_correlation < 1
    # Ratings settle at skill x (formula divisor / true divisor): 400 packs them closer.
    assert result.what_if.sd < result.baseline.sd
    assert len(result.top) == 5 and result.top[0].rank == 1
    assert all(m.moved > 0 for m in result.risers) and all(m.moved < 0 for m in result.fallers)


@pytest.mark.parametrize(
    ("ratings", "half_within", "iqr", "sd"),
    [
        ([1500, 1500], 0.0, 0.0, 0.0),
        ([1440, 1480, 1500, 1520, 1560], 20.0, 40.0, math.sqrt((60**2 * 2 + 20**2 * 2) / 5)),
        ([1000, 1500, 1510, 1520, 2000], 10.0, 20.0, None),
    ],
)
def test_spread(ratings: list[float], half_within: float, iqr: float, sd: float | None) -> None:
    result = spread(ratings)
    assert (result.half_within, result.iqr) == (half_within, iqr)
    if sd is not None:
        assert result.sd == pytest.approx(sd)
    assert spread([]).players == 0


class NaiveWindow:
    """The store's window as settle_table42.lua handles it: a set of scores, ZCOUNT before,
    ZADD then ZREMRANGEBYSCORE below (newest - retention) after."""

    def __init__(self) -> None:
        self.scores: list[int] = []
        self.newest: int | None = None

    def count(self, start: int, finish: int) -> int:
        return sum(1 for score in self.scores if start <= score < finish)

    def record(self, finish: int, retention: int) -> None:
        self.scores.append(finish)
        if self.newest is not None and self.newest > finish:
            cutoff = self.newest - retention
        else:
            self.newest = finish
            cutoff = finish - retention
        self.scores = [score for score in self.scores if score >= cutoff]


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(-3 * 86400, 2 * 86400)),
        min_size=1, max_size=300,
    ),
    grace=st.sampled_from([0.0, 600.0, 86400.0]),
)
def test_the_replayed_windows_are_the_stores_windows(
    steps: list[tuple[int, int, int]], grace: float
) -> None:
    """Random players, times drifting forward with late (earlier) finishes mixed in: every
    window count the replay takes equals the store's rule applied naively."""
    replayer = Replayer(Rules(late_grace=grace, heavy_games=3))
    naive: dict[str, NaiveWindow] = {}
    retention = 7 * 86400 * 1000 + round(grace * 1000)
    clock = T0
    for seq, (a, b, jump) in enumerate(steps, 1):
        if a == b:
            continue
        clock += max(jump, 0) / 10
        at = clock + min(jump, 0)  # a negative jump is a late settlement
        winner, loser = f"p{a}", f"p{b}"
        done = replayer.apply(game(seq, winner, loser, at))
        finish = round_half_away(at * 1000)
        windows = [naive.setdefault(name, NaiveWindow()) for name in (winner, loser)]
        expected = tuple(w.count(finish - 7 * 86400 * 1000, finish) for w in windows)
        assert done.recent == expected
        for window in windows:
            window.record(finish, retention)


_RATINGS = (1500.0, 1200.0, 1850.0, 1500.0 + 1e-9, 3000.0, -400.0)


@pytest.mark.parametrize("version", ["1.3.1", "1.2.0", "1.0.5", "pre-1.0.5"])
def test_replay_scores_as_table42_change(version: str) -> None:
    """The replay's inlined Table42 arithmetic gives table42.change's numbers, bit for bit."""
    rules = Rules.from_version(version)
    for w in _RATINGS:
        for lo in _RATINGS:
            for cube in table42.CUBE_VALUES:
                replayer = Replayer(rules)
                replayer.table42["a"] = PlayerState(w)
                replayer.table42["b"] = PlayerState(lo)
                done = replayer.apply(game(1, "a", "b", T0, cube))
                expected = table42.change(w, lo, cube=cube, version=version)
                assert done.after == (w + expected.winner, lo + expected.loser)


def test_replay_scores_as_fibs_change() -> None:
    """The replay's inlined FIBS arithmetic gives fibs.change's numbers, bit for bit."""
    for w in _RATINGS:
        for lo in _RATINGS:
            for length in (1, 3, 7, 25):
                for w_exp, l_exp in ((0, 0), (150, 399), (400, 9), (1000, 250)):
                    replayer = Replayer()
                    replayer.fibs["a"] = PlayerState(w)
                    replayer.fibs["b"] = PlayerState(lo)
                    replayer.fibs["a"].experience = w_exp
                    replayer.fibs["b"].experience = l_exp
                    record = GameRecord(
                        "fibs", 1, "m1", "normal", T0, 1, length, "a", "b", w, lo
                    )
                    done = replayer.apply(record)
                    expected = fibs.change(
                        w, lo, match_length=length, winner_experience=w_exp,
                        loser_experience=l_exp,
                    )
                    assert done.after == (w + expected.winner, lo + expected.loser)

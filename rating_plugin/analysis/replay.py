"""Replay a settled-games log through the rating formulas, under any rules: what-if analysis.

Pure: a :class:`Replayer` takes log records (:mod:`rating_plugin.logformat`) one at a time,
in the ladder's applied order, and keeps every player's state in memory (rating, counts, FIBS
experience, the Table42 7-day window). Memory grows with the number of players and the games
inside one window, never with the length of the log.

Under the current rules (:meth:`Rules.current`, the store's defaults) a replay reproduces the
rating store bit for bit, because it repeats the settle scripts' steps in their order
(``rating_plugin/lua/settle_table42.lua``, ``settle_fibs.lua``, ``award_podium.lua``):

1. Table42: each player's Competitive games finished in [T - 7 days, T) are counted, T being
   the finish time in integer milliseconds rounded half away from zero; from 50 the player's
   K is 16. Both counts are taken before either window changes.
2. The change is ``table42.change``: ``E_w = 1 / (1 + 10 ** ((l - w) / D))``,
   ``round_half_away(K_w * (1 - E_w) * c)``, ``round_half_away(K_l * (0 - (1 - E_w)) * c)``.
3. The game joins both windows, then each window drops entries older than
   ``newest - (7 days + late_grace)``, where ``newest`` is the player's newest finish time
   (this game's when it is the newest): the store's trimming rule, which decides what a late
   settlement still sees.
4. FIBS: ``fibs.change`` with each player's experience before the match, then experience
   grows by the match length.
5. Podium awards add their prizes to the Table42 ratings (no game, no window).

A replay with other :class:`Rules` (divisor, K, heavy-week threshold, cube rule, window,
FIBS scale) shows what those rules would have made of the same games; :func:`compare` then
says how the two leaderboards differ.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from rating_plugin import fibs, table42
from rating_plugin.errors import InvalidInputError
from rating_plugin.logformat import GameRecord, LogRecord, PodiumRecord
from rating_plugin.rounding import round_half_away
from rating_plugin.table42 import CubeRule

__all__ = [
    "Comparison",
    "Mover",
    "PlayerState",
    "Replayed",
    "Replayer",
    "Rules",
    "Spread",
    "compare",
    "mismatch",
    "spread",
]

DEFAULT_LATE_GRACE: Final = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Rules:
    """The parameters of a replay. The defaults are the live store's (Table42 1.3.1, FIBS).

    ``divisor``: Table42's D; ``k``/``heavy_k``: K below / from ``heavy_games`` games in the
    window (``heavy_games=None``: no heavy-week rule, K is always ``k``); ``cube_rule``:
    coefficient 1 + log2(cube)/6 or the cube itself; ``window_seconds``: the heavy-week
    window; ``late_grace``: the store's ``late_grace`` (what its windows keep beyond the
    window); ``podium``: whether podium prizes count; FIBS: ``fibs_scale`` (2000 in
    ``10 ** (-(A - B) * sqrt(n) / scale)``), ``fibs_stake`` (4) and
    ``fibs_max_multiplier`` (5, the new-player multiplier at experience 0).
    """

    divisor: float = table42.DIVISOR
    k: int = table42.DEFAULT_K
    heavy_k: int = table42.HEAVY_WEEK_K
    heavy_games: int | None = table42.HEAVY_WEEK_GAMES
    cube_rule: CubeRule = CubeRule.COEFFICIENT
    window_seconds: int = table42.WINDOW_SECONDS
    late_grace: float = DEFAULT_LATE_GRACE
    podium: bool = True
    start_rating: int = table42.START_RATING
    fibs_scale: float = 2000.0
    fibs_stake: float = 4.0
    fibs_max_multiplier: float = fibs.MAX_MULTIPLIER

    def __post_init__(self) -> None:
        for name in ("divisor", "fibs_scale", "fibs_stake"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InvalidInputError(name, f"must be a positive number, got {value!r}")
        for name in ("k", "heavy_k"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise InvalidInputError(name, f"must be a whole number above 0, got {value!r}")
        if self.heavy_games is not None and (
            type(self.heavy_games) is not int or self.heavy_games < 1
        ):
            raise InvalidInputError("heavy_games", f"must be at least 1, got {self.heavy_games!r}")
        if type(self.window_seconds) is not int or self.window_seconds < 1:
            raise InvalidInputError(
                "window_seconds", f"must be a whole number above 0, got {self.window_seconds!r}"
            )
        if not 0 <= self.late_grace <= 30 * 24 * 3600:
            raise InvalidInputError("late_grace", "must be between 0 and 30 days in seconds")
        if not 1 <= self.fibs_max_multiplier <= 100:
            raise InvalidInputError("fibs_max_multiplier", "must be between 1 and 100")

    @classmethod
    def current(cls, *, late_grace: float = DEFAULT_LATE_GRACE) -> Rules:
        """The live store's rules (Table42 1.3.1), with the store's ``late_grace``."""
        return cls(late_grace=late_grace)

    @classmethod
    def from_version(cls, version: str, **overrides: Any) -> Rules:
        """The rules of a Table42 preset (``"1.3.1"``, ``"1.2.0"``, ``"1.0.5"``,
        ``"pre-1.0.5"``), with keyword overrides (``divisor=800``, ``heavy_games=None``, ...)."""
        preset = table42.get_version(version)
        rules = cls(
            divisor=preset.divisor,
            cube_rule=preset.cube_rule,
            heavy_games=table42.HEAVY_WEEK_GAMES if preset.has_heavy_week_k else None,
        )
        return replace(rules, **overrides)

    def describe(self) -> str:
        """One line: the Table42 part of the rules."""
        heavy = (
            f"K {self.k}, {self.heavy_k} from {self.heavy_games} games in "
            f"{self.window_seconds / 86400:g} days"
            if self.heavy_games is not None
            else f"K {self.k}"
        )
        cube = "cube coefficient" if self.cube_rule is CubeRule.COEFFICIENT else "cube multiplies"
        podium = "" if self.podium else ", podium prizes ignored"
        return f"divisor {self.divisor:g}, {heavy}, {cube}{podium}"


class PlayerState:
    """One player's replayed state on one ladder (mutable; owned by the :class:`Replayer`).

    ``window[head:]`` holds the finish times (integer ms) the store's window would hold,
    sorted (a compact ``array('q')``; entries before ``head`` are trimmed ones not yet
    compacted away);
    ``newest`` is the newest of them ever recorded (None before the first game);
    ``last_at`` the latest finish (or award) time seen, Unix seconds."""

    __slots__ = (
        "experience", "games", "head", "last_at", "losses", "newest", "rating", "window", "wins"
    )

    def __init__(self, rating: float) -> None:
        self.rating: float = rating
        self.games = 0
        self.wins = 0
        self.losses = 0
        self.experience = 0
        self.window = array("q")  # 8 bytes an entry (a list of ints costs 36)
        self.head = 0  # window[:head] is already trimmed
        self.newest: int | None = None
        self.last_at = -math.inf


@dataclass(frozen=True, slots=True)
class Replayed:
    """What the replay made of one record: ratings before and after for each side (winner
    then loser; podium: each place), and Table42's K and window counts or FIBS experience
    before the match (None where they do not apply)."""

    seq: int
    before: tuple[float, ...]
    after: tuple[float, ...]
    k: tuple[int, int] | None = None
    recent: tuple[int, int] | None = None
    experience: tuple[int, int] | None = None


def _ms(seconds: float) -> int:
    return round_half_away(seconds * 1000)


class Replayer:
    """Replays records in applied order under :class:`Rules`; ``table42`` and ``fibs`` map
    player ids to their :class:`PlayerState`."""

    def __init__(self, rules: Rules | None = None) -> None:
        self.rules = rules if rules is not None else Rules()
        self.table42: dict[str, PlayerState] = {}
        self.fibs: dict[str, PlayerState] = {}
        self.records = 0
        self.last_at = -math.inf
        rules = self.rules
        self._window_ms = rules.window_seconds * 1000
        self._retention_ms = self._window_ms + _ms(rules.late_grace)
        self._heavy = rules.heavy_games if rules.heavy_games is not None else math.inf
        if rules.cube_rule is CubeRule.COEFFICIENT:
            self._factors = {cube: table42.cube_coefficient(cube) for cube in table42.CUBE_VALUES}
        else:
            self._factors = {cube: float(cube) for cube in table42.CUBE_VALUES}

    def run(self, records: Iterable[LogRecord]) -> Replayer:
        """Apply every record; returns self."""
        for record in records:
            self.apply(record)
        return self

    def apply(self, record: LogRecord) -> Replayed:
        """Apply one record (the next in its ladder's applied order)."""
        self.records += 1
        if isinstance(record, PodiumRecord):
            return self._podium(record)
        if record.ladder == "fibs":
            return self._fibs(record)
        return self._table42(record)

    def _player(self, players: dict[str, PlayerState], name: str, start: float) -> PlayerState:
        state = players.get(name)
        if state is None:
            state = players[name] = PlayerState(start)
        return state

    def _recent(self, state: PlayerState, start: int, finish: int) -> int:
        window, head = state.window, state.head
        if len(window) == head:
            return 0
        # Games mostly come in finish order: then the whole window is before ``finish``.
        end = len(window) if window[-1] < finish else bisect_left(window, finish, head)
        return end - bisect_left(window, start, head, end)

    def _record(self, state: PlayerState, finish: int) -> None:
        window = state.window
        if len(window) == state.head or window[-1] <= finish:
            window.append(finish)
        else:
            insort(window, finish, state.head)
        newest = state.newest
        if newest is not None and newest > finish:
            cutoff = newest - self._retention_ms
        else:
            state.newest = finish
            cutoff = finish - self._retention_ms
        head = state.head
        if window[head] < cutoff:
            # Trimmed entries are skipped by moving the head; the array is compacted once
            # the dead part is as large as the live one (amortised O(1) per game).
            head = state.head = bisect_left(window, cutoff, head)
            if head >= 64 and head * 2 >= len(window):
                del window[:head]
                state.head = 0

    # _table42 and _fibs repeat the arithmetic of table42.change and fibs.change, operation
    # for operation, instead of calling them: for speed. Those functions validate every
    # argument and build a result dataclass, about 2 us a call against 0.4 us inline, and a
    # replay of 1M games runs two rating engines (about +4 s of CPU on ~30 s, where the
    # target is 60 s wall). fibs.change also fixes the scale (2000), stake (4) and maximum
    # multiplier (5) that Rules lets a what-if change. tests/rating_store/
    # test_formula_forms_agree.py pins both copies to the originals and to the settle
    # scripts (rounding halves included), and tests/calibration/test_replay.py
    # (test_replay_scores_as_table42_change, test_replay_scores_as_fibs_change) to the
    # originals over random inputs.
    def _table42(self, game: GameRecord) -> Replayed:
        rules = self.rules
        start = rules.start_rating
        w = self._player(self.table42, game.winner, start)
        l_ = self._player(self.table42, game.loser, start)
        finish = _ms(game.finished_at)
        window_start = finish - self._window_ms
        w_recent = self._recent(w, window_start, finish)
        l_recent = self._recent(l_, window_start, finish)
        w_k = rules.heavy_k if w_recent >= self._heavy else rules.k
        l_k = rules.heavy_k if l_recent >= self._heavy else rules.k
        coefficient = self._factors[game.cube]
        w_before, l_before = w.rating, l_.rating
        try:
            w_expected = 1.0 / (1.0 + 10.0 ** ((l_before - w_before) / rules.divisor))
        except OverflowError:
            w_expected = 0.0
        l_expected = 1 - w_expected
        w_change = round_half_away(w_k * (1 - w_expected) * coefficient)
        l_change = round_half_away(l_k * (0 - l_expected) * coefficient)
        self._record(w, finish)
        self._record(l_, finish)
        w.rating = w_before + w_change
        l_.rating = l_before + l_change
        w.games += 1
        w.wins += 1
        l_.games += 1
        l_.losses += 1
        at = game.finished_at
        w.last_at = max(w.last_at, at)
        l_.last_at = max(l_.last_at, at)
        self.last_at = max(self.last_at, at)
        return Replayed(
            game.seq, (w_before, l_before), (w.rating, l_.rating), (w_k, l_k),
            (w_recent, l_recent),
        )

    def _fibs(self, match: GameRecord) -> Replayed:
        rules = self.rules
        start = fibs.START_RATING
        w = self._player(self.fibs, match.winner, start)
        l_ = self._player(self.fibs, match.loser, start)
        length = match.match_length or 1
        root = math.sqrt(length)
        w_before, l_before = w.rating, l_.rating
        w_exp, l_exp = w.experience, l_.experience
        try:
            probability = 1.0 / (1.0 + 10.0 ** (-(w_before - l_before) * root / rules.fibs_scale))
        except OverflowError:
            probability = 0.0
        points = rules.fibs_stake * root * (1 - probability)
        w_multiplier = max(1.0, rules.fibs_max_multiplier - w_exp / 100)
        l_multiplier = max(1.0, rules.fibs_max_multiplier - l_exp / 100)
        w.rating = w_before + points * w_multiplier
        l_.rating = l_before + (0.0 - points * l_multiplier)
        w.experience += length
        l_.experience += length
        w.games += 1
        w.wins += 1
        l_.games += 1
        l_.losses += 1
        at = match.finished_at
        w.last_at = max(w.last_at, at)
        l_.last_at = max(l_.last_at, at)
        self.last_at = max(self.last_at, at)
        return Replayed(
            match.seq, (w_before, l_before), (w.rating, l_.rating), experience=(w_exp, l_exp)
        )

    def _podium(self, award: PodiumRecord) -> Replayed:
        before: list[float] = []
        after: list[float] = []
        for place in award.places:
            state = self._player(self.table42, place.player, self.rules.start_rating)
            before.append(state.rating)
            if self.rules.podium:
                state.rating = state.rating + place.prize
            state.last_at = max(state.last_at, award.awarded_at)
            after.append(state.rating)
        return Replayed(award.seq, tuple(before), tuple(after))


def mismatch(record: LogRecord, replayed: Replayed) -> str | None:
    """The first logged number the replay did not reproduce, described in one line, or None
    when every number the record carries (ratings, K, window counts, experience) matches."""
    checks: list[tuple[str, object, object]] = []
    if isinstance(record, PodiumRecord):
        for i, place in enumerate(record.places):
            checks.append((f"{place.player} before", place.before, replayed.before[i]))
            checks.append((f"{place.player} after", place.after, replayed.after[i]))
    else:
        w, lo = record.winner, record.loser
        checks += [
            (f"winner {w} before", record.winner_before, replayed.before[0]),
            (f"loser {lo} before", record.loser_before, replayed.before[1]),
            (f"winner {w} after", record.winner_after, replayed.after[0]),
            (f"loser {lo} after", record.loser_after, replayed.after[1]),
        ]
        if replayed.k is not None and replayed.recent is not None:
            checks += [
                (f"winner {w} K", record.winner_k, replayed.k[0]),
                (f"loser {lo} K", record.loser_k, replayed.k[1]),
                (f"winner {w} recent games", record.winner_recent, replayed.recent[0]),
                (f"loser {lo} recent games", record.loser_recent, replayed.recent[1]),
            ]
        if replayed.experience is not None:
            checks += [
                (f"winner {w} experience", record.winner_experience, replayed.experience[0]),
                (f"loser {lo} experience", record.loser_experience, replayed.experience[1]),
            ]
    for name, logged, computed in checks:
        if logged is not None and logged != computed:
            return f"seq {record.seq} ({record.ladder}): {name}: logged {logged!r}, replayed " \
                   f"{computed!r}"
    return None


# -- leaderboards and spread --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spread:
    """How spread out the active players' ratings are.

    ``half_within``: half of the active players are within this many points of the median
    (the median absolute deviation); ``iqr``: the middle half spans this many points."""

    players: int
    mean: float
    sd: float
    median: float
    half_within: float
    iqr: float
    low: float
    high: float


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted ``values`` (q in 0..1)."""
    position = q * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def spread(ratings: Iterable[float]) -> Spread:
    """The :class:`Spread` of some ratings (all zeros when there are none)."""
    values = sorted(ratings)
    if not values:
        return Spread(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    median = _quantile(values, 0.5)
    deviations = sorted(abs(v - median) for v in values)
    return Spread(
        n, mean, sd, median, _quantile(deviations, 0.5),
        _quantile(values, 0.75) - _quantile(values, 0.25), values[0], values[-1],
    )


def standings(players: dict[str, PlayerState], *, ladder: str) -> list[tuple[str, float, int]]:
    """The leaderboard the store would show: (player, rating, competition rank), best first;
    on FIBS only players with experience >= 10. Equal ratings share a rank and are listed by
    player id descending, as Redis lists them."""
    rows = [
        (name, state.rating)
        for name, state in players.items()
        if ladder != "fibs" or state.experience >= fibs.NEW_PLAYER_EXPERIENCE
    ]
    rows.sort(key=lambda row: (row[1], row[0]), reverse=True)
    ranked: list[tuple[str, float, int]] = []
    previous: float | None = None
    rank = 0
    for position, (name, rating) in enumerate(rows, 1):
        if rating != previous:
            rank = position
            previous = rating
        ranked.append((name, rating, rank))
    return ranked


@dataclass(frozen=True, slots=True)
class Mover:
    """A player's place on both boards: ``moved`` > 0 means up under the what-if rules."""

    player: str
    rating: float
    rank: int
    what_if_rating: float
    what_if_rank: int

    @property
    def moved(self) -> int:
        return self.rank - self.what_if_rank


@dataclass(frozen=True, slots=True)
class Comparison:
    """How the what-if leaderboard differs from the baseline one (see :func:`compare`)."""

    ladder: str
    players: int
    active: int
    changed_rank: int
    mean_rank_change: float
    rank_correlation: float
    baseline: Spread
    what_if: Spread
    top: tuple[Mover, ...]
    risers: tuple[Mover, ...]
    fallers: tuple[Mover, ...]
    movers: tuple[Mover, ...] = field(default=(), repr=False)


def compare(
    baseline: Replayer,
    what_if: Replayer,
    *,
    ladder: str = "table42",
    active_days: float = 30.0,
    top: int = 10,
) -> Comparison:
    """Compare two replays of the same log. Active players: those who played (or were awarded)
    within ``active_days`` of the log's last game. ``changed_rank`` counts board players whose
    rank differs, ``rank_correlation`` is Spearman's (1 = same order); ``top`` rows of the
    baseline board and the ``top`` biggest risers and fallers come back as :class:`Mover`."""
    base_players = baseline.table42 if ladder == "table42" else baseline.fibs
    new_players = what_if.table42 if ladder == "table42" else what_if.fibs
    base_board = standings(base_players, ladder=ladder)
    new_board = {
        name: (rating, rank) for name, rating, rank in standings(new_players, ladder=ladder)
    }
    movers = [
        Mover(name, rating, rank, *new_board[name])
        for name, rating, rank in base_board
        if name in new_board
    ]
    cutoff = max(baseline.last_at, what_if.last_at) - active_days * 86400
    active = [name for name, state in base_players.items() if state.last_at >= cutoff]
    on_board = {mover.player for mover in movers}
    active_on_board = [name for name in active if name in on_board]
    n = len(movers)
    if n > 1:
        d2 = math.fsum(float(m.rank - m.what_if_rank) ** 2 for m in movers)
        correlation = 1 - 6 * d2 / (n * (n * n - 1))
    else:
        correlation = 1.0
    by_move = sorted(movers, key=lambda m: (-m.moved, m.rank))
    return Comparison(
        ladder=ladder,
        players=n,
        active=len(active_on_board),
        changed_rank=sum(1 for m in movers if m.moved != 0),
        mean_rank_change=math.fsum(abs(m.moved) for m in movers) / n if n else 0.0,
        rank_correlation=correlation,
        baseline=spread(base_players[name].rating for name in active_on_board),
        what_if=spread(new_players[name].rating for name in active_on_board),
        top=tuple(movers[:top]),
        risers=tuple(m for m in by_move[:top] if m.moved > 0),
        fallers=tuple(m for m in reversed(by_move[-top:]) if m.moved < 0),
        movers=tuple(movers),
    )

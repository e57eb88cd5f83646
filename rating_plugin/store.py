"""The rating store: ratings, 7-day windows, settlements, leaderboards and history in Redis.

This is the only module of the package that talks to Redis. Each write is one Lua script
(``rating_plugin/lua/*.lua``, KEYS/ARGV/return documented in each file's header) run with one
``EVALSHA``: reading the ratings, scoring the game, writing the results and remembering the
game id happen in one atomic step and one round trip. Because the ratings are read inside that
step, the scripts also do the rating arithmetic; Python passes in everything that does not
depend on stored state (cube coefficient, K values and threshold, window bounds, sqrt of the
match length) and the scripts repeat :mod:`rating_plugin.table42` and :mod:`rating_plugin.fibs`
operation for operation, so the numbers are bit-for-bit those of the pure functions.

Keys are built by :class:`rating_plugin.keys.KeySpace` (layout and hash tags there). Every
method returns frozen values, never raw replies. Errors (all ``ValueError``, see
:mod:`rating_plugin.errors`): :class:`InvalidInputError` naming the field,
:class:`SamePlayerError`, :class:`UnknownLadderError`, :class:`AlreadySettledConflict`.
Redis errors (connection lost, ...) pass through unchanged; a settlement that failed that way
may or may not have been applied, and calling :meth:`RatingStore.settle` again with the same
game id is always safe.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, cast

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import NoScriptError

from rating_plugin import fibs, logformat, table42
from rating_plugin.errors import (
    AlreadySettledConflict,
    InvalidInputError,
    LogIncompleteError,
    LogRecordMissingError,
    SamePlayerError,
    UnknownLadderError,
)
from rating_plugin.keys import KeySpace
from rating_plugin.rounding import round_half_away

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "DEFAULT_LATE_GRACE_SECONDS",
    "MAX_GAME_ID_LENGTH",
    "MAX_MATCH_LENGTH",
    "MAX_PAGE",
    "MAX_PLAYER_ID_LENGTH",
    "REASONS",
    "BoostedResult",
    "HistoryEntry",
    "Ladder",
    "LeaderboardEntry",
    "LeaderboardPage",
    "LeaderboardPlace",
    "PairReservation",
    "PlayerChange",
    "PlayerProfile",
    "PlayerRating",
    "PodiumAward",
    "PodiumPlace",
    "Queued",
    "RatingStore",
    "Settlement",
    "log_record",
]


class Ladder(StrEnum):
    """A leaderboard of the store. Games are settled on the two rated ladders only."""

    TABLE42 = "table42"  # Competitive single games, integer Table42 Elo
    FIBS = "fibs"  # rated n-point matches, decimal FIBS rating plus experience
    BOOSTED = "boosted"  # Boosted game points; never Elo (add_boosted_points)


RATED_LADDERS: Final = (Ladder.TABLE42, Ladder.FIBS)
ALL_LADDERS: Final = (Ladder.TABLE42, Ladder.FIBS, Ladder.BOOSTED)
_LADDER_NAMES: Final = {str(ladder): ladder for ladder in ALL_LADDERS}

#: Why a game ended; stored and shown, never used in the numbers ("podium" is reserved).
REASONS: Final = frozenset(
    {"normal", "gammon", "backgammon", "resign", "drop", "timeout", "disconnect", "leave"}
)
MAX_GAME_ID_LENGTH: Final = 128
MAX_PLAYER_ID_LENGTH: Final = 64
MAX_MATCH_LENGTH: Final = 99
#: Most game points one Boosted game can earn: a backgammon (3) at the maximum cube.
MAX_BOOSTED_POINTS: Final = 3 * table42.MAX_CUBE
MAX_PODIUM_PRIZE: Final = 1000
MAX_PAGE: Final = 100
MAX_OFFSET: Final = 1_000_000
#: Latest accepted time (Unix seconds, year 5138): keeps every millisecond count exact.
MAX_TIME: Final = 1e11
DEFAULT_HISTORY_LIMIT: Final = 200
MAX_HISTORY_LIMIT: Final = 10_000
#: How late (in finish time) a settlement may come after the player's newest game and still
#: see an exact 7-day count: windows keep 7 days + this before their newest game.
DEFAULT_LATE_GRACE_SECONDS: Final = 24 * 3600.0
MAX_LATE_GRACE_SECONDS: Final = 30 * 24 * 3600.0
WINDOW_MS: Final = table42.WINDOW_SECONDS * 1000


def _lua(name: str) -> str:
    return resources.files("rating_plugin").joinpath("lua", name).read_text(encoding="utf-8")


_SETTLE_TABLE42: Final = _lua("settle_table42.lua")
_SETTLE_FIBS: Final = _lua("settle_fibs.lua")
_AWARD_PODIUM: Final = _lua("award_podium.lua")
_ADD_BOOSTED: Final = _lua("add_boosted.lua")
_BOARD_PAGE: Final = _lua("board_page.lua")
_BOARD_RANK: Final = _lua("board_rank.lua")
_BOARD_VIEW: Final = _lua("board_view.lua")
_RATED_PROFILE: Final = _lua("rated_profile.lua")
_PAIR_RESERVE: Final = _lua("pair_reserve.lua")

# Values a script needs that depend on no stored state: computed here once.
_K_NORMAL: Final = table42.k_factor(0)
_K_HEAVY: Final = table42.k_factor(table42.HEAVY_WEEK_GAMES)
_ROOTS: Final = {n: repr(math.sqrt(n)) for n in range(1, MAX_MATCH_LENGTH + 1)}
_COEFFICIENTS: Final = {cube: repr(table42.cube_coefficient(cube)) for cube in table42.CUBE_VALUES}


# ---------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True, slots=True)
class PlayerChange:
    """One player's side of a settlement: what a client is shown.

    ``rating_before``/``rating_after``/``change`` are ints on Table42 and floats on FIBS
    (``rating_after == rating_before + change``). ``expected_score`` is the player's win
    chance before the game (Table42 expected score, FIBS win probability). Table42 only:
    ``k`` (32 or 16), ``cube_coefficient`` and ``recent_games`` (Competitive games in the
    7 days before the game, the game itself not counted); FIBS only: ``multiplier`` (the
    new-player multiplier) and ``experience_before``. Fields of the other ladder are None.
    """

    player: str
    rating_before: float
    rating_after: float
    change: float
    k: int | None
    multiplier: float | None
    expected_score: float
    cube_coefficient: float | None
    recent_games: int | None
    experience_before: int | None


@dataclass(frozen=True, slots=True)
class Settlement:
    """The stored result of one settled game (or FIBS match).

    ``applied`` is True for the call that applied it and False when the game id had already
    been settled (the stored result is returned, nothing changed). ``seq`` is the game's
    place in its ladder's applied order (1, 2, ...; shared with podium awards on Table42):
    replaying a ladder's settlements by ``seq`` reproduces its ratings. ``match_length`` is
    None on Table42; ``finished_at`` is Unix seconds as first given.
    """

    game_id: str
    ladder: Ladder
    reason: str
    finished_at: float
    cube: int
    match_length: int | None
    winner: PlayerChange
    loser: PlayerChange
    applied: bool
    seq: int


@dataclass(frozen=True, slots=True)
class PodiumPlace:
    """One podium place: ``place`` (1 = first), the player, the prize and the Table42 rating
    before and after it (``rating_after == rating_before + prize``)."""

    place: int
    player: str
    prize: int
    rating_before: int
    rating_after: int


@dataclass(frozen=True, slots=True)
class PodiumAward:
    """The stored podium award of one tournament.

    ``applied`` is False when the tournament had already been awarded (the first award is
    returned, nothing changed). ``seq`` is the award's place in the Table42 applied order.
    """

    tournament_id: str
    awarded_at: float
    places: tuple[PodiumPlace, ...]
    applied: bool
    seq: int

    @property
    def changes(self) -> dict[str, int]:
        """Player -> rating points awarded, ready to push to the players."""
        return {place.player: place.prize for place in self.places}


@dataclass(frozen=True, slots=True)
class BoostedResult:
    """The stored result of one Boosted game: ``points`` (result x cube) went to ``winner``,
    whose Boosted total is now ``winner_total``. ``applied`` is False on a repeat."""

    game_id: str
    winner: str
    loser: str
    points: int
    winner_total: int
    finished_at: float
    applied: bool


@dataclass(frozen=True, slots=True)
class PlayerRating:
    """A player's standing on one ladder (a player never seen is at the start rating).

    ``rating`` is an int on Table42, a float on FIBS. ``experience`` (FIBS only, None on
    Table42) is the sum of the player's rated match lengths; ``is_new`` is True on FIBS while
    it is below 10: the rating is then shown as "new" and the player is off the leaderboard.
    """

    player: str
    ladder: Ladder
    rating: float
    games: int
    wins: int
    losses: int
    experience: int | None
    is_new: bool

    @property
    def shown(self) -> str:
        """The rating as players see it: "new", a whole number (Table42) or 2 decimals."""
        if self.is_new:
            return "new"
        if self.ladder is Ladder.FIBS:
            return f"{self.rating:.2f}"
        return str(self.rating)


@dataclass(frozen=True, slots=True)
class LeaderboardEntry:
    """One leaderboard row. ``rank`` is a competition rank (equal scores share it: 1, 2, 2, 4);
    ``rating`` is the Table42 rating (int), FIBS rating (float) or Boosted points (int)."""

    rank: int
    player: str
    rating: float


@dataclass(frozen=True, slots=True)
class LeaderboardPlace:
    """A named player's place on a leaderboard: ``rank`` None when not on it (never played,
    or on FIBS still "new"); ``rating`` the board score, else the player's stored rating (the
    start rating, or 0 Boosted points, when never seen); ``is_new``: FIBS experience < 10."""

    player: str
    rank: int | None
    rating: float
    is_new: bool


@dataclass(frozen=True, slots=True)
class LeaderboardPage:
    """One page of a leaderboard with the board's size (``total`` players on it) and, when
    one was named, a player's own place (``place``)."""

    ladder: Ladder
    offset: int
    limit: int
    total: int
    entries: tuple[LeaderboardEntry, ...]
    place: LeaderboardPlace | None


@dataclass(frozen=True, slots=True)
class PlayerProfile:
    """Everything a profile page shows of one player, read at one moment (``at``).

    ``table42``/``fibs``: the ratings (start rating when never seen); ``*_rank``: competition
    ranks (None when off the board); ``boosted_points``/``boosted_rank``: the Boosted
    leaderboard; ``recent_games``: Competitive games in the 7 days before ``at`` and ``k``
    the Table42 K they give a game finishing now. ``is_known``: the store has seen the player
    (a rating on either ladder or Boosted points).
    """

    player: str
    at: float
    table42: PlayerRating
    fibs: PlayerRating
    table42_rank: int | None
    fibs_rank: int | None
    boosted_points: int
    boosted_rank: int | None
    recent_games: int
    k: int
    is_known: bool


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Queued(Generic[T]):
    """Reads queued on a pipeline: ``count`` replies, turned into a value by ``parse``."""

    count: int
    parse: Callable[[Sequence[Any]], T]


@dataclass(frozen=True, slots=True)
class PairReservation:
    """The pair limit's answer for a game: ``rated`` (counted) or not (the pair played
    ``limit`` rated games in the window already); ``games`` is the pair's count in the window
    (this game included when rated)."""

    rated: bool
    games: int
    limit: int


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One rating change in a player's history, for a rating graph.

    ``ref`` is the game id, or the tournament id for ``reason == "podium"``. ``at`` is the
    finish (or award) time in Unix seconds. ``opponent`` and ``won`` are None for a podium
    award, whose ``place`` (1..3) is set instead.
    """

    seq: int
    ladder: Ladder
    ref: str
    reason: str
    at: float
    opponent: str | None
    won: bool | None
    place: int | None
    rating_before: float
    rating_after: float
    change: float


# ---------------------------------------------------------------------------------------------
# Input checks (each names the field it rejects)


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_id(value: object, field: str, limit: int) -> str:
    if type(value) is not str:
        raise InvalidInputError(field, f"must be a str, got {_describe(value)}")
    if not value:
        raise InvalidInputError(field, "must not be empty")
    if len(value) > limit:
        raise InvalidInputError(field, f"must be at most {limit} characters, got {len(value)}")
    if "{" in value or "}" in value:
        raise InvalidInputError(field, f"must not contain '{{' or '}}', got {_describe(value)}")
    if not value.isprintable():
        raise InvalidInputError(field, f"must not contain control characters, got {value!r:.40}")
    return value


def _check_player(value: object, field: str) -> str:
    return _check_id(value, field, MAX_PLAYER_ID_LENGTH)


def _check_time(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(field, f"must be a number (Unix seconds), got {_describe(value)}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise InvalidInputError(field, f"must be a finite number, got {_describe(value)}")
    if not 0 <= seconds <= MAX_TIME:
        raise InvalidInputError(field, f"must be between 0 and {MAX_TIME:.0f}, got {value!r}")
    return seconds


def _check_int(value: object, field: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise InvalidInputError(field, f"must be a whole number, got {_describe(value)}")
    if not low <= value <= high:
        raise InvalidInputError(field, f"must be between {low} and {high}, got {value}")
    return value


def _check_reason(value: object) -> str:
    if type(value) is str and value in REASONS:
        return value
    raise InvalidInputError("reason", f"must be one of {', '.join(sorted(REASONS))}, got "
                            f"{_describe(value)}")


def _ladder(value: object, allowed: tuple[Ladder, ...]) -> Ladder:
    ladder = _LADDER_NAMES.get(value) if isinstance(value, str) else None
    if ladder is None or ladder not in allowed:
        raise UnknownLadderError(value, tuple(str(name) for name in allowed))
    return ladder


def _check_window(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 1 <= value <= 366 * 86400:
        raise InvalidInputError("window", f"must be 1 to {366 * 86400} seconds, got "
                                f"{_describe(value)}")
    return float(value)


def _ms(seconds: float) -> int:
    """Unix seconds -> the nearest integer millisecond (the windows' score unit)."""
    return round_half_away(seconds * 1000)


# ---------------------------------------------------------------------------------------------
# Reply parsing (records are newline-separated fields, numbers as exact decimal strings)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _fields(raw: bytes | str) -> list[str]:
    """A stored record's fields (the scripts join them with newlines; ids never hold one)."""
    return (raw.decode() if isinstance(raw, bytes) else raw).split("\n")


def _table42_change(f: list[str], at: int, coefficient: float) -> PlayerChange:
    return PlayerChange(
        f[at], int(f[at + 1]), int(f[at + 2]), int(f[at + 3]), int(f[at + 4]), None,
        float(f[at + 5]), coefficient, int(f[at + 6]), None,
    )


def _fibs_change(f: list[str], at: int) -> PlayerChange:
    return PlayerChange(
        f[at], float(f[at + 1]), float(f[at + 2]), float(f[at + 3]), None, float(f[at + 4]),
        float(f[at + 5]), None, None, int(f[at + 6]),
    )


def _settlement(raw: bytes | str, applied: bool) -> Settlement:
    """A settlement record (layout in settle_table42.lua / settle_fibs.lua)."""
    f = _fields(raw)
    if f[0] == "table42/1":
        coefficient = float(f[6])
        ladder, match_length = Ladder.TABLE42, None
        winner = _table42_change(f, 7, coefficient)
        loser = _table42_change(f, 14, coefficient)
    else:
        ladder, match_length = Ladder.FIBS, int(f[6])
        winner = _fibs_change(f, 7)
        loser = _fibs_change(f, 14)
    return Settlement(
        f[2], ladder, f[3], float(f[4]), int(f[5]), match_length, winner, loser, applied, int(f[1])
    )


def _podium(raw: bytes | str, applied: bool) -> PodiumAward:
    """A podium record (layout in award_podium.lua)."""
    f = _fields(raw)
    places = tuple(
        PodiumPlace(
            place=i + 1,
            player=f[5 + 4 * i],
            prize=int(f[6 + 4 * i]),
            rating_before=int(f[7 + 4 * i]),
            rating_after=int(f[8 + 4 * i]),
        )
        for i in range(int(f[4]))
    )
    return PodiumAward(
        tournament_id=f[2], awarded_at=float(f[3]), places=places, applied=applied, seq=int(f[1])
    )


def _boosted(raw: bytes | str, applied: bool) -> BoostedResult:
    """A Boosted record (layout in add_boosted.lua)."""
    f = _fields(raw)
    return BoostedResult(
        game_id=f[1],
        winner=f[2],
        loser=f[3],
        points=int(f[4]),
        finished_at=float(f[5]),
        winner_total=int(float(f[6])),
        applied=applied,
    )


def _history(raw: bytes | str, player: str, ladder: Ladder) -> HistoryEntry:
    """``player``'s entry from a settlement or podium record (history lists hold record keys)."""
    if _fields(raw)[0] == "podium/1":
        award = _podium(raw, False)
        place = next(place for place in award.places if place.player == player)
        return HistoryEntry(
            seq=award.seq,
            ladder=ladder,
            ref=award.tournament_id,
            reason="podium",
            at=award.awarded_at,
            opponent=None,
            won=None,
            place=place.place,
            rating_before=place.rating_before,
            rating_after=place.rating_after,
            change=place.prize,
        )
    settlement = _settlement(raw, False)
    won = settlement.winner.player == player
    side, other = (
        (settlement.winner, settlement.loser) if won else (settlement.loser, settlement.winner)
    )
    return HistoryEntry(
        seq=settlement.seq,
        ladder=ladder,
        ref=settlement.game_id,
        reason=settlement.reason,
        at=settlement.finished_at,
        opponent=other.player,
        won=won,
        place=None,
        rating_before=side.rating_before,
        rating_after=side.rating_after,
        change=side.change,
    )


def log_record(item: Settlement | PodiumAward) -> logformat.LogRecord:
    """A stored settlement or podium award as a game-log record (:mod:`rating_plugin.logformat`)."""
    if isinstance(item, PodiumAward):
        return logformat.PodiumRecord(
            item.seq,
            item.tournament_id,
            item.awarded_at,
            tuple(
                logformat.PodiumEntry(p.player, p.prize, p.rating_before, p.rating_after)
                for p in item.places
            ),
        )
    w, lo = item.winner, item.loser
    return logformat.GameRecord(
        "table42" if item.ladder is Ladder.TABLE42 else "fibs",
        item.seq,
        item.game_id,
        item.reason,
        item.finished_at,
        item.cube,
        item.match_length,
        w.player,
        lo.player,
        w.rating_before,
        lo.rating_before,
        w.rating_after,
        lo.rating_after,
        winner_k=w.k,
        loser_k=lo.k,
        winner_recent=w.recent_games,
        loser_recent=lo.recent_games,
        winner_experience=w.experience_before,
        loser_experience=lo.experience_before,
    )


class _Writer(Protocol):
    def write(self, text: str, /) -> object: ...


def _score(raw: bytes | str, ladder: Ladder) -> float:
    value = float(raw)
    return value if ladder is Ladder.FIBS else int(value)


# ---------------------------------------------------------------------------------------------
# The store


class RatingStore:
    """Ratings of the Table42 and FIBS ladders, Boosted points and podium awards in Redis.

    ``redis`` is a ``redis.asyncio.Redis`` client (``decode_responses`` either way; a cluster
    client works too, every script touches one hash slot). ``prefix`` starts every key (no
    braces, at most 64 characters). ``history_limit`` bounds each player's history per
    ladder (newest kept). ``late_grace`` (seconds) is how much older than a player's newest
    game a settlement may be and still count its 7-day window exactly: windows keep
    7 days + ``late_grace`` before their newest game (see README, "rating-store").
    The scripts are registered once per store; the first call of each loads it into Redis.
    """

    def __init__(
        self,
        redis: aioredis.Redis | aioredis.RedisCluster,
        prefix: str = "",
        *,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        late_grace: float = DEFAULT_LATE_GRACE_SECONDS,
    ) -> None:
        self.redis = redis
        self.keys = KeySpace(prefix)
        self.history_limit = _check_int(history_limit, "history_limit", 1, MAX_HISTORY_LIMIT)
        if isinstance(late_grace, bool) or not isinstance(late_grace, (int, float)):
            raise InvalidInputError("late_grace", f"must be a number, got {_describe(late_grace)}")
        if not 0 <= late_grace <= MAX_LATE_GRACE_SECONDS:
            raise InvalidInputError(
                "late_grace", f"must be between 0 and {MAX_LATE_GRACE_SECONDS:.0f} seconds"
            )
        self.late_grace = float(late_grace)
        self._retention_ms = WINDOW_MS + _ms(self.late_grace)
        # RedisCluster has the same script API; redis-py only types it for Redis.
        client = cast("aioredis.Redis", redis)
        self._settle_table42 = client.register_script(_SETTLE_TABLE42)
        self._settle_fibs = client.register_script(_SETTLE_FIBS)
        self._award_podium = client.register_script(_AWARD_PODIUM)
        self._add_boosted = client.register_script(_ADD_BOOSTED)
        self._board_page = client.register_script(_BOARD_PAGE)
        self._board_rank = client.register_script(_BOARD_RANK)
        self._board_view = client.register_script(_BOARD_VIEW)
        self._rated_profile = client.register_script(_RATED_PROFILE)
        self._pair_reserve = client.register_script(_PAIR_RESERVE)
        self._scripts = (
            self._settle_table42,
            self._settle_fibs,
            self._award_podium,
            self._add_boosted,
            self._board_page,
            self._board_rank,
            self._board_view,
            self._rated_profile,
            self._pair_reserve,
        )

    async def load_scripts(self) -> None:
        """Load every script into Redis now (optional: the first call of a script loads it
        anyway). Useful at start-up, so a burst of first calls does not all meet NOSCRIPT."""
        for script in self._scripts:
            await self.redis.script_load(script.script)

    @property
    def prefix(self) -> str:
        """The prefix every key of this store starts with."""
        return self.keys.prefix

    # -- settling ------------------------------------------------------------------------------

    async def settle(
        self,
        game_id: str,
        *,
        ladder: Ladder | str,
        winner: str,
        loser: str,
        cube: int = 1,
        match_length: int | None = None,
        finished_at: float,
        reason: str = "normal",
    ) -> Settlement:
        """Settle one finished game exactly once, in one atomic step and one round trip.

        ``game_id``: the game's (FIBS: the match's) unique id, 1..128 printable characters
        without braces; ``ladder``: ``"table42"`` (Competitive single games) or ``"fibs"``
        (rated n-point matches); ``winner``/``loser``: player ids (1..64 characters, same
        rules), different; ``cube``: the cube value when the game ended (1, 2, 4 ... 64;
        forfeits at the cube of that moment); ``match_length``: FIBS only, 1..99 (None or 1 on
        Table42); ``finished_at``: Unix seconds (finite, 0..1e11), the time the 7-day window
        is counted back from; ``reason``: one of :data:`REASONS` (stored, never changes the
        numbers).

        Returns the :class:`Settlement` with both players' :class:`PlayerChange`. When the
        game id was settled before, nothing changes and the stored settlement comes back with
        ``applied=False`` (a different ``finished_at`` or ``reason`` is ignored); if the
        stored one has other players, ladder, cube or match length,
        :class:`AlreadySettledConflict` is raised instead. Bad input raises
        :class:`InvalidInputError` naming the field (:class:`SamePlayerError`,
        :class:`UnknownLadderError` are kinds of it).
        """
        game_id = _check_id(game_id, "game_id", MAX_GAME_ID_LENGTH)
        rated = _ladder(ladder, RATED_LADDERS)
        winner = _check_player(winner, "winner")
        loser = _check_player(loser, "loser")
        if winner == loser:
            raise SamePlayerError("loser", loser)
        coefficient = _COEFFICIENTS[table42.check_cube(cube)]
        at = _check_time(finished_at, "finished_at")
        reason = _check_reason(reason)
        keys = self.keys
        if rated is Ladder.TABLE42:
            if match_length is not None and (type(match_length) is not int or match_length != 1):
                raise InvalidInputError(
                    "match_length", f"must be None (or 1) on table42, got {_describe(match_length)}"
                )
            match_length = None
            finish_ms = _ms(at)
            reply = await self._settle_table42(
                keys=(
                    keys.game(game_id),
                    keys.seq(rated),
                    keys.rating(rated, winner),
                    keys.rating(rated, loser),
                    keys.window(winner),
                    keys.window(loser),
                    keys.history(rated, winner),
                    keys.history(rated, loser),
                    keys.board(rated),
                    keys.log(rated),
                ),
                args=(
                    game_id,
                    winner,
                    loser,
                    cube,
                    coefficient,
                    repr(at),
                    finish_ms,
                    finish_ms - WINDOW_MS,
                    self._retention_ms,
                    finish_ms - self._retention_ms,
                    _K_NORMAL,
                    _K_HEAVY,
                    table42.HEAVY_WEEK_GAMES,
                    table42.DIVISOR,
                    table42.START_RATING,
                    reason,
                    self.history_limit,
                ),
            )
        else:
            length = _check_int(match_length, "match_length", 1, MAX_MATCH_LENGTH)
            match_length = length
            reply = await self._settle_fibs(
                keys=(
                    keys.game(game_id),
                    keys.seq(rated),
                    keys.rating(rated, winner),
                    keys.rating(rated, loser),
                    keys.history(rated, winner),
                    keys.history(rated, loser),
                    keys.board(rated),
                    keys.log(rated),
                ),
                args=(
                    game_id,
                    winner,
                    loser,
                    cube,
                    length,
                    _ROOTS[length],
                    repr(at),
                    fibs.START_RATING,
                    fibs.MAX_MULTIPLIER,
                    fibs.NEW_PLAYER_EXPERIENCE,
                    reason,
                    self.history_limit,
                ),
            )
        applied = reply[0] == 1
        settlement = _settlement(reply[1], applied)
        if not applied:
            differences = tuple(
                name
                for name, stored, given in (
                    ("ladder", settlement.ladder, rated),
                    ("winner", settlement.winner.player, winner),
                    ("loser", settlement.loser.player, loser),
                    ("cube", settlement.cube, cube),
                    ("match_length", settlement.match_length, match_length),
                )
                if stored != given
            )
            if differences:
                raise AlreadySettledConflict("game_id", game_id, differences, settlement)
        return settlement

    async def settlement(self, game_id: str) -> Settlement | None:
        """The stored settlement of ``game_id`` (``applied=False``), or None if never settled."""
        game_id = _check_id(game_id, "game_id", MAX_GAME_ID_LENGTH)
        raw = await self.redis.get(self.keys.game(game_id))
        return None if raw is None else _settlement(raw, False)

    async def award_podium(
        self,
        tournament_id: str,
        players: Sequence[str],
        prizes: Sequence[int] = (50, 25, 15),
        *,
        awarded_at: float | None = None,
    ) -> PodiumAward:
        """Add fixed Table42 points to a tournament's podium, once per tournament id.

        ``tournament_id``: 1..128 printable characters without braces; ``players``: first,
        second, third (1 to 3 distinct player ids, best first); ``prizes``: rating points per
        place (whole numbers 0..1000, at least one per player; extra prizes are unused);
        ``awarded_at``: Unix seconds for the history (default: now). Games, wins and losses
        do not change; each player gets a history entry with the reason ``"podium"``.

        Returns the :class:`PodiumAward` (``changes`` maps player -> points). A repeat
        returns the first award with ``applied=False``; a repeat with other players or
        prizes raises :class:`AlreadySettledConflict`.
        """
        tournament_id = _check_id(tournament_id, "tournament_id", MAX_GAME_ID_LENGTH)
        if isinstance(players, str) or not isinstance(players, Sequence):
            raise InvalidInputError("players", f"must be a list of 1 to 3 player ids, got "
                                    f"{_describe(players)}")
        if not 1 <= len(players) <= 3:
            raise InvalidInputError("players", f"must name 1 to 3 players, got {len(players)}")
        names = [_check_player(player, "players") for player in players]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise SamePlayerError("players", name, f"names {name!r} twice")
        if isinstance(prizes, str) or not isinstance(prizes, Sequence):
            raise InvalidInputError("prizes", f"must be a list of whole numbers, got "
                                    f"{_describe(prizes)}")
        if len(prizes) < len(names):
            raise InvalidInputError(
                "prizes", f"must have a prize for each of the {len(names)} players"
            )
        awards = [_check_int(prize, "prizes", 0, MAX_PODIUM_PRIZE) for prize in prizes]
        awards = awards[: len(names)]
        at = time.time() if awarded_at is None else _check_time(awarded_at, "awarded_at")
        keys = self.keys
        ladder = Ladder.TABLE42
        script_keys = [keys.podium(tournament_id), keys.seq(ladder), keys.board(ladder)]
        args: list[str | int] = [
            tournament_id, repr(at), table42.START_RATING, self.history_limit, len(names)
        ]
        for name, prize in zip(names, awards, strict=True):
            script_keys += (keys.rating(ladder, name), keys.history(ladder, name))
            args += (name, prize)
        script_keys.append(keys.log(ladder))
        reply = await self._award_podium(keys=script_keys, args=args)
        applied = reply[0] == 1
        award = _podium(reply[1], applied)
        if not applied:
            differences = tuple(
                name
                for name, stored, given in (
                    ("players", [place.player for place in award.places], names),
                    ("prizes", [place.prize for place in award.places], awards),
                )
                if stored != given
            )
            if differences:
                raise AlreadySettledConflict("tournament_id", tournament_id, differences, award)
        return award

    async def add_boosted_points(
        self, game_id: str, *, winner: str, loser: str, points: int, finished_at: float
    ) -> BoostedResult:
        """Add a Boosted game's points to the winner's Boosted total, once per game id.

        ``game_id``: 1..128 printable characters without braces (Boosted ids are their own
        namespace); ``winner``/``loser``: different player ids; ``points``: game points,
        result x cube (1 .. 192); ``finished_at``: Unix seconds. Elo never changes.

        Returns the :class:`BoostedResult`; a repeat returns the first with ``applied=False``,
        a repeat with other players or points raises :class:`AlreadySettledConflict`.
        """
        game_id = _check_id(game_id, "game_id", MAX_GAME_ID_LENGTH)
        winner = _check_player(winner, "winner")
        loser = _check_player(loser, "loser")
        if winner == loser:
            raise SamePlayerError("loser", loser)
        points = _check_int(points, "points", 1, MAX_BOOSTED_POINTS)
        at = _check_time(finished_at, "finished_at")
        reply = await self._add_boosted(
            keys=(self.keys.boosted_game(game_id), self.keys.board(Ladder.BOOSTED)),
            args=(game_id, winner, loser, points, repr(at)),
        )
        applied = reply[0] == 1
        result = _boosted(reply[1], applied)
        if not applied:
            differences = tuple(
                name
                for name, stored, given in (
                    ("winner", result.winner, winner),
                    ("loser", result.loser, loser),
                    ("points", result.points, points),
                )
                if stored != given
            )
            if differences:
                raise AlreadySettledConflict("game_id", game_id, differences, result)
        return result

    # -- the applied-order log -------------------------------------------------------------------

    async def applied(
        self, ladder: Ladder | str, *, batch: int = 1000
    ) -> AsyncIterator[Settlement | PodiumAward]:
        """Every settlement of a rated ladder in applied order (``seq`` 1, 2, ...; Table42
        podium awards in their place), streamed: ``batch`` (1..10,000) records at a time
        (one round trip for the counter and the log's length, then per batch one LRANGE of
        the ladder's log and one MGET of the records), so memory stays
        that of one batch whatever the length of the log. Lists what was applied when the
        call began (later settlements are left for the next call). Raises
        :class:`LogIncompleteError` when the log lacks settlements applied before the store
        kept it, :class:`LogRecordMissingError` when a record it names is gone."""
        rated = _ladder(ladder, RATED_LADDERS)
        batch = _check_int(batch, "batch", 1, 10_000)
        log_key = self.keys.log(rated)
        # The counter and the log's length in one round trip (both keys carry {rated}).
        pipe = cast("Pipeline", self.redis.pipeline(transaction=False))
        pipe.get(self.keys.seq(rated))
        pipe.llen(log_key)
        settled_raw, logged_raw = await pipe.execute()
        settled = 0 if settled_raw is None else int(settled_raw)
        logged = int(logged_raw)
        if logged < settled:
            raise LogIncompleteError(str(rated), settled, logged)
        for start in range(0, settled, batch):
            end = min(start + batch, settled) - 1
            record_keys = await cast(
                "Awaitable[list[bytes | str]]", self.redis.lrange(log_key, start, end)
            )
            # Every record shares the {rated} hash tag with the log: one slot, one MGET.
            records = await cast(
                "Awaitable[list[bytes | str | None]]", self.redis.mget(record_keys)
            )
            for offset, raw in enumerate(records):
                if raw is None:  # records are kept forever: a missing one was deleted by hand
                    key = record_keys[offset]
                    raise LogRecordMissingError(
                        str(rated), start + offset + 1,
                        key.decode() if isinstance(key, bytes) else key,
                    )
                if _fields(raw)[0] == "podium/1":
                    yield _podium(raw, False)
                else:
                    yield _settlement(raw, False)

    async def settled_since(
        self, ladder: Ladder | str, since: float, *, batch: int = 1000
    ) -> AsyncIterator[Settlement]:
        """The settlements of a rated ladder that finished at or after ``since`` (Unix
        seconds), newest applied first, read from the tail of the applied-order log in
        batches of ``batch`` (1..10,000): the cost is that of the recent games, not of the
        whole history. Stops after a batch where every record finished more than
        ``late_grace`` before ``since`` (no settlement is applied later than that after its
        game). Podium awards are left out."""
        rated = _ladder(ladder, RATED_LADDERS)
        batch = _check_int(batch, "batch", 1, 10_000)
        since = _check_time(since, "since")
        log_key = self.keys.log(rated)
        end = int(await cast("Awaitable[int]", self.redis.llen(log_key)))
        while end > 0:
            start = max(0, end - batch)
            record_keys = await cast(
                "Awaitable[list[bytes | str]]", self.redis.lrange(log_key, start, end - 1)
            )
            records = await cast(
                "Awaitable[list[bytes | str | None]]", self.redis.mget(record_keys)
            )
            recent = False
            for raw in reversed(records):
                if raw is None or _fields(raw)[0] == "podium/1":
                    continue
                settlement = _settlement(raw, False)
                if settlement.finished_at >= since - self.late_grace:
                    recent = True
                if settlement.finished_at >= since:
                    yield settlement
            if not recent:
                return
            end = start

    async def reserve_pair_game(
        self, game_id: str, a: str, b: str, *, at: float, limit: int, window: float
    ) -> PairReservation:
        """Count the rated game ``game_id`` of the pair ``a``, ``b`` starting at ``at`` (Unix
        seconds), unless the pair already has ``limit`` rated games that started within
        ``window`` seconds before: then the game is not rated. One script on the pair's key
        (``pair_reserve.lua``, the ``{rated}`` slot), idempotent by ``game_id``: asking
        again for a game already counted answers rated and counts nothing."""
        game_id = _check_id(game_id, "game_id", MAX_GAME_ID_LENGTH)
        a, b = _check_player(a, "a"), _check_player(b, "b")
        if a == b:
            raise SamePlayerError("b", a)
        limit = _check_int(limit, "limit", 1, 1_000_000)
        window = _check_window(window)
        rated, count = await self._pair_reserve(
            keys=[self.keys.pair(a, b)],
            args=[game_id, _ms(_check_time(at, "at")), _ms(window), limit],
        )
        return PairReservation(bool(int(rated)), int(count), limit)

    async def pair_games(self, a: str, b: str, *, at: float, window: float) -> int:
        """How many rated games the pair ``a``, ``b`` started within ``window`` seconds before
        ``at`` (what :meth:`reserve_pair_game` would count; read only)."""
        a, b = _check_player(a, "a"), _check_player(b, "b")
        since = _ms(_check_time(at, "at")) - _ms(_check_window(window))
        return int(await self.redis.zcount(self.keys.pair(a, b), f"({since}", "+inf"))

    async def holds_settlements(self) -> bool:
        """Whether a settlement was ever applied under this prefix (either rated ladder's
        applied-order counter exists): what tells a store from a mistyped prefix."""
        count = await self.redis.exists(self.keys.seq("table42"), self.keys.seq("fibs"))
        return int(count) > 0

    async def prefixes_in_use(self, limit: int = 10) -> list[str]:
        """Up to ``limit`` key prefixes under which this Redis holds a rated store (found by
        SCAN for the ladders' counters; for messages, not for hot paths)."""
        found: set[str] = set()
        for ladder in RATED_LADDERS:
            tail = KeySpace().seq(ladder)
            async for key in self.redis.scan_iter(match=f"*{tail}", count=1000):
                text = key.decode() if isinstance(key, bytes) else key
                found.add(text[: -len(tail)])
                if len(found) >= limit:
                    return sorted(found)
        return sorted(found)

    async def export_log(
        self,
        out: _Writer,
        *,
        ladders: Sequence[Ladder | str] = RATED_LADDERS,
        fmt: Literal["jsonl", "csv"] = "jsonl",
        batch: int = 1000,
    ) -> int:
        """Write the settled games of ``ladders`` (default both rated ladders, Table42
        first) to ``out`` (anything with ``write(str)``) as JSON Lines or CSV
        (:mod:`rating_plugin.logformat` formats), each ladder in applied order, streamed as
        :meth:`applied` reads it. Returns the number of records written."""
        rated = [_ladder(ladder, RATED_LADDERS) for ladder in ladders]
        if fmt not in ("jsonl", "csv"):
            raise InvalidInputError("fmt", f"must be jsonl or csv, got {_describe(fmt)}")
        written = 0
        if fmt == "csv":
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(logformat.csv_header())
            for ladder in rated:
                async for item in self.applied(ladder, batch=batch):
                    writer.writerow(logformat.csv_row(log_record(item)))
                    written += 1
            return written
        for ladder in rated:
            async for item in self.applied(ladder, batch=batch):
                out.write(logformat.json_line(log_record(item)))
                written += 1
        return written

    # -- reading -------------------------------------------------------------------------------

    async def rating(self, player: str, ladder: Ladder | str) -> PlayerRating:
        """``player``'s :class:`PlayerRating` on a rated ladder (``"table42"`` or ``"fibs"``);
        a player never seen is at the start rating (1500) with no games."""
        player = _check_player(player, "player")
        rated = _ladder(ladder, RATED_LADDERS)
        raw = await cast(
            "Awaitable[list[bytes | str | None]]",
            self.redis.hmget(
                self.keys.rating(rated, player),
                ["rating", "games", "wins", "losses", "experience"],
            ),
        )
        rating_raw, games, wins, losses, experience_raw = raw
        if rated is Ladder.TABLE42:
            rating: float = table42.START_RATING if rating_raw is None else int(rating_raw)
            experience = None
            is_new = False
        else:
            rating = fibs.START_RATING if rating_raw is None else float(rating_raw)
            experience = 0 if experience_raw is None else int(experience_raw)
            is_new = experience < fibs.NEW_PLAYER_EXPERIENCE
        return PlayerRating(
            player=player,
            ladder=rated,
            rating=rating,
            games=0 if games is None else int(games),
            wins=0 if wins is None else int(wins),
            losses=0 if losses is None else int(losses),
            experience=experience,
            is_new=is_new,
        )

    async def recent_games(self, player: str, at: float) -> int:
        """How many Competitive (Table42) games ``player`` finished in [at - 7 days, at)
        (``at`` in Unix seconds): the count that picks K for a game finishing at ``at``."""
        player = _check_player(player, "player")
        at_ms = _ms(_check_time(at, "at"))
        return int(await self.redis.zcount(self.keys.window(player), at_ms - WINDOW_MS,
                                           f"({at_ms}"))

    async def boosted_points(self, player: str) -> int:
        """``player``'s Boosted points total (0 if none)."""
        player = _check_player(player, "player")
        score = await self.redis.zscore(self.keys.board(Ladder.BOOSTED), player)
        return 0 if score is None else int(score)

    async def leaderboard(
        self, ladder: Ladder | str, *, offset: int = 0, limit: int = 20
    ) -> list[LeaderboardEntry]:
        """One page of a leaderboard, best first: ``"table42"``, ``"fibs"`` (players with
        experience >= 10 only) or ``"boosted"``. ``offset`` (0..1,000,000) skips that many
        rows, ``limit`` (1..100) is the page size. Equal scores share a rank and are listed
        in Redis order (player id descending)."""
        board = _ladder(ladder, ALL_LADDERS)
        offset = _check_int(offset, "offset", 0, MAX_OFFSET)
        limit = _check_int(limit, "limit", 1, MAX_PAGE)
        page = await self._board_page(
            keys=(self.keys.board(board),), args=(offset, offset + limit - 1)
        )
        if not page:
            return []
        entries: list[LeaderboardEntry] = []
        rank = int(page[0])
        previous: float | None = None
        for i in range(1, len(page), 2):
            score = _score(page[i + 1], board)
            position = offset + (i - 1) // 2
            if previous is not None and score != previous:
                rank = position + 1
            entries.append(LeaderboardEntry(rank=rank, player=_text(page[i]), rating=score))
            previous = score
        return entries

    async def rank(self, player: str, ladder: Ladder | str) -> int | None:
        """``player``'s competition rank on a leaderboard (1 = best; equal scores share a
        rank), or None when the player is not on it (never played; on FIBS: still "new")."""
        player = _check_player(player, "player")
        board = _ladder(ladder, ALL_LADDERS)
        found = await self._board_rank(keys=(self.keys.board(board),), args=(player,))
        return None if found is None else int(found[0])

    async def history(
        self, player: str, ladder: Ladder | str, *, limit: int = 50
    ) -> list[HistoryEntry]:
        """``player``'s last rating changes on a rated ladder, newest first: at most ``limit``
        (1..10,000) entries, and at most the ``history_limit`` the store keeps per player and
        ladder (older entries are dropped as new ones come). Two reads: the history list holds
        the keys of the player's records, which one MGET then fetches."""
        player = _check_player(player, "player")
        rated = _ladder(ladder, RATED_LADDERS)
        limit = min(_check_int(limit, "limit", 1, MAX_HISTORY_LIMIT), self.history_limit)
        record_keys = await cast(
            "Awaitable[list[bytes | str]]",
            self.redis.lrange(self.keys.history(rated, player), 0, limit - 1),
        )
        if not record_keys:
            return []
        # The records share the {rated} hash tag, so one MGET works on a cluster too.
        records = await cast(
            "Awaitable[list[bytes | str | None]]", self.redis.mget(record_keys)
        )
        return [_history(raw, player, rated) for raw in records if raw is not None]

    # -- reads in one round trip (leaderboard pages, profiles) --------------------------------

    async def leaderboard_page(
        self,
        ladder: Ladder | str,
        *,
        offset: int = 0,
        limit: int = 20,
        player: str | None = None,
    ) -> LeaderboardPage:
        """One page of a leaderboard (as :meth:`leaderboard`), the number of players on it
        and, when ``player`` is given, that player's own place: one ``EVALSHA``
        (``board_view.lua``), one round trip. Every key it reads shares one hash tag
        (``{rated}`` or ``{boosted}``), so it works on a cluster too."""
        board = _ladder(ladder, ALL_LADDERS)
        offset = _check_int(offset, "offset", 0, MAX_OFFSET)
        limit = _check_int(limit, "limit", 1, MAX_PAGE)
        keys = [self.keys.board(board)]
        if player is not None:
            player = _check_player(player, "player")
            if board is not Ladder.BOOSTED:
                keys.append(self.keys.rating(board, player))
        reply = await self._board_view(
            keys=keys, args=(offset, offset + limit - 1, player or "")
        )
        total, first_rank, page, rank, score, rating_raw, experience_raw = reply
        entries: list[LeaderboardEntry] = []
        rank_now = int(first_rank)
        previous: float | None = None
        for i in range(0, len(page), 2):
            value = _score(page[i + 1], board)
            if previous is not None and value != previous:
                rank_now = offset + i // 2 + 1
            entries.append(LeaderboardEntry(rank=rank_now, player=_text(page[i]), rating=value))
            previous = value
        place = None
        if player is not None:
            place = _place(board, player, rank, score, rating_raw, experience_raw)
        return LeaderboardPage(board, offset, limit, int(total), tuple(entries), place)

    def queue_profile(self, pipe: Pipeline, player: str, at: float) -> Queued[PlayerProfile]:
        """Queue the reads of ``player``'s :class:`PlayerProfile` at ``at`` (Unix seconds) on
        ``pipe``: two ``EVALSHA`` (``rated_profile.lua`` on the ``{rated}`` keys,
        ``board_rank.lua`` on the Boosted board). Run the pipeline with :meth:`read`, which
        loads the scripts when Redis does not know them yet."""
        player = _check_player(player, "player")
        at = _check_time(at, "at")
        at_ms = _ms(at)
        keys = self.keys
        t42, fib = Ladder.TABLE42, Ladder.FIBS
        rated_keys = (keys.rating(t42, player), keys.rating(fib, player), keys.board(t42),
                      keys.board(fib), keys.window(player))
        # execute_command, not pipe.evalsha: redis-py's cluster pipeline refuses the named
        # script methods, and the plain command is routed by its keys' slot either way.
        pipe.execute_command("EVALSHA", self._rated_profile.sha, len(rated_keys), *rated_keys,
                             player, str(at_ms - WINDOW_MS), str(at_ms))
        pipe.execute_command("EVALSHA", self._board_rank.sha, 1, keys.board(Ladder.BOOSTED),
                             player)
        return Queued(2, lambda replies: _profile(player, at, replies[0], replies[1]))

    async def read(self, fill: Callable[[Pipeline], Queued[T]]) -> T:
        """Run reads queued by ``fill`` (``queue_*`` methods, or the caller's own commands on
        the same pipeline) as one pipeline, without MULTI: one round trip on a single node.
        On a cluster redis-py sends each command to its slot's node. A script Redis does
        not know (restarted, flushed) is loaded and the pipeline run once more."""
        for attempt in range(2):
            # RedisCluster's pipeline takes the same commands; redis-py types them apart.
            pipe = cast("Pipeline", self.redis.pipeline(transaction=False))
            queued = fill(pipe)
            try:
                replies = await pipe.execute()
            except NoScriptError:
                if attempt:
                    raise
                await self.load_scripts()
                continue
            return queued.parse(replies)
        raise AssertionError("unreachable")

    async def profile(self, player: str, *, at: float | None = None) -> PlayerProfile:
        """``player``'s :class:`PlayerProfile` now (or at ``at``), in one round trip."""
        when = time.time() if at is None else at
        return await self.read(lambda pipe: self.queue_profile(pipe, player, when))


def _int_or(raw: bytes | str | None, default: int) -> int:
    return default if raw is None else int(raw)


def _rated(player: str, ladder: Ladder, f: Sequence[bytes | str | None]) -> PlayerRating:
    """A :class:`PlayerRating` from the fields rating, games, wins, losses[, experience]."""
    if ladder is Ladder.TABLE42:
        rating: float = table42.START_RATING if f[0] is None else int(f[0])
        experience = None
        is_new = False
    else:
        rating = fibs.START_RATING if f[0] is None else float(f[0])
        experience = _int_or(f[4], 0)
        is_new = experience < fibs.NEW_PLAYER_EXPERIENCE
    return PlayerRating(player, ladder, rating, _int_or(f[1], 0), _int_or(f[2], 0),
                        _int_or(f[3], 0), experience, is_new)


def _place(board: Ladder, player: str, rank: Any, score: Any, rating_raw: Any,
           experience_raw: Any) -> LeaderboardPlace:
    if score is not None:
        rating = _score(score, board)
    elif board is Ladder.BOOSTED:
        rating = 0
    else:
        rating = _rated(player, board, (rating_raw, None, None, None, experience_raw)).rating
    is_new = board is Ladder.FIBS and _int_or(experience_raw, 0) < fibs.NEW_PLAYER_EXPERIENCE
    return LeaderboardPlace(player, None if rank is None else int(rank), rating, is_new)


def _profile(player: str, at: float, rated: Sequence[Any], boosted: Any) -> PlayerProfile:
    t42 = _rated(player, Ladder.TABLE42, rated[0:4])
    fib = _rated(player, Ladder.FIBS, rated[4:9])
    recent = int(rated[11])
    return PlayerProfile(
        player=player,
        at=at,
        table42=t42,
        fibs=fib,
        table42_rank=None if rated[9] is None else int(rated[9]),
        fibs_rank=None if rated[10] is None else int(rated[10]),
        boosted_points=0 if boosted is None else int(float(boosted[1])),
        boosted_rank=None if boosted is None else int(boosted[0]),
        recent_games=recent,
        k=table42.k_factor(recent),
        is_known=rated[0] is not None or rated[4] is not None or boosted is not None,
    )

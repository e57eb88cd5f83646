"""Query and path parameters of the public read API, checked. Pure (no aiohttp or redis).

Each ``parse_*`` function takes the request's parameters as a plain mapping and returns a
frozen value, or raises :class:`ProtocolError` naming the parameter: ``missing_field`` when a
required one is absent, ``bad_field`` when one is malformed or out of range, ``not_found`` for
an unknown ladder or calculator system in the path, ``unknown_pool`` for an unknown pool.
Parameters nobody asked for are ignored.

The calculator's parameters become the argument list of ``python -m rating_plugin`` (see
:func:`calculator_argv`), so the HTTP calculator answers exactly what the command line's
``--json`` prints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rating_plugin import elo, table42
from server.matchmaking.errors import UnknownPoolError
from server.matchmaking.policy import POOLS, Pool, pool_by_id
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.ids import PLAYER_ID

__all__ = [
    "CALCULATOR_SYSTEMS",
    "LADDERS",
    "RATED_LADDERS",
    "HistoryQuery",
    "LeaderboardQuery",
    "StakesQuery",
    "calculator_argv",
    "check_player",
    "parse_history",
    "parse_leaderboard",
    "parse_stakes",
    "stakes_argv",
]

LADDERS = ("table42", "fibs", "boosted")
RATED_LADDERS = ("table42", "fibs")
CALCULATOR_SYSTEMS = ("table42", "fibs", "elo")
MAX_PLAYER_LENGTH = 64
MAX_OFFSET = 1_000_000
MAX_PAGE = 100
DEFAULT_PAGE = 20
MAX_HISTORY = 200
DEFAULT_HISTORY = 50
MAX_RATING = 1_000_000
MAX_COUNT = 1_000_000_000
MAX_LENGTH = 99
ELO_PRESETS = (*elo.K_PRESETS, "fide")

_WHOLE = re.compile(r"[0-9]{1,12}")
MAX_NUMBER_TEXT = 32
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

Query = Mapping[str, str]


def _bad(field: str, message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_FIELD, f"{field}: {message}", field=field)


def _shown(value: str) -> str:
    return repr(value if len(value) <= 30 else value[:27] + "...")


def check_player(value: str | None, field: str = "player") -> str:
    """A player id: ``server.protocol.ids.PLAYER_ID_PATTERN`` (1..64 ASCII letters, digits,
    ``_``, ``-``)."""
    if value is None:
        raise ProtocolError(ErrorCode.MISSING_FIELD, f"{field} is required", field=field)
    if not value or len(value) > MAX_PLAYER_LENGTH:
        raise _bad(field, f"must be 1..{MAX_PLAYER_LENGTH} characters")
    if not PLAYER_ID.fullmatch(value):
        raise _bad(field, "must be letters, digits, '_' or '-' (a player id)")
    return value


def _whole(query: Query, field: str, default: int | None, low: int, high: int) -> int | None:
    raw = query.get(field)
    if raw is None:
        return default
    if not _WHOLE.fullmatch(raw) or not low <= int(raw) <= high:
        raise _bad(field, f"must be a whole number from {low} to {high}, got {_shown(raw)}")
    return int(raw)


def _required_whole(query: Query, field: str, default: int, low: int, high: int) -> int:
    value = _whole(query, field, default, low, high)
    assert value is not None
    return value


def _choice(query: Query, field: str, default: str | None, choices: tuple[str, ...]) -> str | None:
    raw = query.get(field)
    if raw is None:
        return default
    if raw not in choices:
        raise _bad(field, f"must be one of {', '.join(choices)}, got {_shown(raw)}")
    return raw


def _decimal(query: Query, field: str, *, required: bool, positive: bool = False) -> str | None:
    """A number as text, as the command line reads it: a whole number stays whole (``1500``
    prints as 1500 and ``1500.0`` as 1500.0 in its JSON), anything else is a float."""
    raw = query.get(field)
    if raw is None:
        if required:
            raise ProtocolError(ErrorCode.MISSING_FIELD, f"{field} is required", field=field)
        return None
    value: float | None = None
    if len(raw) <= MAX_NUMBER_TEXT and raw.strip() == raw:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = None
    if value is None or not math.isfinite(value) or abs(value) > MAX_RATING:
        raise _bad(field, f"must be a number from -{MAX_RATING} to {MAX_RATING}, got "
                   f"{_shown(raw)}")
    if positive and value <= 0:
        raise _bad(field, f"must be greater than 0, got {_shown(raw)}")
    return str(value) if isinstance(value, int) else repr(value)


def _flag(query: Query, field: str) -> bool:
    raw = query.get(field)
    if raw is None or raw.lower() in _FALSE:
        return False
    if raw.lower() in _TRUE:
        return True
    raise _bad(field, f"must be true or false, got {_shown(raw)}")


def _exclusive(query: Query, first: str, second: str) -> None:
    if first in query and second in query:
        raise _bad(second, f"give {first} or {second}, not both")


@dataclass(frozen=True, slots=True)
class LeaderboardQuery:
    ladder: str
    offset: int
    limit: int
    player: str | None


def parse_leaderboard(ladder: str, query: Query) -> LeaderboardQuery:
    """``GET /api/leaderboard/{ladder}?offset=&limit=&player=``."""
    if ladder not in LADDERS:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no ladder {_shown(ladder)}; ladders are "
                            f"{', '.join(LADDERS)}", field="ladder")
    player = query.get("player")
    return LeaderboardQuery(
        ladder=ladder,
        offset=_required_whole(query, "offset", 0, 0, MAX_OFFSET),
        limit=_required_whole(query, "limit", DEFAULT_PAGE, 1, MAX_PAGE),
        player=None if player is None else check_player(player),
    )


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    player: str
    ladder: str
    limit: int


def parse_history(player: str, query: Query) -> HistoryQuery:
    """``GET /api/players/{player}/history?ladder=&limit=``."""
    ladder = _choice(query, "ladder", "table42", RATED_LADDERS)
    assert ladder is not None
    return HistoryQuery(
        player=check_player(player),
        ladder=ladder,
        limit=_required_whole(query, "limit", DEFAULT_HISTORY, 1, MAX_HISTORY),
    )


@dataclass(frozen=True, slots=True)
class GamesQuery:
    player: str
    offset: int
    limit: int


DEFAULT_GAMES = 20
MAX_GAMES = 50
MAX_GAME_ID = 80


def parse_games(player: str, query: Query) -> GamesQuery:
    """``GET /api/players/{player}/games?offset=&limit=``."""
    return GamesQuery(
        player=check_player(player),
        offset=_required_whole(query, "offset", 0, 0, MAX_OFFSET),
        limit=_required_whole(query, "limit", DEFAULT_GAMES, 1, MAX_GAMES),
    )


def check_game_id(value: str) -> str:
    """A game id: ``<table>-g<n>`` (letters, digits, ``_``, ``-``; at most 80)."""
    if not value or len(value) > MAX_GAME_ID or not all(
            c.isascii() and (c.isalnum() or c in "_-") for c in value):
        raise _bad("game_id", f"must be 1..{MAX_GAME_ID} letters, digits, '_' or '-'")
    return value


def parse_match_flag(query: Query) -> bool:
    """``?match=0|1`` of ``GET /api/games/{game_id}/mat``."""
    value = _required_whole(query, "match", 0, 0, 1)
    return bool(value)


@dataclass(frozen=True, slots=True)
class StakesQuery:
    player: str
    opponent: str
    pool: Pool


def parse_stakes(query: Query) -> StakesQuery:
    """``GET /api/stakes?player=&opponent=&pool=`` (pool: a rated matchmaking pool)."""
    player = check_player(query.get("player"), "player")
    opponent = check_player(query.get("opponent"), "opponent")
    if player == opponent:
        raise _bad("opponent", "must not be the player")
    try:
        pool = pool_by_id(query.get("pool", "competitive"))
    except UnknownPoolError as exc:
        raise ProtocolError(ErrorCode.UNKNOWN_POOL, str(exc), field="pool") from None
    if not pool.is_rated:
        rated = ", ".join(p.id for p in POOLS if p.is_rated)
        raise _bad("pool", f"{pool.id} games change no rating; rated pools are {rated}")
    return StakesQuery(player, opponent, pool)


# -- the calculator ---------------------------------------------------------------------------


def _system(system: str, allowed: tuple[str, ...] = CALCULATOR_SYSTEMS) -> str:
    if system not in allowed:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no rating system {_shown(system)}; systems "
                            f"are {', '.join(allowed)}", field="system")
    return system


def _ratings(query: Query) -> list[str]:
    rating = _decimal(query, "rating", required=True)
    opponent = _decimal(query, "opponent", required=True)
    assert rating is not None and opponent is not None
    return [rating, opponent]


def _result(query: Query, choices: tuple[str, ...]) -> list[str]:
    if "result" not in query:
        raise ProtocolError(ErrorCode.MISSING_FIELD, "result is required", field="result")
    return ["--result", str(_choice(query, "result", None, choices))]


def _options(query: Query, names: tuple[str, ...], *, low: int, high: int) -> list[str]:
    argv: list[str] = []
    for name in names:
        value = _whole(query, name, None, low, high)
        if value is not None:
            argv += ["--" + name.replace("_", "-"), str(value)]
    return argv


def _table42_options(query: Query) -> list[str]:
    _exclusive(query, "k", "recent_games")
    _exclusive(query, "opponent_k", "opponent_recent_games")
    cube = _whole(query, "cube", 1, 1, table42.MAX_CUBE)
    if cube not in table42.CUBE_VALUES:
        raise _bad("cube", f"must be one of {', '.join(map(str, table42.CUBE_VALUES))}")
    version = _choice(query, "version", table42.CURRENT_VERSION.name, tuple(table42.VERSIONS))
    return [
        "--cube", str(cube), "--version", str(version),
        *_options(query, ("k", "opponent_k"), low=1, high=1000),
        *_options(query, ("recent_games", "opponent_recent_games"), low=0, high=MAX_COUNT),
    ]


def _fibs_options(query: Query) -> list[str]:
    return [
        *_options(query, ("length",), low=1, high=MAX_LENGTH),
        *_options(query, ("experience", "opponent_experience"), low=0, high=MAX_COUNT),
    ]


def _elo_k(query: Query, presets: tuple[str, ...]) -> list[str]:
    _exclusive(query, "k", "preset")
    preset = _choice(query, "preset", None, presets)
    if preset is not None:
        return ["--preset", preset]
    k = _decimal(query, "k", required=False, positive=True)
    return [] if k is None else ["--k", k]


def _fide(query: Query, is_fide: bool) -> list[str]:
    """``games``, ``junior``/``age`` and ``reached_2400``/``peak``: FIDE rules only."""
    given = [name for name in ("games", "junior", "age", "reached_2400", "peak") if name in query]
    if not is_fide:
        if given:
            raise _bad(given[0], "goes with preset=fide only")
        return []
    games = _whole(query, "games", None, 0, MAX_COUNT)
    if games is None:
        raise ProtocolError(ErrorCode.MISSING_FIELD, "games is required with preset=fide (rated "
                            "games so far)", field="games")
    age = _whole(query, "age", None, 0, 200)
    peak = _decimal(query, "peak", required=False)
    argv = ["--games", str(games)]
    if _flag(query, "junior") or (age is not None and age < 18):
        argv.append("--junior")
    if _flag(query, "reached_2400") or (peak is not None and float(peak) >= 2400):
        argv.append("--reached-2400")
    return argv


def calculator_argv(system: str, query: Query) -> list[str]:
    """``GET /api/calculator/{system}``: the ``python -m rating_plugin`` arguments (no
    ``--json``) for these parameters."""
    system = _system(system)
    argv = [system]
    if system == "table42":
        argv += _result(query, ("win", "loss")) + _table42_options(query)
    elif system == "fibs":
        argv += _result(query, ("win", "loss")) + _fibs_options(query)
    else:
        argv += _result(query, ("win", "draw", "loss"))
        k = _elo_k(query, ELO_PRESETS)
        argv += k + _fide(query, k == ["--preset", "fide"])
    return [*argv, "--", *_ratings(query)]


def stakes_argv(system: str, query: Query) -> list[str]:
    """``GET /api/stakes/{system}``: the ``python -m rating_plugin stakes`` arguments."""
    system = _system(system)
    argv = ["stakes", system]
    if system == "table42":
        argv += _table42_options(query)
    elif system == "fibs":
        argv += _fibs_options(query)
    else:
        argv += _elo_k(query, tuple(elo.K_PRESETS))
        opponent_k = _decimal(query, "opponent_k", required=False, positive=True)
        if opponent_k is not None:
            argv += ["--opponent-k", opponent_k]
        cap = _decimal(query, "max_difference", required=False, positive=True)
        if cap is not None:
            argv += ["--max-difference", cap]
    return [*argv, "--", *_ratings(query)]

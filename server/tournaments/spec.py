"""What a runner may send about a tournament, checked (pure). Each refusal is a
``ProtocolError`` whose ``field`` names the offending field (HTTP 400)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.ids import PLAYER_ID
from server.protocol.text import clean_text
from server.tournaments.bracket import MAX_ENTRANTS

MAX_NAME = 80
MAX_PRIZE = 1000
DEFAULT_PRIZES = (50, 25, 15)
MAX_PLAYERS = MAX_ENTRANTS
MAX_PAIRS = MAX_PLAYERS // 2
MAX_PLAYER_ID = 64
DEFAULT_NO_SHOW = 120.0
MAX_NO_SHOW = 3600.0
MIN_NO_SHOW = 1.0
MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    name: str
    visibility: str  # "public" | "private"
    prizes: tuple[int, ...]
    match_length: int  # 0 = single games, else matches to n points

    @property
    def format(self) -> dict[str, Any]:
        if self.match_length == 0:
            return {"kind": "game"}
        return {"kind": "match", "length": self.match_length}


def _bad(field: str, message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_FIELD, f"field '{field}' {message}", field=field)


def _missing(field: str) -> ProtocolError:
    return ProtocolError(ErrorCode.MISSING_FIELD, f"field '{field}' is required", field=field)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_create(body: Mapping[str, Any], max_match_length: int) -> TournamentSpec:
    name = body.get("name")
    if name is None:
        raise _missing("name")
    if not isinstance(name, str) or len(name) > MAX_NAME:
        raise _bad("name", f"must be a string of at most {MAX_NAME} characters")
    name = clean_text(name)
    if not name:
        raise _bad("name", "must have a visible character once cleaned")
    visibility = body.get("visibility", "public")
    if visibility not in ("public", "private"):
        raise _bad("visibility", "must be 'public' or 'private'")
    prizes = body.get("prizes", list(DEFAULT_PRIZES))
    if not isinstance(prizes, list) or not 1 <= len(prizes) <= 3 or not all(
        _whole(p) and 0 <= p <= MAX_PRIZE for p in prizes
    ):
        raise _bad("prizes", f"must be a list of 1 to 3 whole numbers 0..{MAX_PRIZE}")
    fmt = body.get("format", {"kind": "game"})
    if not isinstance(fmt, dict) or fmt.get("kind") not in ("game", "match"):
        raise _bad("format", "must be {\"kind\": \"game\"} or {\"kind\": \"match\", \"length\": n}")
    length = 0
    if fmt["kind"] == "match":
        given = fmt.get("length")
        if not isinstance(given, int) or isinstance(given, bool) \
                or not 1 <= given <= max_match_length:
            raise _bad("format", f"length must be a whole number 1..{max_match_length}")
        length = given
    return TournamentSpec(name, str(visibility), tuple(prizes), int(length))


def parse_player(value: Any, field: str = "player") -> str:
    if value is None:
        raise _missing(field)
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_PLAYER_ID \
            or not PLAYER_ID.fullmatch(value):
        raise _bad(field, f"must be a player id: 1..{MAX_PLAYER_ID} letters, digits, '_' "
                   "or '-'")
    return value


def parse_pairs(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs = body.get("pairs")
    if pairs is None:
        raise _missing("pairs")
    if not isinstance(pairs, list) or not 1 <= len(pairs) <= MAX_PAIRS:
        raise _bad("pairs", f"must be a list of 1..{MAX_PAIRS} pairs of player ids")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise _bad("pairs", "each pair must be a list of two player ids")
        a, b = parse_player(pair[0], "pairs"), parse_player(pair[1], "pairs")
        if a == b:
            raise _bad("pairs", f"pairs {a!r} with themselves")
        for p in (a, b):
            if p in seen:
                raise _bad("pairs", f"names {p!r} twice")
            seen.add(p)
        out.append((a, b))
    return out


def parse_podium(body: Mapping[str, Any]) -> list[str]:
    players = body.get("players")
    if players is None:
        raise _missing("players")
    if not isinstance(players, list) or not 1 <= len(players) <= 3:
        raise _bad("players", "must be a list of 1 to 3 player ids, best first")
    names = [parse_player(p, "players") for p in players]
    if len(set(names)) != len(names):
        raise _bad("players", "names a player twice")
    return names


def parse_no_show(body: Mapping[str, Any]) -> float:
    value = body.get("no_show_seconds", DEFAULT_NO_SHOW)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not MIN_NO_SHOW <= value <= MAX_NO_SHOW:
        raise _bad("no_show_seconds", f"must be a number of seconds {MIN_NO_SHOW:g}.."
                   f"{MAX_NO_SHOW:g}")
    return float(value)


def parse_mine(query: Mapping[str, str]) -> bool:
    """``mine``: ``1`` lists the calling runner's own tournaments, ``0`` (default) the
    public ones."""
    raw = query.get("mine", "0")
    if raw not in ("0", "1"):
        raise _bad("mine", "must be 0 or 1")
    return raw == "1"


def parse_page(query: Mapping[str, str]) -> tuple[int, int]:
    values = {"offset": 0, "limit": 20}
    for field in values:
        raw = query.get(field)
        if raw is None:
            continue
        try:
            values[field] = int(raw)
        except ValueError:
            raise _bad(field, "must be a whole number") from None
    if not 0 <= values["offset"] <= 1_000_000:
        raise _bad("offset", "must be 0..1000000")
    if not 1 <= values["limit"] <= MAX_PAGE:
        raise _bad("limit", f"must be 1..{MAX_PAGE}")
    return values["offset"], values["limit"]


#: How far ahead a registration deadline may be set (seconds).
MAX_DEADLINE_AHEAD = 366 * 86400.0


@dataclass(frozen=True, slots=True)
class Registration:
    """Who may enter a tournament: ``closed`` (only its runner registers players) or ``open``
    (players join and leave themselves, up to ``cap`` players, until ``deadline`` when set,
    and while the tournament is open)."""

    mode: str  # "closed" | "open"
    cap: int
    deadline: float | None  # Unix seconds; None: until the bracket starts

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "cap": self.cap, "deadline": self.deadline}


CLOSED_REGISTRATION = Registration("closed", MAX_PLAYERS, None)


def parse_registration(value: Any, visibility: str, now: float) -> Registration:
    """The ``registration`` object of a create or a change: ``{"mode": "open"|"closed",
    "cap": 2..MAX_PLAYERS, "deadline": Unix seconds in the future or null}``. Only a public
    tournament opens to players."""
    if value is None:
        return CLOSED_REGISTRATION
    if not isinstance(value, dict):
        raise _bad("registration", "must be an object {mode, cap, deadline}")
    unknown = set(value) - {"mode", "cap", "deadline"}
    if unknown:
        raise _bad("registration", f"has unknown field {sorted(unknown)[0]!r:.40}")
    mode = value.get("mode", "closed")
    if mode not in ("open", "closed"):
        raise _bad("registration", "mode must be 'open' or 'closed'")
    cap = value.get("cap", MAX_PLAYERS)
    if not _whole(cap) or not 2 <= cap <= MAX_PLAYERS:
        raise _bad("registration", f"cap must be a whole number 2..{MAX_PLAYERS}")
    deadline = value.get("deadline")
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) \
                or not now < deadline <= now + MAX_DEADLINE_AHEAD:
            raise _bad("registration", "deadline must be a moment (Unix seconds) in the "
                       "coming year, or null")
        deadline = float(deadline)
    if mode == "open" and visibility != "public":
        raise _bad("registration", "only a public tournament opens to players")
    return Registration(str(mode), int(cap), deadline)


def parse_player_filter(query: Mapping[str, str]) -> str | None:
    """``player``: list the tournaments this player is registered in (open or running)."""
    raw = query.get("player")
    return None if raw is None else parse_player(raw, "player")

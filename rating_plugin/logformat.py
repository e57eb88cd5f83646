"""The settled-games log's records and how they are written: the format the store exports.

One record per applied settlement or podium award, in applied order. The rating store
writes them (:meth:`rating_plugin.store.RatingStore.export_log`); the analysis tools
(:mod:`rating_plugin.analysis`) read them back, generate synthetic ones and replay them.
Pure: records are values, and writing gives lines of text, so any file, pipe or socket can
carry them.

Two formats carry the same fields:

* **JSON Lines** (``.jsonl``, the default): one JSON object per line. ``kind`` is
  ``"table42"`` or ``"fibs"`` for a game, ``"podium"`` for a podium award.
* **CSV** (``.csv``): a header row with :data:`CSV_COLUMNS`, then one row per record; empty
  cells are absent fields, and a podium's ``places`` cell holds the JSON list.

A game's fields: ``seq`` (its place in its ladder's applied order), ``game_id``, ``reason``,
``finished_at`` (Unix seconds), ``cube``, ``match_length`` (FIBS), ``winner``, ``loser``,
``winner_before``/``loser_before`` (ratings before the game), ``winner_after``/``loser_after``
(after it; optional), Table42: ``winner_k``/``loser_k`` and ``winner_recent``/``loser_recent``
(Competitive games in the 7 days before); FIBS: ``winner_experience``/``loser_experience``
(before the match). Synthetic logs add ``winner_skill``/``loser_skill`` (the true strength).
The result is in the names: the ``winner`` won. A podium: ``seq``, ``tournament_id``,
``awarded_at`` and ``places``: ``[{"player", "prize", "before", "after"}, ...]`` best first.

Reading (with every check a file from elsewhere needs) is
:mod:`rating_plugin.analysis.gamelog`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "CSV_COLUMNS",
    "OPTIONAL_FIELDS",
    "GameRecord",
    "Kind",
    "LogRecord",
    "PodiumEntry",
    "PodiumRecord",
    "csv_header",
    "csv_row",
    "json_line",
    "record_dict",
]

Kind = Literal["table42", "fibs"]


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One settled game (Table42) or match (FIBS), as the log carries it (fields: module
    docstring). Ratings are ints on Table42 and floats on FIBS; optional fields are None."""

    ladder: Kind
    seq: int
    game_id: str
    reason: str
    finished_at: float
    cube: int
    match_length: int | None
    winner: str
    loser: str
    winner_before: float
    loser_before: float
    winner_after: float | None = None
    loser_after: float | None = None
    winner_k: int | None = None
    loser_k: int | None = None
    winner_recent: int | None = None
    loser_recent: int | None = None
    winner_experience: int | None = None
    loser_experience: int | None = None
    winner_skill: float | None = None
    loser_skill: float | None = None


@dataclass(frozen=True, slots=True)
class PodiumEntry:
    """One podium place: the player, the prize and (optionally) the rating before/after."""

    player: str
    prize: int
    before: float | None = None
    after: float | None = None


@dataclass(frozen=True, slots=True)
class PodiumRecord:
    """A podium award on the Table42 ladder (fixed prizes, best first)."""

    seq: int
    tournament_id: str
    awarded_at: float
    places: tuple[PodiumEntry, ...]

    @property
    def ladder(self) -> Kind:
        return "table42"


LogRecord = GameRecord | PodiumRecord

#: A game's optional fields: (name, kind) with kind "int" or "num" (int or float).
OPTIONAL_FIELDS: Final = (
    ("winner_after", "num"),
    ("loser_after", "num"),
    ("winner_k", "int"),
    ("loser_k", "int"),
    ("winner_recent", "int"),
    ("loser_recent", "int"),
    ("winner_experience", "int"),
    ("loser_experience", "int"),
    ("winner_skill", "num"),
    ("loser_skill", "num"),
)

#: The CSV header, in order.
CSV_COLUMNS: Final = (
    "kind", "seq", "game_id", "reason", "finished_at", "cube", "match_length", "winner",
    "loser", "winner_before", "loser_before", *(name for name, _ in OPTIONAL_FIELDS),
    "tournament_id", "awarded_at", "places",
)


# -- writing ---------------------------------------------------------------------------------------


def _plain(value: float) -> float:
    """Whole floats as ints (a Table42 rating 1516.0 is written 1516), others unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def record_dict(record: LogRecord) -> dict[str, Any]:
    """The record as the JSON object of its line (absent optional fields left out)."""
    if isinstance(record, PodiumRecord):
        places = []
        for place in record.places:
            entry: dict[str, Any] = {"player": place.player, "prize": place.prize}
            if place.before is not None:
                entry["before"] = _plain(place.before)
            if place.after is not None:
                entry["after"] = _plain(place.after)
            places.append(entry)
        return {
            "kind": "podium",
            "seq": record.seq,
            "tournament_id": record.tournament_id,
            "awarded_at": record.awarded_at,
            "places": places,
        }
    data: dict[str, Any] = {
        "kind": record.ladder,
        "seq": record.seq,
        "game_id": record.game_id,
        "reason": record.reason,
        "finished_at": record.finished_at,
        "cube": record.cube,
    }
    if record.match_length is not None:
        data["match_length"] = record.match_length
    data["winner"] = record.winner
    data["loser"] = record.loser
    data["winner_before"] = _plain(record.winner_before)
    data["loser_before"] = _plain(record.loser_before)
    for name, _ in OPTIONAL_FIELDS:
        value = getattr(record, name)
        if value is not None:
            data[name] = _plain(value)
    return data


def json_line(record: LogRecord) -> str:
    """The record as one JSON Lines line (with its newline). Floats keep every bit."""
    return json.dumps(record_dict(record), separators=(",", ":"), ensure_ascii=False) + "\n"


def csv_header() -> list[str]:
    """The CSV header row."""
    return list(CSV_COLUMNS)


def csv_row(record: LogRecord) -> list[str]:
    """The record as a CSV row under :func:`csv_header` (empty cells for absent fields)."""
    data = record_dict(record)
    if "places" in data:
        data["places"] = json.dumps(data["places"], separators=(",", ":"), ensure_ascii=False)
    return ["" if data.get(name) is None else str(data[name]) for name in CSV_COLUMNS]

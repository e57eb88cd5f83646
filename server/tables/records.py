"""Finished games as records: what the history lists, what a replay steps through (pure).

A record is built once, when a game's end is stored (:func:`game_record`), from the table's
logged events of that game (the lean form, as the log keeps them), its result and the rating
changes; :func:`game_row` is one player's line of it in their history; :func:`replay_events`
turns the record's events into the full form (each with the table's ``state`` after it), the
form a replay draws. No I/O: the store (``server/store/games.py``) keeps the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from server.protocol.lean import apply_event, full_form
from server.protocol.visibility import Audience, audience_of

#: ``result`` of a game by how it ended (``game_over.reason``); a game played out or a double
#: dropped is named by its kind (single, gammon, backgammon).
RESULT_BY_REASON = {"resign": "resign", "timeout": "timeout", "disconnect": "forfeit",
                    "leave": "forfeit"}
ROW_FIELDS = ("game_id", "table", "mode", "match_length", "tournament_id", "players", "names",
              "winner", "points", "result", "rated", "finished_at")


def result_name(reason: str, kind: str) -> str:
    """The history's ``result`` of a game that ended for ``reason`` at ``kind``."""
    return RESULT_BY_REASON.get(reason, kind)


def game_events(log: Iterable[Mapping[str, Any]], game_id: str) -> list[dict[str, Any]]:
    """The events of ``game_id`` in a table's log (any order, repeats allowed): from its
    ``game_start`` to its ``game_over`` and a ``match_over`` right after it, by version."""
    by_version = {int(e.get("v", 0)): dict(e) for e in log}
    out: list[dict[str, Any]] = []
    started = ended = False
    for v in sorted(by_version):
        event = by_version[v]
        kind = event.get("type")
        if not started:
            if kind == "game_start" and event.get("game_id") == game_id:
                started = True
                out.append(event)
            continue
        if ended:
            if kind == "match_over":
                out.append(event)
            break
        out.append(event)
        if kind == "game_over" and event.get("game_id") == game_id:
            ended = True
    return out


def game_record(
    *, table: str, mode: str, match_length: int, tournament_id: str | None,
    result: Mapping[str, Any], players: Sequence[str], names: Sequence[str],
    events: Sequence[bytes], changes: Mapping[str, float], mat_game: str,
    mat_match: str | None, audience: Audience | None = None,
) -> dict[str, Any]:
    """The record of a finished game. ``result`` is the table's result record
    (``FinishedGame.result``), ``players``/``names`` side 0's and side 1's, ``events`` the game's
    events as the log keeps them (each a msgpack map, lean form: from its ``game_start`` to
    its end, cut by :func:`game_events` or by version), ``changes`` each player's rating
    change from it (players without one are absent), ``mat_game``/``mat_match`` the game (and
    its match so far) as ``.mat`` text; ``audience`` who may see it (by default, as its
    ``mode`` has it: :func:`server.protocol.visibility.audience_of`)."""
    rating = result.get("rating") or {}
    return {
        "game_id": result["game_id"],
        "game_no": int(result.get("game_no") or 1),
        "table": table,
        "mode": mode,
        "match_length": match_length,
        "tournament_id": tournament_id,
        "players": list(players),
        "names": list(names),
        "winner": int(result["winner_side"]),
        "points": int(result["points"]),
        "result": result_name(str(result["reason"]), str(result["kind"])),
        "rated": bool(rating.get("rated")),
        "changes": [changes.get(p) for p in players],
        "finished_at": float(result["finished_at"]),
        "events": list(events),
        "mat_game": mat_game,
        "mat_match": mat_match,
        "audience": (audience or audience_of(mode)).to_json(),
    }


def game_row(record: Mapping[str, Any], player: str) -> dict[str, Any]:
    """``player``'s line in their history for ``record`` (``change``: theirs, or None)."""
    row = {key: record[key] for key in ROW_FIELDS}
    players = list(record["players"])
    changes = list(record.get("changes") or (None, None))
    row["change"] = changes[players.index(player)] if player in players else None
    return row


def record_audience(record: Mapping[str, Any]) -> Audience:
    """Who may see the game of ``record`` (a record kept without one: as its mode has it)."""
    return Audience.from_json(record.get("audience"), mode=str(record.get("mode")))


def replay_events(events: Iterable[Mapping[str, Any]],
                  state: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Lean events in the full form: each carries ``state``, the table after it, folded on
    from ``state`` (the table before the first event; None when the first is a
    ``game_start``, which carries its whole state in either form)."""
    out: list[dict[str, Any]] = []
    for event in events:
        try:
            state = apply_event(state, event)
        except ValueError:
            state = None
        out.append(full_form(event, state))
    return out

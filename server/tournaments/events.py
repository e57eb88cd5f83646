"""The WebSocket events of tournaments, and the public shapes of their records (pure).

Events (see PROTOCOL.md, "Tournaments"):

- ``tournament_pairing``: your next match is known (opponent, seeds, no-show deadline);
- ``tournament_table``: your match's table is open (sent just before ``seated``);
- ``tournament_result``: your match is decided (played, forfeited by a no-show, or a bye);
- ``tournament_over``: the bracket is over (the podium);
- ``tournament_cancelled``: the runner cancelled the tournament (no podium);
- ``rating`` with ``reason: "podium"``: a podium prize (public tournaments only).

Each carries an ``event_id`` (:func:`event_id`): it is kept in the player's inbox and
delivered once, live or at the next connection, like the rating events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rating_plugin.store import PodiumAward
from server.tournaments.bracket import Bracket, Match


def public_tournament(t: Mapping[str, Any]) -> dict[str, Any]:
    """A tournament as anyone may see it (the runner's key id left out)."""
    return {
        "id": t["id"], "name": t["name"], "visibility": t["visibility"],
        "prizes": list(t["prizes"]), "format": dict(t["format"]), "status": t["status"],
        "created_at": t["created_at"], "bracket": bool(t["bracket"]),
        "players": list(t["players"]), "podium": t["podium"],
        "registration": dict(t["registration"]),
    }


def tournament_summary(t: Mapping[str, Any]) -> dict[str, Any]:
    """One row of ``GET /api/tournaments``; ``kind`` is the format's kind (game or match)."""
    return {
        "id": t["id"], "name": t["name"], "visibility": t["visibility"], "status": t["status"],
        "players": len(t["players"]), "created_at": t["created_at"],
        "kind": t["format"]["kind"], "length": t["format"].get("length", 0),
        "bracket": bool(t["bracket"]), "registration": dict(t["registration"]),
    }


def podium_record(award: PodiumAward) -> dict[str, Any]:
    """The stored and returned form of a public tournament's award."""
    return {
        "tournament": award.tournament_id, "awarded": True, "reason": None,
        "awarded_at": award.awarded_at,
        "places": [
            {"place": p.place, "player": p.player, "prize": p.prize,
             "rating_before": p.rating_before, "rating_after": p.rating_after}
            for p in award.places
        ],
    }


def private_podium_record(tid: str, players: Sequence[str], at: float) -> dict[str, Any]:
    """A private tournament's podium: recorded, nothing awarded."""
    return {
        "tournament": tid, "awarded": False, "reason": "private_tournament", "awarded_at": at,
        "places": [
            {"place": i + 1, "player": p, "prize": 0, "rating_before": None,
             "rating_after": None}
            for i, p in enumerate(players)
        ],
    }


def podium_events(name: str, podium: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(player, rating event)`` per place of an awarded podium. ``game_id`` is
    ``<tournament>-podium``; ``event_id`` (``<game_id>:rating:<player>``, the form every
    rating event's has) lets the node deliver it once: live, or from the inbox, not both."""
    tid = str(podium["tournament"])
    return [
        (place["player"], {
            "type": "rating", "reason": "podium", "ladder": "table42",
            "game_id": f"{tid}-podium", "table": None, "tournament": tid,
            "tournament_name": name, "player": place["player"], "place": place["place"],
            "opponent": None, "won": None, "old": place["rating_before"],
            "new": place["rating_after"], "change": place["prize"],
            "finished_at": podium["awarded_at"],
            "event_id": f"{tid}-podium:rating:{place['player']}",
        })
        for place in podium["places"]
    ]


def bracket_view(tid: str, status: str, bracket: Bracket) -> dict[str, Any]:
    """``GET /api/tournaments/{id}/bracket``."""
    data = bracket.to_dict()
    return {
        "id": tid, "status": status, "seeds": data["seeds"], "rounds": data["rounds"],
        "third_place": data["third_place"], "podium": data["podium"],
        "no_show_seconds": data["no_show_seconds"],
    }


def event_id(tid: str, kind: str, about: str, player: str) -> str:
    """``<tournament>:<type>:<match, table or "bracket">:<player>``: the same event, however
    often a step is retried, has the same id."""
    return f"{tid}:{kind}:{about}:{player}"


def _opponent(m: Match, player: str) -> str | None:
    a, b = m.players
    return b if player == a else a


def round_name(m: Match, bracket: Bracket) -> str:
    """``final``, ``third_place``, ``semi_final`` or ``round`` (any other round)."""
    rounds = len(bracket.rounds)
    if m.round == 0:
        return "third_place"
    if m.round == rounds:
        return "final"
    if m.round == rounds - 1:
        return "semi_final"
    return "round"


def pairing_events(tid: str, m: Match, bracket: Bracket, *, name: str = "",
                   call: float = 0.0) -> list[tuple[str, dict[str, Any]]]:
    """``tournament_pairing``: ``name`` the tournament's, ``round_name`` which round,
    ``opens_at`` the earliest moment the table opens (the call's end), ``deadline`` when a
    player not ready (connected, and seated at no other table) forfeits."""
    out = []
    opens_at = None if m.paired_at is None else \
        m.paired_at + min(call, bracket.no_show_seconds / 2)
    for p in m.players:
        if p is None:
            continue
        out.append((p, {
            "type": "tournament_pairing", "tournament": tid, "name": name, "match": m.match,
            "round": m.round, "rounds": len(bracket.rounds),
            "round_name": round_name(m, bracket), "player": p, "opponent": _opponent(m, p),
            "seed": bracket.seed_of(p), "seeds": list(m.seeds), "deadline": m.deadline,
            "opens_at": opens_at,
            "event_id": event_id(tid, "tournament_pairing", m.match, p),
        }))
    return out


def table_events(tid: str, m: Match, table: str, bracket: Bracket | None = None, *,
                 name: str = "") -> list[tuple[str, dict[str, Any]]]:
    rounds = len(bracket.rounds) if bracket is not None else None
    which = round_name(m, bracket) if bracket is not None else None
    return [
        (p, {"type": "tournament_table", "tournament": tid, "name": name, "match": m.match,
             "round": m.round, "rounds": rounds, "round_name": which, "table": table,
             "player": p, "opponent": _opponent(m, p),
             "event_id": event_id(tid, "tournament_table", table, p)})
        for p in m.players if p is not None
    ]


def result_events(tid: str, m: Match) -> list[tuple[str, dict[str, Any]]]:
    return [
        (p, {"type": "tournament_result", "tournament": tid, "match": m.match,
             "round": m.round, "status": str(m.status), "winner": m.winner,
             "loser": m.loser, "player": p, "won": p == m.winner,
             "event_id": event_id(tid, "tournament_result", m.match, p)})
        for p in m.players if p is not None
    ]


def over_events(tid: str, bracket: Bracket,
                podium: Mapping[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    places = list(bracket.podium or ())
    return [
        (p, {"type": "tournament_over", "tournament": tid, "podium": places,
             "awarded": bool(podium and podium.get("awarded")), "player": p,
             "event_id": event_id(tid, "tournament_over", "bracket", p)})
        for p in bracket.seeds
    ]


def cancelled_events(t: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``tournament_cancelled`` to every registered player of ``t``."""
    return [
        (p, {"type": "tournament_cancelled", "tournament": t["id"], "name": t["name"],
             "player": p})
        for p in t["players"]
    ]

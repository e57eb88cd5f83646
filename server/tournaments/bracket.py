"""A seeded single-elimination bracket as a pure state machine (no asyncio, aiohttp or redis).

The driver (``driver.py``) owns the clock, the tables and Redis; this module only decides.

Seeding. Entrants come in seed order (seed 1 = best, see :func:`seeding`). The field is
padded to the next power of two, ``size``; seed ``s`` meets seed ``size + 1 - s`` in the
first round, laid out so that seeds 1 and 2 can only meet in the final
(:func:`seed_order`: for 16, 1 v 16, 8 v 9, 4 v 13, 5 v 12, 2 v 15, 7 v 10, 3 v 14, 6 v 11).
Seeds beyond the field are byes, so the top seeds get them.

Matches. ``r<round>m<index>`` (both from 1) in the rounds, ``third`` for the third-place
match between the two semi-final losers (when there are semi-finals). Status:

- ``pending``  a player is not known yet (an earlier match is not decided);
- ``ready``    both players known, waiting for both to be ready (the driver opens the table);
  ``paired_at`` is when the pairing went out to the players (:meth:`Bracket.paired`) and
  ``deadline`` (``paired_at + no_show_seconds``; None until the pairing went out) when a
  player still not ready forfeits (a no-show);
- ``playing``  the table is open (``table``);
- ``done``     played; ``winner`` set;
- ``bye``      one player only: they go through without playing;
- ``forfeit``  decided by a no-show: the present player goes through (both absent: the
  better seed goes through).

The podium is (final winner, final loser, third-place winner); a field of two has no third
place. Every change returns a new :class:`Bracket`; :meth:`Bracket.to_dict` /
:meth:`Bracket.from_dict` are the stored and served form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

MIN_ENTRANTS = 2
MAX_ENTRANTS = 128
THIRD = "third"


class BracketError(ValueError):
    """A change the bracket refuses (unknown match, wrong player, wrong status)."""


class MatchStatus(StrEnum):
    PENDING = "pending"
    READY = "ready"
    PLAYING = "playing"
    DONE = "done"
    BYE = "bye"
    FORFEIT = "forfeit"


DECIDED = frozenset({MatchStatus.DONE, MatchStatus.BYE, MatchStatus.FORFEIT})


@dataclass(frozen=True, slots=True)
class Entrant:
    """A registered player as seeding sees them: Table42 ``rating``, FIBS ``is_new``."""

    player: str
    rating: int
    is_new: bool = False


def seeding(entrants: Iterable[Entrant]) -> list[Entrant]:
    """Seed order: Table42 rating, best first; equal ratings by player id (a before b)."""
    return sorted(entrants, key=lambda e: (-e.rating, e.player))


def bracket_size(count: int) -> int:
    """The next power of two >= ``count`` (at least 2)."""
    size = 2
    while size < count:
        size *= 2
    return size


def seed_order(size: int) -> list[int]:
    """First-round slots, top to bottom: pairs (order[0], order[1]), (order[2], order[3]) ..."""
    if size < 2 or size & (size - 1):
        raise BracketError(f"size must be a power of two >= 2, got {size}")
    order = [1]
    while len(order) < size:
        n = 2 * len(order) + 1
        order = [s for top in order for s in (top, n - top)]
    return order


@dataclass(frozen=True, slots=True)
class Match:
    match: str
    round: int  # 1.. in the rounds; 0 for the third-place match
    seeds: tuple[int | None, int | None]
    players: tuple[str | None, str | None]
    status: MatchStatus = MatchStatus.PENDING
    table: str | None = None
    winner: str | None = None
    deadline: float | None = None
    tables: tuple[str, ...] = ()  # every table opened for it (a lost one is replaced)
    paired_at: float | None = None

    @property
    def loser(self) -> str | None:
        if self.winner is None or self.status is MatchStatus.BYE:
            return None
        a, b = self.players
        return b if self.winner == a else a

    @property
    def is_decided(self) -> bool:
        return self.status in DECIDED

    def to_dict(self) -> dict[str, Any]:
        return {
            "match": self.match, "round": self.round, "seeds": list(self.seeds),
            "players": list(self.players), "table": self.table, "winner": self.winner,
            "status": str(self.status), "deadline": self.deadline, "tables": list(self.tables),
            "paired_at": self.paired_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Match:
        s0, s1 = data["seeds"]
        p0, p1 = data["players"]
        return cls(
            match=str(data["match"]), round=int(data["round"]), seeds=(s0, s1),
            players=(p0, p1), status=MatchStatus(data["status"]), table=data.get("table"),
            winner=data.get("winner"), deadline=data.get("deadline"),
            tables=tuple(data.get("tables") or ()), paired_at=data.get("paired_at"),
        )


@dataclass(frozen=True, slots=True)
class Bracket:
    seeds: tuple[str, ...]  # player of seed i + 1
    rounds: tuple[tuple[Match, ...], ...]
    third_place: Match | None
    no_show_seconds: float

    # --- reading --------------------------------------------------------------------------

    def matches(self) -> list[Match]:
        out = [m for r in self.rounds for m in r]
        if self.third_place is not None:
            out.append(self.third_place)
        return out

    def get(self, match_id: str) -> Match:
        for m in self.matches():
            if m.match == match_id:
                return m
        raise BracketError(f"no match {match_id}")

    @property
    def final(self) -> Match:
        return self.rounds[-1][0]

    @property
    def podium(self) -> tuple[str, ...] | None:
        """(first, second, third) once the final and the third-place match are decided."""
        final = self.final
        if not final.is_decided or final.winner is None:
            return None
        places = [final.winner]
        if final.loser is not None:
            places.append(final.loser)
        third = self.third_place
        if third is not None:
            if not third.is_decided:
                return None
            if third.winner is not None:
                places.append(third.winner)
        return tuple(places)

    @property
    def is_over(self) -> bool:
        return self.podium is not None

    def seed_of(self, player: str) -> int:
        return self.seeds.index(player) + 1

    # --- changes --------------------------------------------------------------------------

    def _with(self, match: Match) -> Bracket:
        if match.match == THIRD:
            return replace(self, third_place=match)
        rounds = tuple(
            tuple(match if m.match == match.match else m for m in r) for r in self.rounds
        )
        return replace(self, rounds=rounds)

    def resolve(self, now: float) -> Bracket:
        """Carry winners (and semi-final losers) forward and settle byes; a match that just got
        both players is ``ready``, with no no-show deadline until its pairing goes out
        (:meth:`paired`; ``now`` sets no deadline)."""
        state = self
        for r in range(1, len(state.rounds)):
            for i, m in enumerate(state.rounds[r]):
                feeders = state.rounds[r - 1][2 * i], state.rounds[r - 1][2 * i + 1]
                players = tuple(f.winner if f.is_decided else None for f in feeders)
                seeds = tuple(None if p is None else state.seed_of(p) for p in players)
                if m.players != players and m.status is MatchStatus.PENDING:
                    state = state._with(replace(m, players=(players[0], players[1]),
                                                seeds=(seeds[0], seeds[1])))
        third = state.third_place
        if third is not None and third.status is MatchStatus.PENDING:
            semis = state.rounds[-2]
            losers = tuple(s.loser if s.is_decided else None for s in semis)
            seeds = tuple(None if p is None else state.seed_of(p) for p in losers)
            if third.players != losers:
                state = state._with(replace(third, players=(losers[0], losers[1]),
                                            seeds=(seeds[0], seeds[1])))
        for m in state.matches():
            if m.status is not MatchStatus.PENDING:
                continue
            if all(p is not None for p in m.players):
                state = state._with(replace(m, status=MatchStatus.READY, deadline=None))
                break
            if state._feeders_decided(m):
                present = [p for p in m.players if p is not None]
                winner = present[0] if present else None
                state = state._with(replace(m, status=MatchStatus.BYE, winner=winner))
                break  # carried forward before anything else is decided
        if state != self:
            return state.resolve(now)
        return state

    def _feeders_decided(self, m: Match) -> bool:
        if m.match == THIRD:
            return all(s.is_decided for s in self.rounds[-2])
        if m.round == 1:
            return True
        r = m.round - 1
        i = self.rounds[r].index(m)
        return all(f.is_decided for f in self.rounds[r - 1][2 * i: 2 * i + 2])

    def paired(self, match_id: str, at: float) -> Bracket:
        """The ready match's pairing went out to its players at ``at``: its no-show deadline
        is ``at + no_show_seconds``."""
        m = self.get(match_id)
        if m.status is not MatchStatus.READY:
            raise BracketError(f"match {match_id} is {m.status}, not ready")
        return self._with(replace(m, paired_at=at, deadline=at + self.no_show_seconds))

    def open_table(self, match_id: str, table: str) -> Bracket:
        m = self.get(match_id)
        if m.status is not MatchStatus.READY:
            raise BracketError(f"match {match_id} is {m.status}, not ready")
        return self._with(replace(m, status=MatchStatus.PLAYING, table=table,
                                  tables=(*m.tables, table)))

    def table_lost(self, match_id: str, now: float) -> Bracket:
        """The match's table is gone without a result (its node stopped): ready again, with
        a fresh no-show deadline."""
        m = self.get(match_id)
        if m.status is not MatchStatus.PLAYING:
            raise BracketError(f"match {match_id} is {m.status}, not playing")
        return self._with(replace(m, status=MatchStatus.READY, table=None,
                                  deadline=now + self.no_show_seconds))

    def record_result(self, match_id: str, winner: str) -> Bracket:
        m = self.get(match_id)
        if m.status is not MatchStatus.PLAYING:
            raise BracketError(f"match {match_id} is {m.status}, not playing")
        if winner not in m.players:
            raise BracketError(f"{winner} does not play match {match_id}")
        return self._with(replace(m, status=MatchStatus.DONE, winner=winner, deadline=None))

    def no_show(self, match_id: str, absent: Iterable[str]) -> Bracket:
        """Decide a ready match whose deadline passed: the present player goes through;
        with both absent, the better seed does."""
        m = self.get(match_id)
        if m.status is not MatchStatus.READY:
            raise BracketError(f"match {match_id} is {m.status}, not ready")
        gone = set(absent)
        a, b = m.players
        assert a is not None and b is not None
        present = [p for p in (a, b) if p not in gone]
        winner = present[0] if len(present) == 1 else min((a, b), key=self.seed_of)
        return self._with(replace(m, status=MatchStatus.FORFEIT, winner=winner, deadline=None))

    # --- storage --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds),
            "rounds": [[m.to_dict() for m in r] for r in self.rounds],
            "third_place": None if self.third_place is None else self.third_place.to_dict(),
            "podium": None if self.podium is None else list(self.podium),
            "no_show_seconds": self.no_show_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bracket:
        third = data.get("third_place")
        return cls(
            seeds=tuple(data["seeds"]),
            rounds=tuple(tuple(Match.from_dict(m) for m in r) for r in data["rounds"]),
            third_place=None if third is None else Match.from_dict(third),
            no_show_seconds=float(data["no_show_seconds"]),
        )


def build(players: Sequence[str], *, no_show_seconds: float, now: float) -> Bracket:
    """The bracket of ``players`` in seed order (first = seed 1), resolved at ``now``."""
    if not MIN_ENTRANTS <= len(players) <= MAX_ENTRANTS:
        raise BracketError(f"a bracket needs {MIN_ENTRANTS}..{MAX_ENTRANTS} players, "
                           f"got {len(players)}")
    if len(set(players)) != len(players):
        raise BracketError("a player is entered twice")
    size = bracket_size(len(players))
    order = seed_order(size)
    count = len(players)

    def seat(seed: int) -> tuple[int | None, str | None]:
        return (seed, players[seed - 1]) if seed <= count else (None, None)

    first: list[Match] = []
    for i in range(size // 2):
        (s0, p0), (s1, p1) = seat(order[2 * i]), seat(order[2 * i + 1])
        first.append(Match(f"r1m{i + 1}", 1, (s0, s1), (p0, p1)))
    rounds = [tuple(first)]
    matches = size // 4
    r = 2
    while matches >= 1:
        rounds.append(tuple(Match(f"r{r}m{i + 1}", r, (None, None), (None, None))
                            for i in range(matches)))
        matches //= 2
        r += 1
    third = Match(THIRD, 0, (None, None), (None, None)) if len(rounds) >= 2 else None
    bracket = Bracket(tuple(players), tuple(rounds), third, float(no_show_seconds))
    return bracket.resolve(now)

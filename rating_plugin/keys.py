"""Every Redis key the rating store uses, in one place.

A key is ``<prefix><{tag}>:<kind>...``. The prefix (default empty) separates deployments or
tests sharing one Redis; it may not contain ``{`` or ``}``, so the tag below is always the
first brace pair of the key and decides the Redis Cluster hash slot.

Two hash tags:

* ``{rated}`` holds both rated ladders (Table42 and FIBS), their settlement records, podium
  awards and sequence counters. One settlement touches a record, a counter and two players'
  ratings, windows and histories: they must share a slot, and so the whole rated state lives
  on one shard. Keeping both ladders under one tag also lets a settlement see a game id
  already used on the other ladder, inside the same atomic step.
* ``{boosted}`` holds the Boosted leaderboard and its per-game records.

Layout (``P`` is the prefix, ``L`` a rated ladder: ``table42`` or ``fibs``)::

    P{rated}:game:<game_id>          string  settlement record, kept: exactly-once and history
    P{rated}:podium:<tournament_id>  string  podium award record
    P{rated}:L:seq                   string  the ladder's applied-order counter
    P{rated}:L:log                   list    record keys in applied order (entry i: seq i + 1)
    P{rated}:L:rating:<player>       hash    rating, games, wins, losses; experience (fibs);
                                             newest (table42: finish ms of the newest game)
    P{rated}:L:history:<player>      list    keys of the player's records, newest first, bounded
    P{rated}:L:board                 zset    leaderboard: member player, score rating
    P{rated}:table42:window:<player> zset    Competitive games: member game id, score finish ms
    P{rated}:pair:<n>:<a>:<b>        zset    a pair's rated games (a < b, n = len(a)): member
                                             game id, score start ms (the pair limit)
    P{boosted}:game:<game_id>        string  Boosted record
    P{boosted}:board                 zset    Boosted leaderboard: member player, score points

Records are newline-separated fields; each writing script's header gives its layout.

Ids are the last part of each key and every kind has its own fixed middle part, so no two
kinds can collide whatever the ids contain (ids are checked to contain no braces).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rating_plugin.errors import InvalidInputError

__all__ = ["BOOSTED_TAG", "RATED_TAG", "KeySpace", "check_prefix"]

RATED_TAG: Final = "{rated}"
BOOSTED_TAG: Final = "{boosted}"
MAX_PREFIX_LENGTH: Final = 64


def check_prefix(prefix: str) -> str:
    """Accept a key prefix: a str of at most 64 characters without ``{`` or ``}``."""
    if not isinstance(prefix, str):
        raise InvalidInputError("prefix", f"must be a str, got {type(prefix).__name__}")
    if len(prefix) > MAX_PREFIX_LENGTH:
        raise InvalidInputError("prefix", f"must be at most {MAX_PREFIX_LENGTH} characters")
    if "{" in prefix or "}" in prefix:
        raise InvalidInputError("prefix", "must not contain '{' or '}' (they pick the hash slot)")
    return prefix


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Builds the store's keys under one prefix (see the module docstring for the layout)."""

    prefix: str = ""

    def __post_init__(self) -> None:
        check_prefix(self.prefix)

    @property
    def rated(self) -> str:
        """Start of every key under the ``{rated}`` tag."""
        return f"{self.prefix}{RATED_TAG}:"

    @property
    def boosted(self) -> str:
        """Start of every key under the ``{boosted}`` tag."""
        return f"{self.prefix}{BOOSTED_TAG}:"

    def game(self, game_id: str) -> str:
        """The settlement record of a rated game (either ladder)."""
        return f"{self.rated}game:{game_id}"

    def podium(self, tournament_id: str) -> str:
        """The podium award record of a tournament."""
        return f"{self.rated}podium:{tournament_id}"

    def seq(self, ladder: str) -> str:
        """The applied-order counter of a rated ladder."""
        return f"{self.rated}{ladder}:seq"

    def log(self, ladder: str) -> str:
        """The applied-order log of a rated ladder: record keys, oldest first (Table42: games
        and podium awards), so entry ``i`` is the record whose ``seq`` is ``i + 1``."""
        return f"{self.rated}{ladder}:log"

    def rating(self, ladder: str, player: str) -> str:
        """A player's rating hash on a rated ladder."""
        return f"{self.rated}{ladder}:rating:{player}"

    def history(self, ladder: str, player: str) -> str:
        """A player's history list on a rated ladder."""
        return f"{self.rated}{ladder}:history:{player}"

    def board(self, ladder: str) -> str:
        """The leaderboard of a rated ladder, or of Boosted points for ``"boosted"``."""
        if ladder == "boosted":
            return f"{self.boosted}board"
        return f"{self.rated}{ladder}:board"

    def window(self, player: str) -> str:
        """A player's 7-day window of Competitive (Table42) games."""
        return f"{self.rated}table42:window:{player}"

    def pair(self, a: str, b: str) -> str:
        """The rated games of the pair ``a``, ``b`` (either order) in the pair-limit window.
        The first id's length keeps any two pairs apart whatever the ids contain."""
        first, second = sorted((a, b))
        return f"{self.rated}pair:{len(first)}:{first}:{second}"

    def boosted_game(self, game_id: str) -> str:
        """The record of a Boosted game."""
        return f"{self.boosted}game:{game_id}"

"""Synthetic game logs with a known truth, to try calibration and replay without real data.

Pure and deterministic (one seeded ``random.Random``). Each player gets a true skill drawn
from a normal distribution; each game pairs two players (heavy-week players are picked far
more often, so they pass 50 games in 7 days and play at K 16) and the winner is drawn from
the chosen curve: ``P(a beats b) = 1 / (1 + 10 ** (-(skill_a - skill_b) / divisor))`` on
Table42, with the difference multiplied by ``sqrt(n)`` and the FIBS scale on FIBS.

The pre-game ratings the log carries are either

* ``"replayed"`` (the default): what the live rules would have given, computed by a
  :class:`~rating_plugin.analysis.replay.Replayer` as the games are drawn, so the log looks exactly
  like a store export (and replaying it under the current rules reproduces it); or
* ``"skill"``: the true skills themselves (Table42: rounded to whole points), i.e. perfectly
  settled ratings. Calibrating such a log recovers the curve's divisor, which is how the
  fitting is tested; on a ``"replayed"`` log the fit measures the ratings' own calibration,
  which rating noise pulls towards a larger divisor.

Either way every record also carries ``winner_skill``/``loser_skill``.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any, Final, Literal, TypeVar

from rating_plugin.analysis.replay import Replayer, Rules
from rating_plugin.errors import InvalidInputError
from rating_plugin.logformat import GameRecord, LogRecord, PodiumEntry, PodiumRecord
from rating_plugin.rounding import round_half_away

__all__ = ["DEFAULT_CUBES", "SynthConfig", "generate"]

#: Cube values and their shares when a game ends (most games end undoubled or at 2).
DEFAULT_CUBES: Final = ((1, 0.55), (2, 0.30), (4, 0.10), (8, 0.04), (16, 0.01))
MATCH_LENGTHS: Final = ((1, 0.3), (3, 0.25), (5, 0.25), (7, 0.15), (11, 0.05))
REASONS: Final = (("normal", 0.6), ("gammon", 0.2), ("resign", 0.15), ("backgammon", 0.05))
MAX_GAMES: Final = 100_000_000
MAX_PLAYERS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class SynthConfig:
    """What to generate.

    ``games``: records to draw; ``players``: how many; ``ladder``: ``"table42"`` or
    ``"fibs"``; ``divisor``: the true curve's divisor (Table42 D, or the FIBS scale);
    ``skill_sd``: spread of true skills around 1500; ``heavy_share``: share of players who
    play ``heavy_weight`` times as often as the others; ``days``: span of finish times;
    ``late_share``: share of games settled late (their finish time set back by up to
    ``late_seconds``); ``podium_every``: a podium award (+50/+25/+15 to three random players)
    after every that many games (0: none; Table42 only); ``ratings``: ``"replayed"`` or
    ``"skill"`` (module docstring); ``rules``: the rules of the replayed ratings.
    """

    games: int
    players: int = 200
    ladder: Literal["table42", "fibs"] = "table42"
    divisor: float = 1200.0
    skill_sd: float = 150.0
    heavy_share: float = 0.05
    heavy_weight: float = 20.0
    days: float = 30.0
    start: float = 1_700_000_000.0
    late_share: float = 0.0
    late_seconds: float = 3600.0
    podium_every: int = 0
    ratings: Literal["replayed", "skill"] = "replayed"
    seed: int = 1
    rules: Rules | None = None

    def __post_init__(self) -> None:
        def bad(name: str, problem: str) -> InvalidInputError:
            return InvalidInputError(name, f"{problem}, got {getattr(self, name)!r}")

        if type(self.games) is not int or not 0 <= self.games <= MAX_GAMES:
            raise bad("games", f"must be a whole number 0..{MAX_GAMES}")
        if type(self.players) is not int or not 2 <= self.players <= MAX_PLAYERS:
            raise bad("players", f"must be a whole number 2..{MAX_PLAYERS}")
        if self.ladder not in ("table42", "fibs"):
            raise bad("ladder", "must be table42 or fibs")
        if not (math.isfinite(self.divisor) and self.divisor > 0):
            raise bad("divisor", "must be a positive number")
        if not (math.isfinite(self.skill_sd) and self.skill_sd >= 0):
            raise bad("skill_sd", "must be a number >= 0")
        for name in ("heavy_share", "late_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise bad(name, "must be between 0 and 1")
        if not 1 <= self.heavy_weight <= 1000:
            raise bad("heavy_weight", "must be between 1 and 1000")
        if not 0 < self.days <= 36500:
            raise bad("days", "must be between 0 and 36500")
        if not 0 <= self.late_seconds <= 30 * 86400:
            raise bad("late_seconds", "must be between 0 and 30 days")
        if type(self.podium_every) is not int or self.podium_every < 0:
            raise bad("podium_every", "must be a whole number >= 0")
        if self.ratings not in ("replayed", "skill"):
            raise bad("ratings", "must be replayed or skill")


_T = TypeVar("_T")


def _picker(rng: random.Random, pairs: tuple[tuple[_T, float], ...]) -> Iterator[_T]:
    values = [value for value, _ in pairs]
    cumulative = list(accumulate(weight for _, weight in pairs))
    total = cumulative[-1]
    while True:
        yield values[min(bisect_right(cumulative, rng.random() * total), len(values) - 1)]


def generate(config: SynthConfig) -> Iterator[LogRecord]:
    """Draw the log, one record at a time in applied order (memory: the players only)."""
    rng = random.Random(config.seed)
    width = len(str(config.players - 1))
    names = [f"p{i:0{width}d}" for i in range(config.players)]
    skills = [rng.gauss(1500.0, config.skill_sd) for _ in names]
    heavy_count = round_half_away(config.heavy_share * config.players)
    heavy = set(rng.sample(range(config.players), heavy_count))
    weights = [config.heavy_weight if i in heavy else 1.0 for i in range(config.players)]
    cumulative = list(accumulate(weights))
    total = cumulative[-1]
    cubes = _picker(rng, DEFAULT_CUBES)
    lengths = _picker(rng, MATCH_LENGTHS)
    reasons = _picker(rng, REASONS)
    replayer = Replayer(config.rules)
    is_fibs = config.ladder == "fibs"
    step = config.days * 86400 / max(config.games, 1)
    seq = 0
    podium = 0

    def pick() -> int:
        return min(bisect_right(cumulative, rng.random() * total), config.players - 1)

    for i in range(config.games):
        a = pick()
        b = pick()
        while b == a:
            b = pick()
        length = next(lengths) if is_fibs else None
        scale = math.sqrt(length) if length is not None else 1.0
        try:
            p_a = 1.0 / (1.0 + 10.0 ** (-(skills[a] - skills[b]) * scale / config.divisor))
        except OverflowError:
            p_a = 0.0
        winner, loser = (a, b) if rng.random() < p_a else (b, a)
        finished = config.start + i * step + rng.random() * step
        if config.late_share and rng.random() < config.late_share:
            finished -= rng.random() * config.late_seconds
        seq += 1
        game = GameRecord(
            "fibs" if is_fibs else "table42",
            seq,
            f"m{seq}" if is_fibs else f"g{seq}",  # ids are unique across both ladders
            next(reasons),
            round_half_away(finished * 1000) / 1000,
            next(cubes),
            length,
            names[winner],
            names[loser],
            0,
            0,
            winner_skill=round_half_away(skills[winner] * 100) / 100,
            loser_skill=round_half_away(skills[loser] * 100) / 100,
        )
        yield _fill(game, replayer, config)
        if not is_fibs and config.podium_every and (i + 1) % config.podium_every == 0:
            podium += 1
            seq += 1
            places = rng.sample(range(config.players), 3)
            award = PodiumRecord(
                seq,
                f"t{podium}",
                round_half_away(finished * 1000) / 1000,
                tuple(
                    PodiumEntry(names[p], prize)
                    for p, prize in zip(places, (50, 25, 15), strict=True)
                ),
            )
            done = replayer.apply(award)
            yield PodiumRecord(
                award.seq,
                award.tournament_id,
                award.awarded_at,
                tuple(
                    PodiumEntry(place.player, place.prize, before, after)
                    for place, before, after in zip(
                        award.places, done.before, done.after, strict=True
                    )
                ),
            )


def _fill(game: GameRecord, replayer: Replayer, config: SynthConfig) -> GameRecord:
    """The game with its pre-game ratings (and, when replayed, everything the store logs)."""
    done = replayer.apply(game)
    if config.ratings == "skill":
        w_skill, l_skill = game.winner_skill or 0.0, game.loser_skill or 0.0
        if game.ladder == "table42":
            return replace(game, winner_before=round_half_away(w_skill),
                           loser_before=round_half_away(l_skill))
        return replace(game, winner_before=w_skill, loser_before=l_skill)
    fields: dict[str, Any] = {
        "winner_before": done.before[0],
        "loser_before": done.before[1],
        "winner_after": done.after[0],
        "loser_after": done.after[1],
    }
    if done.k is not None and done.recent is not None:
        fields.update(
            winner_k=done.k[0], loser_k=done.k[1],
            winner_recent=done.recent[0], loser_recent=done.recent[1],
        )
    if done.experience is not None:
        fields.update(winner_experience=done.experience[0], loser_experience=done.experience[1])
    return replace(game, **fields)



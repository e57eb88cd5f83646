"""A match to n points: the score, the Crawford rule and the match winner."""

from __future__ import annotations

from dataclasses import dataclass

from server.protocol.errors import ErrorCode
from server.rules.dice import DiceSource, SecretDice
from server.rules.errors import IllegalActionError
from server.rules.game import Game
from server.rules.game_values import MAX_CUBE, EndReason, Outcome, Phase, forfeit_reason
from server.rules.position import Side, as_side

MAX_MATCH_LENGTH = 99
"""Longest match accepted (GNU Backgammon's Match ID could hold 32767)."""


@dataclass(frozen=True, slots=True)
class MatchForfeit:
    """A match lost by forfeit: ``side`` forfeited for ``reason``."""

    side: Side
    reason: EndReason


class Match:
    """A match to ``length`` points, game after game.

    - Each game's points (kind x cube) go to its winner; there is no cap, so a score can
      pass ``length`` (winning a gammon at 4-4 in a 5-point match makes it 6-4).
    - The Crawford game, the first game after either side first reaches ``length - 1``,
      is played without the cube; the games after it ("post-Crawford") use the cube again.
    - A 1-point match never uses the cube.
    - ``forfeit(side, reason)`` loses the current game (single, at its cube) and the match.

    ``next_game()`` creates each game (including the first); the caller starts it with
    ``Game.start()``.
    """

    def __init__(
        self, length: int, *, dice: DiceSource | None = None, max_cube: int = MAX_CUBE
    ) -> None:
        if isinstance(length, bool) or not isinstance(length, int):
            raise ValueError(f"length must be an int, got {length!r}")
        if not 1 <= length <= MAX_MATCH_LENGTH:
            raise ValueError(f"length must be in 1..{MAX_MATCH_LENGTH}, got {length}")
        self.length = length
        self.max_cube = max_cube
        self._dice: DiceSource = dice if dice is not None else SecretDice()
        self.games: list[Game] = []
        self.forfeited: MatchForfeit | None = None
        self._crawford_played = False
        self._base_score = (0, 0)  # points of games before ``games`` (see ``resume``)

    @classmethod
    def resume(
        cls, length: int, score: tuple[int, int], *, crawford_played: bool,
        dice: DiceSource | None = None, max_cube: int = MAX_CUBE,
    ) -> Match:
        """A match rebuilt from its score between two games (its earlier games are not
        known): ``score`` counts as already won, ``crawford_played`` says whether the
        Crawford game is behind. The next game comes from ``next_game()`` as usual."""
        match = cls(length, dice=dice, max_cube=max_cube)
        match._base_score = (int(score[0]), int(score[1]))
        match._crawford_played = bool(crawford_played)
        return match

    def use_dice(self, dice: DiceSource) -> None:
        """Roll with ``dice`` from now on (this game and the next ones)."""
        self._dice = dice
        if self.game is not None:
            self.game.use_dice(dice)

    @property
    def game(self) -> Game | None:
        """The current (or last) game, ``None`` before ``next_game()``."""
        return self.games[-1] if self.games else None

    @property
    def score(self) -> tuple[int, int]:
        """Points won so far, ``(side 0, side 1)``, over every finished game."""
        points = list(self._base_score)
        for game in self.games:
            if game.outcome is not None:
                points[game.outcome.winner] += game.outcome.points
        return (points[0], points[1])

    @property
    def is_crawford_game(self) -> bool:
        game = self.game
        return game is not None and game.crawford

    @property
    def is_post_crawford(self) -> bool:
        """Whether the Crawford game has been played and the current game is a later one."""
        return self._crawford_played and not self.is_crawford_game

    @property
    def winner(self) -> Side | None:
        if self.forfeited is not None:
            return self.forfeited.side.opponent
        score = self.score
        if score[0] >= self.length:
            return Side.ZERO
        if score[1] >= self.length:
            return Side.ONE
        return None

    @property
    def is_over(self) -> bool:
        return self.winner is not None

    def next_game(self) -> Game:
        """Begin the next game (phase ``opening``); the previous one must be over."""
        if self.is_over:
            raise IllegalActionError("the match is over", code=ErrorCode.MATCH_OVER)
        current = self.game
        if current is not None and current.phase != Phase.OVER:
            raise IllegalActionError(
                "the current game is not over",
                code=ErrorCode.GAME_IN_PROGRESS
            )
        score = self.score
        crawford = (
            self.length > 1 and not self._crawford_played and self.length - 1 in score
        )
        if crawford:
            self._crawford_played = True
        game = Game(
            dice=self._dice,
            cube_enabled=self.length > 1,
            max_cube=self.max_cube,
            crawford=crawford,
            match_length=self.length,
            score=score,
        )
        self.games.append(game)
        return game

    def forfeit(self, side: Side | int, reason: EndReason | str) -> Outcome | None:
        """``side`` forfeits the match; a game in progress ends as a single-game loss at its
        cube (returned), and the opponent wins the match whatever the score."""
        who = as_side(side)
        if self.is_over:
            raise IllegalActionError("the match is over", code=ErrorCode.MATCH_OVER)
        why = forfeit_reason(reason)
        outcome = None
        game = self.game
        if game is not None and game.phase != Phase.OVER:
            outcome = game.forfeit(who, why)
        self.forfeited = MatchForfeit(who, why)
        return outcome

    def to_dict(self) -> dict[str, object]:
        """JSON-able match state; ``game`` is the current game's ``Game.to_dict()``."""
        winner = self.winner
        return {
            "length": self.length,
            "score": list(self.score),
            "crawford": self.is_crawford_game,
            "post_crawford": self.is_post_crawford,
            "games": len(self.games),
            "winner": None if winner is None else int(winner),
            "forfeit": None
            if self.forfeited is None
            else {"side": int(self.forfeited.side), "reason": str(self.forfeited.reason)},
            "game": None if self.game is None else self.game.to_dict(),
        }

"""What a table's driver reads of its machine (:class:`MachineView`: its identity, status,
seats, game, clocks), for the lobby's parts, matchmaking and the tournaments."""

from __future__ import annotations

from server.protocol.messages import TableMode
from server.rules import Game, Match, Side
from server.tables.machine import Seat, TableMachine, TableStatus
from server.tables.ratings import RatingPlan

__all__ = ["MachineView"]


class MachineView:
    """Read-only properties of ``self.machine``."""

    machine: TableMachine

    @property
    def id(self) -> str:
        return self.machine.id

    @property
    def mode(self) -> TableMode:
        return self.machine.mode

    @property
    def match_length(self) -> int:
        return self.machine.match_length

    @property
    def tournament_id(self) -> str | None:
        return self.machine.tournament_id

    @property
    def created_at(self) -> float:
        return self.machine.created_at

    @property
    def status(self) -> TableStatus:
        return self.machine.status

    @property
    def seats(self) -> list[Seat | None]:
        return self.machine.seats

    @property
    def plan(self) -> RatingPlan | None:
        return self.machine.plan

    @property
    def version(self) -> int:
        return self.machine.version

    @property
    def game(self) -> Game | None:
        return self.machine.game

    @property
    def match(self) -> Match | None:
        return self.machine.match

    @property
    def strikes(self) -> list[int]:
        return self.machine.strikes

    @property
    def deadline(self) -> float | None:
        return self.machine.deadline

    @property
    def is_single_game(self) -> bool:
        return self.match_length == 0

    def side_of(self, player: str) -> Side | None:
        return self.machine.side_of(player)

    def seated_players(self) -> list[str]:
        return self.machine.seated_players()

    def game_id(self) -> str:
        return self.machine.game_id()

    def match_id(self) -> str:
        return self.machine.match_id()


"""What a table and its parts (announcer, finisher, chat) are given: :class:`TableDeps`, one
bundle per node, built by the lobby from the ports (``ports.py``) and the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rating_plugin.store import RatingStore
from server.config import Settings
from server.lobby.delivery import Delivery
from server.lobby.pair_limit import PairLimit
from server.lobby.ports import Clock, Peers, Spawner
from server.metrics import Metrics
from server.rules import DiceSource
from server.store.games import GameRecords
from server.store.persistence import Persistence
from server.store.record_budget import RecordBudget

__all__ = ["TableDeps"]


@dataclass(frozen=True, slots=True)
class TableDeps:
    """The node's parts a table uses; none of them knows the table."""

    settings: Settings
    persistence: Persistence
    delivery: Delivery
    """Replies and events to sockets here (its outbox) and on other nodes (its bus)."""
    clock: Clock
    tasks: Spawner
    metrics: Metrics
    records: GameRecords
    record_budget: RecordBudget
    ratings: RatingStore
    pair_limit: PairLimit
    peers: Peers
    dice_factory: Callable[[], DiceSource]
    summons: Callable[..., None] = lambda actor, table, *, seated: None
    """Asks the sibling worker holding ``actor``'s socket to hand it over (summons.py)."""

    @property
    def node_id(self) -> str:
        return self.settings.node_id

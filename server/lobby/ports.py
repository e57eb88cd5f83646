"""The narrow interfaces the lobby needs from the rest of the node (its ports).

The lobby, the table driver and their collaborators are written against these Protocols, never
against the layers that satisfy them: ``server/net``'s :class:`~server.net.connection.Hub`
is the :class:`Outbox` (the sockets on this node and what each one holds),
:class:`~server.lobby.clock.LoopClock` the :class:`Clock`,
:class:`~server.lobby.tasks.Tasks` the :class:`Spawner`,
:class:`~server.cluster.liveness.NodeLiveness` the :class:`Peers` and
:class:`~server.cluster.bus.NodeBus` the :class:`NodeSender`. ``server/app.py`` wires them
once; a test gives a table a fake outbox, a :class:`~server.lobby.clock.VirtualClock` and a
spawner it awaits itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol

from server.protocol.codec import Outgoing
from server.protocol.messages import TableMode
from server.protocol.node_messages import Actor, NodeMessage
from server.protocol.visibility import Audience
from server.tables.model import TableStatus
from server.tables.ratings import RatingPlan

__all__ = ["Clock", "GameStarter", "Handle", "NodeSender", "Outbox", "Peers", "PlayerPush",
           "Spawner"]


class Handle(Protocol):
    """A timer armed on a :class:`Clock`."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Where the lobby reads time and arms its timers.

    ``now()`` is Unix time (seconds, what events and records carry); ``monotonic()`` only
    measures intervals and is the time base of :meth:`call_at`."""

    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> Handle:
        """Call ``callback(*args)`` once ``monotonic()`` reaches ``when``."""
        ...

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any) -> Handle:
        """Call ``callback(*args)`` ``delay`` seconds from now (0 or less: soon)."""
        ...

    def sleep(self, seconds: float) -> Awaitable[None]: ...


class Spawner(Protocol):
    """Runs a coroutine in the background (a node's shutdown waits for it)."""

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None: ...


class Peers(Protocol):
    """This node's view of the other nodes."""

    @property
    def peers(self) -> Mapping[str, float]:
        """Node id -> Unix time until which it counts as alive."""
        ...

    @property
    def dead_nodes(self) -> set[str]: ...

    def is_live(self, node: str) -> bool: ...

    def is_fresh(self, node: str) -> bool: ...

    def mark_dead(self, node: str) -> bool:
        """Count ``node`` as dead; True the first time."""
        ...

    def back(self, node: str) -> None: ...


class NodeSender(Protocol):
    """The messages this node sends to the others (the node bus)."""

    def send(self, node: str, message: NodeMessage, token: Any = None) -> None: ...

    def broadcast(self, message: NodeMessage) -> None: ...


class Outbox(Protocol):
    """The sockets on this node: writes to them, and what each socket holds (the tables it
    watches, the inbox events written to it). A socket is named by its id; a player by its
    id (all of its sockets here). Writes to a socket that is gone are dropped."""

    def push_player(self, player: str, out: Outgoing) -> bool:
        """Write ``out`` to every socket of ``player`` here; False when there is none."""
        ...

    def push_conn_id(self, conn_id: str, out: Outgoing) -> bool:
        """Write ``out`` to the socket ``conn_id``; False when it is not here."""
        ...

    def push_unique(self, players: Iterable[str], conn_ids: Iterable[str],
                    out: Outgoing) -> None:
        """Write ``out`` once to each socket of ``players`` and of ``conn_ids``."""
        ...

    def begin_gather(self) -> None:
        """Gather the frames written until :meth:`end_gather` (no ``await`` between)."""
        ...

    def end_gather(self) -> None: ...

    def players(self) -> Iterable[str]:
        """The players with a socket here."""
        ...

    def sockets_of(self, player: str) -> list[str]:
        """The ids of ``player``'s sockets here."""
        ...

    def actor_of(self, conn_id: str) -> Actor | None:
        """Who sends on the authenticated socket ``conn_id`` (None: not here)."""
        ...

    def player_of(self, conn_id: str) -> str | None: ...

    def is_writable(self, conn_id: str) -> bool: ...

    def mark_delivered(self, conn_id: str, event_id: str) -> bool:
        """Record that the inbox event ``event_id`` goes to ``conn_id``; False when it had it
        already (or the socket is gone)."""
        ...

    def watching(self, conn_id: str) -> frozenset[str]:
        """The tables the socket watches (empty when it is gone)."""
        ...

    def watch(self, conn_id: str, table_id: str) -> None:
        """Record on the socket that it watches ``table_id`` (nothing when it is gone)."""
        ...

    def unwatch(self, conn_id: str, table_ids: Iterable[str]) -> None:
        """Record on the socket that it no longer watches ``table_ids``."""
        ...

    def charge(self, conn_id: str, messages: float) -> None:
        """Count ``messages`` more against the socket's message rate."""
        ...

    def end_token(self, digest: str, reason: str) -> int:
        """Close the sockets that authenticated with the token ``digest``; how many."""
        ...

    def end_all_tokens(self, reason: str) -> int: ...


class GameStarter(Protocol):
    """Opens a table owned by this node and seats two players at it, playing (the lobby's
    :class:`~server.lobby.creation.TableCreation`; matchmaking and the computer players)."""

    async def start_rated_game(
        self, first: str, second: str, *, match_length: int | None = None,
        names: tuple[str, str] | None = None, addresses: tuple[str, str] | None = None,
        mode: TableMode = TableMode.COMPETITIVE,
        announce: Callable[[str, RatingPlan], Awaitable[None]] | None = None,
        tournament_id: str | None = None, audience: Audience | None = None,
    ) -> str:
        """The new table's id (see :meth:`server.lobby.creation.TableCreation.start_rated_game`)."""
        ...


class PlayerPush(Protocol):
    """Sends a message to every socket of a player, on any node (the lobby's
    :class:`~server.lobby.delivery.Delivery`)."""

    async def push_to_player(self, player: str, message: Mapping[str, Any]) -> bool:
        """False when the player has no socket anywhere (nothing is kept)."""
        ...


class TournamentTables(GameStarter, PlayerPush, Protocol):
    """What the tournaments use of the lobby (``server/tournaments/service.py``): opening a
    table, pushing to a player, closing a cancelled tournament's table wherever it plays,
    and the status of a table served here."""

    async def cancel_tournament_table(self, table_id: str) -> bool:
        """True when the table is over for good; False while it may still play elsewhere
        (see :meth:`server.lobby.forwarding.Forwarding.cancel_tournament_table`)."""
        ...

    def table_status(self, table_id: str) -> TableStatus | None:
        """The status of ``table_id`` when this node serves it, else None."""
        ...

"""Who the lobby tells of its events: the parts built after it (matchmaking, the computer
players, the ownership duties), added by ``server/app.py`` once they are built."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from server.lobby.table import Table
from server.protocol.node_messages import NodeMessage

__all__ = ["LobbyListeners"]


@dataclass(slots=True)
class LobbyListeners:
    """Who the lobby tells of its events; each is called in the order added."""

    seated: list[Callable[[list[str]], Coroutine[Any, Any, None]]] = field(
        default_factory=list)
    """Players who just sat down at a table (run in the background)."""
    node_dead: list[Callable[[str], Awaitable[None]]] = field(default_factory=list)
    """A node seen dead for the first time (awaited; a Redis error is logged)."""
    restored: list[Callable[[Table], None]] = field(default_factory=list)
    """A game table this node rebuilt after a takeover (an error is logged)."""
    table_lost: list[Callable[[str], None]] = field(default_factory=list)
    """The id of a table this node lost to another (fenced, handed over, store lost)."""
    released: list[Callable[[str], None]] = field(default_factory=list)
    """A peer (its node id) handed its tables over."""
    socket_moves: list[Callable[[NodeMessage], Awaitable[None]]] = field(
        default_factory=list)
    """A node message about a socket handed between sibling workers (``summon``,
    ``move_ask``, ``move_ready``, ``move_cancel``; awaited)."""

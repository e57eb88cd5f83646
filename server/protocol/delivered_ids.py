"""The event ids one socket was written, as a bounded window (PROTOCOL.md §13). Pure: the
socket hub (``server/net/connection.py``) keeps one per socket.

A rating or tournament event (one with an ``event_id``) is written once per socket: the
socket remembers the ids it was written, so a live push and the inbox read at its connection
do not both write one. Only ids the server wrote are kept (never ids a client sends with
``ack_events``), and only the newest ``size`` of them: a player's inbox holds at most
``inbox_max`` events, so a window at least that long still tells every one of them apart.
"""

from __future__ import annotations


class DeliveredIds:
    """The newest ``size`` ids added, oldest forgotten first. ``in`` and :meth:`add` are
    O(1); memory is at most ``size`` ids."""

    __slots__ = ("_ids", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._ids: dict[str, None] = {}  # insertion order: the oldest first

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> list[str]:
        """The ids held, the oldest first."""
        return list(self._ids)

    def add(self, event_id: str) -> None:
        ids = self._ids
        if event_id in ids:
            return
        ids[event_id] = None
        if len(ids) > self.size:
            del ids[next(iter(ids))]

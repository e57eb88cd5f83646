"""One answer per request forwarded to another node.

A request (a command with an ``id``) from a socket here that is forwarded to its table's owner
is remembered until its answer comes back (:meth:`ForwardedRequests.sent`). One that will get
no answer (its owner died, the table was taken over, the bus gave it up, or it waited past
``forward_timeout``) is answered here with ``unavailable`` and ``retry_after``
(:meth:`ForwardedRequests.sweep`, :meth:`ForwardedRequests.unheard`); a late answer from the
old owner is then dropped (:meth:`ForwardedRequests.answered_by_owner`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from server.config import Settings
from server.lobby.ports import Clock, Outbox, Peers
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError, error_message, retry_later

__all__ = ["ANSWERED_MAX", "FORWARDED_MAX", "ForwardedRequests"]

FORWARDED_MAX = 100_000
"""Requests forwarded to other nodes and not answered yet that one node tracks at most."""
ANSWERED_MAX = 10_000
"""(socket, request id) pairs answered ``unavailable`` on the owner's behalf, remembered so a
late answer from that owner is dropped (one answer per request)."""


class ForwardedRequests:
    """The requests of this node's sockets that wait for another node's answer."""

    def __init__(self, settings: Settings, outbox: Outbox, clock: Clock, peers: Peers) -> None:
        self.settings = settings
        self.outbox = outbox
        self.clock = clock
        self.peers = peers
        # (conn id, request id) -> (owner node, table id, monotonic time sent).
        self._forwarded: dict[tuple[str, Any], tuple[str, str, float]] = {}
        self._answered: OrderedDict[tuple[str, Any], None] = OrderedDict()

    def sent(self, conn_id: str, ref: Any, owner: str, table_id: str) -> tuple[str, Any]:
        """The request ``ref`` of the socket ``conn_id`` went to ``owner``; its token (for
        the bus to hand back if nobody heard it)."""
        if len(self._forwarded) >= FORWARDED_MAX:
            self._forwarded.pop(next(iter(self._forwarded)))
        token = (conn_id, ref)
        self._forwarded[token] = (owner, table_id, self.clock.monotonic())
        return token

    def waiting_elsewhere(self, conn_id: str, node: str) -> bool:
        """Whether a request of the socket ``conn_id`` waits for a node other than
        ``node``."""
        return any(key[0] == conn_id and owner != node
                   for key, (owner, _table, _sent) in self._forwarded.items())

    def forget_conn(self, conn_id: str) -> None:
        """The socket ``conn_id`` went to the node its requests wait for: the answers are
        written there (nothing to answer here if that node dies: the socket is there)."""
        for key in [key for key in self._forwarded if key[0] == conn_id]:
            del self._forwarded[key]

    def unheard(self, token: Any) -> None:
        """The bus gave up a forwarded request (``token``: its socket and id) that nobody
        heard, or that was never sent: answer it ``unavailable`` now (retry after a
        second) instead of after ``forward_timeout``. A late answer is dropped."""
        entry = self._forwarded.pop(token, None)
        if entry is None:
            return
        self._answer_unavailable(token, entry[1], "its server did not hear it, retry", 1.0)

    def _answer_unavailable(self, key: tuple[str, Any], table_id: str, why: str,
                            wait: float) -> None:
        self._answered[key] = None
        if len(self._answered) > ANSWERED_MAX:
            self._answered.popitem(last=False)
        conn_id, ref = key
        err = retry_later(ProtocolError(ErrorCode.UNAVAILABLE, f"table {table_id}: {why}"),
                          wait)
        self.outbox.push_conn_id(conn_id, Outgoing(error_message(err, ref, table_id)))

    def answered_by_owner(self, conn_id: str, frame: dict[str, Any]) -> bool:
        """An answer from another node for one of this node's sockets: False when that
        request was answered already (``unavailable``, the owner was thought dead), so this
        late second answer is dropped."""
        ref = frame.get("ref")
        if ref is None:
            return True
        key = (conn_id, ref)
        try:
            hash(key)
        except TypeError:
            return True
        if self._forwarded.pop(key, None) is not None:
            return True
        return key not in self._answered

    def sweep(self, *, node: str | None = None, table: str | None = None,
              retry_after: float | None = None) -> int:
        """Answer ``unavailable`` every forwarded request that will get no answer: its owner
        is dead (or is ``node``), the table was taken over (``table``), or it waited past
        ``forward_timeout``. Returns how many were answered."""
        now = self.clock.monotonic()
        settings = self.settings
        timeout = settings.forward_timeout
        wait = settings.lease_ttl + settings.takeover_scan if retry_after is None \
            else retry_after
        is_live = self.peers.is_live
        answered = 0
        for key, (owner, table_id, sent) in list(self._forwarded.items()):
            if not (owner == node or table_id == table or not is_live(owner)
                    or now - sent > timeout):
                continue
            del self._forwarded[key]
            self._answer_unavailable(key, table_id, "no answer from its server, retry", wait)
            answered += 1
        return answered

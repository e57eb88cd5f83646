"""Delivery: replies, table events, chat and inbox events to sockets on whichever node holds them.

A socket on this node is written through the outbox (:class:`~server.lobby.ports.Outbox`);
one on another node gets a ``deliver`` (``chat``, ``push``) message on that node's bus
channel, which that node's :class:`Delivery` writes to the socket. Events kept in a player's
inbox until delivered once (``INBOX_EVENTS``: rating and tournament events, each with an
``event_id``) are written once per socket, and the node that writes one removes it from the
inbox; a player connected nowhere gets them at the next connection
(:meth:`Delivery.deliver_inbox`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from redis.exceptions import RedisError

from server.config import Settings
from server.lobby.mutes import ChatMutes
from server.lobby.ports import NodeSender, Outbox, Spawner
from server.lobby.requests import ForwardedRequests
from server.metrics import Metrics
from server.protocol import node_messages as ops
from server.protocol.codec import Outgoing, Packed, WireFormat, encode
from server.protocol.node_messages import Actor
from server.store.persistence import Persistence
from server.store.retry import REDIS_AWAY, Backoff, retry_redis

log = logging.getLogger(__name__)

_PACK = WireFormat.MSGPACK

INBOX_EVENTS = frozenset({"rating", "boosted", "tournament_pairing", "tournament_table",
                           "tournament_result", "tournament_over"})
"""Events kept in a player's inbox until delivered once (they carry an ``event_id``): the
rating events and the tournament events."""


WATCH_REFUSED = frozenset({"too_many_watchers", "no_such_table"})
"""Error codes from a table's owner node after which a socket here does not watch that
table (its ``watch`` was refused, or the table is gone)."""


def packed(frame: Mapping[str, Any]) -> msgspec.Raw:
    """A frame for a :class:`~server.protocol.node_messages.Deliver`: its msgpack."""
    return msgspec.Raw(encode(frame, _PACK))


def deliver(out: Outgoing, *, player: str | None = None,
            conns: list[str] | None = None) -> ops.Deliver:
    """A ``deliver`` of ``out``, its forms packed (the encodings ``out`` keeps for sockets
    here, made once)."""
    lean = msgspec.Raw(out.frame(_PACK, True)) if out.lean is not None else ops.NO_FRAME
    return ops.Deliver(player=player, conns=conns or [], frame=msgspec.Raw(out.frame(_PACK)),
                       lean=lean)


class Delivery:
    """Sends to sockets here (the outbox) and on other nodes (the bus), for node ``node_id``;
    the chat leaves out what each socket's player muted (``mutes``), and a late answer to a
    request answered here already is dropped (``requests``)."""

    def __init__(self, settings: Settings, outbox: Outbox, bus: NodeSender, *,
                 persistence: Persistence, tasks: Spawner, metrics: Metrics,
                 mutes: ChatMutes, requests: ForwardedRequests) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.outbox = outbox
        self.bus = bus
        self.persistence = persistence
        self.tasks = tasks
        self.metrics = metrics
        self.mutes = mutes
        self.requests = requests
        # Sockets of sibling workers handed over to this one (server/net/socket_moves.py):
        # (their old node, their old id) -> their id here. What is still addressed to the old
        # place (a table's answer to a command sent before the move) is written here.
        self.arrived: dict[tuple[str, str], str] = {}

    def deliver_player(self, player: str, nodes: Iterable[str], out: Outgoing) -> None:
        """Send ``out`` to every socket of ``player`` on ``nodes``."""
        for node in nodes:
            if node == self.node_id:
                self.outbox.push_player(player, out)
            else:
                self.bus.send(node, deliver(out, player=player))

    def deliver_conns(self, conns: Iterable[tuple[str, str]], out: Outgoing) -> None:
        """Send ``out`` to the sockets ``(node, conn id)``; one bus message per other node."""
        remote: dict[str, list[str]] = {}
        arrived = self.arrived
        for node, conn in conns:
            if node == self.node_id:
                self.outbox.push_conn_id(conn, out)
            elif arrived and (here := arrived.get((node, conn))) is not None:
                self.outbox.push_conn_id(here, out)
            else:
                remote.setdefault(node, []).append(conn)
        for node, ids in remote.items():
            self.bus.send(node, deliver(out, conns=ids))

    def deliver_chat(self, players: Mapping[str, list[str]], conns: Mapping[str, list[str]],
                     message: dict[str, Any]) -> None:
        """Send a chat message to ``players`` and the sockets ``conns`` (each by node); each
        node leaves out the sockets whose player muted its author."""
        for node in {*players, *conns}:
            if node == self.node_id:
                self.chat_here(players.get(node, ()), conns.get(node, ()), Outgoing(message))
            else:
                self.bus.send(node, ops.Chat(players=players.get(node, []),
                                             conns=conns.get(node, []), frame=message))

    def chat_here(self, players: Iterable[str], conn_ids: Iterable[str], out: Outgoing) -> None:
        """Write a chat message to the sockets here of ``players`` and to ``conn_ids``, once
        each, leaving out the sockets whose player muted its author."""
        author = out.obj.get("from")
        muted_by = self.mutes.muted_by
        player_of = self.outbox.player_of
        self.outbox.push_unique([p for p in players if author not in muted_by(p)],
                                [c for c in conn_ids if author not in muted_by(player_of(c))],
                                out)

    def without_muted(self, conn_id: str, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` (a ``resume`` or ``watching`` with ``chat``) for the socket
        ``conn_id``: without the chat of players its player muted."""
        muted = self.mutes.muted_by(self.outbox.player_of(conn_id))
        chat = message.get("chat")
        if not muted or not isinstance(chat, list):
            return message
        return {**message, "chat": [m for m in chat if m.get("from") not in muted]}

    def reply(self, actor: Actor, message: dict[str, Any]) -> None:
        """Answer the socket a command came from (here, when it was handed over to this
        node since)."""
        conn = actor.conn
        if actor.node != self.node_id:
            here = self.arrived.get((actor.node, conn)) if self.arrived else None
            if here is None:
                self.bus.send(actor.node, ops.Deliver(conns=[conn], frame=packed(message)))
                return
            conn = here
        if message.get("type") == "sync":
            self.charge_sync(conn, message)
        if "chat" in message:
            message = self.without_muted(conn, message)
        self.outbox.push_conn_id(conn, Outgoing(message))

    def forget_arrived(self, conn_id: str) -> None:
        """The socket ``conn_id`` here closed: nothing addressed to its old place comes
        here any more."""
        for key in [k for k, here in self.arrived.items() if here == conn_id]:
            del self.arrived[key]

    def charge_sync(self, conn_id: str, answer: Mapping[str, Any]) -> None:
        """A ``sync`` answer costs the socket it goes to one message of its rate limit per
        ``sync_events_per_message`` events it carries (beyond the request itself), so
        replaying a long log is paid for like sending that many messages."""
        events = answer.get("events")
        if not isinstance(events, list) or not events:
            return
        self.outbox.charge(conn_id, len(events) / self.settings.sync_events_per_message)

    def deliver_rating(self, player: str, nodes: set[str], event: dict[str, Any]) -> None:
        """Push a rating event (already in the player's inbox) where the player is; the node
        that writes it to a socket removes it from the inbox (delivered once)."""
        if nodes:
            for node in nodes:
                if node == self.node_id:
                    self.push_rating_here(player, event)
                else:
                    self.bus.send(node, ops.Deliver(player=player, frame=packed(event)))
        else:
            # Not seated-and-connected as far as the table knows: try presence.
            self.tasks.spawn(self.push_to_player(player, event))

    def push_rating_here(self, player: str, event: dict[str, Any]) -> bool:
        """Write a rating event to the player's sockets on this node that do not have it
        yet; when one took it, remove it from the inbox (in the background)."""
        event_id = event.get("event_id")
        outbox = self.outbox
        conns = outbox.sockets_of(player)
        if not conns:
            return False
        out = Outgoing(event)
        written = False
        for conn_id in conns:
            if not isinstance(event_id, str):
                outbox.push_conn_id(conn_id, out)
                continue
            if not outbox.is_writable(conn_id) or not outbox.mark_delivered(conn_id, event_id):
                continue
            outbox.push_conn_id(conn_id, out)
            written = True
        if written and isinstance(event_id, str):
            self.metrics.rating_events.labels("live").inc()
            self.tasks.spawn(self._remove_from_inbox(player, [event_id]))
        return written

    async def _remove_from_inbox(self, player: str, ids: list[str]) -> None:
        # Redis away: tried again for about a minute, then left there.
        with contextlib.suppress(*REDIS_AWAY):
            await retry_redis(lambda: self.persistence.inbox_remove(player, ids),
                              Backoff(attempts=60))

    async def push_to_player(self, player: str, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (a dict with a ``type``) to every socket of ``player``, on any
        node. Returns False when the player has no socket anywhere (nothing is kept)."""
        frame = dict(message)
        if frame.get("type") in INBOX_EVENTS:
            delivered = self.push_rating_here(player, frame)
        else:
            delivered = self.outbox.push_player(player, Outgoing(frame))
        try:
            nodes, _ = await self.persistence.presence(player)
        except (RedisError, OSError):
            nodes = []
        for node in nodes:
            if node != self.node_id:
                self.bus.send(node, ops.Push(player=player, frame=frame))
                delivered = True
        return delivered

    async def deliver_inbox(self, conn_id: str, player: str) -> None:
        """Write the player's inbox to the socket ``conn_id`` (the events it does not have
        yet), then remove what was written from the inbox."""
        persistence = self.persistence
        inbox = await persistence.inbox(player)
        # Every id read goes in ``ids``, also one a live push already wrote to this
        # socket: otherwise the count would fall short and the positional ``ack_inbox``
        # below could drop an entry written after the read (never delivered).
        ids: list[str] = []
        pushed = 0
        for event in inbox:
            event_id = event.get("event_id")
            if isinstance(event_id, str):
                ids.append(event_id)
                if not self.outbox.mark_delivered(conn_id, event_id):
                    continue
                pushed += 1
            self.outbox.push_conn_id(conn_id, Outgoing(event))
        if inbox and self.outbox.is_writable(conn_id):  # still open
            self.metrics.rating_events.labels("inbox").inc(pushed)
            if len(ids) == len(inbox):
                await persistence.inbox_remove(player, ids)
            else:  # entries written before events had ids
                await persistence.ack_inbox(player, len(inbox))

    # --- from other nodes --------------------------------------------------------------------

    def delivered(self, message: ops.Deliver) -> None:
        """A ``deliver`` from another node: write its frame to the player's sockets here
        and to the sockets it names (an answer already given here is dropped). The frame is
        decoded only if something needs more than its type (a JSON socket, an answer)."""
        out: Outgoing = Packed(bytes(message.frame), message.lean_packed())
        player = message.player
        if player is not None and ops.frame_type(message.frame) in INBOX_EVENTS:
            self.push_rating_here(player, out.obj)
        elif player is not None:
            self.outbox.push_player(player, out)
        if not message.conns:
            return
        frame = out.obj
        refused_watch = frame.get("type") == "error" and frame.get("code") in WATCH_REFUSED
        for conn_id in message.conns:
            if refused_watch:
                self.forget_watch(conn_id, frame.get("table"))
            if self.requests.answered_by_owner(conn_id, frame):
                if frame.get("type") == "sync":
                    self.charge_sync(conn_id, frame)
                if "chat" in frame:
                    out = Outgoing(self.without_muted(conn_id, frame))
                self.outbox.push_conn_id(conn_id, out)

    def forget_watch(self, conn_id: str, table: object) -> None:
        """The owner node of ``table`` refused (or no longer has) the watch of the socket
        ``conn_id`` here: it takes no place among the socket's watches."""
        if isinstance(table, str):
            self.outbox.unwatch(conn_id, (table,))

    def pushed(self, message: ops.Push) -> None:
        """A ``push`` from another node: any message for the player's sockets here."""
        if message.frame.get("type") in INBOX_EVENTS:
            self.push_rating_here(message.player, message.frame)
        else:
            self.outbox.push_player(message.player, Outgoing(message.frame))

    def chatted(self, message: ops.Chat) -> None:
        """A table's ``chat`` from its owner node, for sockets here."""
        self.chat_here(message.players, message.conns, Outgoing(message.frame))

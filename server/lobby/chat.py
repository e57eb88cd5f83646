"""Chat (PROTOCOL.md §16): a table's chat on its owner node, and the checks and mutes on the
node a player's socket is on.

The table driver hands it ``chat`` and ``report`` commands. Chat is not a table event: it
does not go through the table machine, has no version and is not in the event log. Each
message is stored first (``{t:T}:chat:<game_no>``, kept with the game's record), then
delivered by channel: ``players`` to the seated players and the watchers, ``watchers`` to
the watchers, and to the players only while no game is in play (a seated player's socket
that also watches the table counts as a player's). The node holding a socket
leaves out the messages of players its player muted (``Delivery.chat_here``). The text was
cleaned and the sender's rate and operator mute checked on the node that received it
(:class:`LobbyChat`), before it was routed here.
"""

from __future__ import annotations

import secrets
from collections import deque
from typing import Any

import msgspec
from redis.exceptions import RedisError

from server.config import Settings
from server.lobby.mutes import ChatMutes
from server.lobby.ports import Clock, NodeSender, Outbox
from server.lobby.table_deps import TableDeps
from server.metrics import Metrics
from server.protocol import node_messages as ops
from server.protocol.chat import (
    PLAYERS,
    WATCHERS,
    ChatRate,
    players_see,
    visible,
    watcher_sees,
)
from server.protocol.codec import Outgoing
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.protocol.ids import network_key
from server.protocol.messages import Chat, Mute, Report, Unmute
from server.protocol.node_messages import Actor
from server.protocol.text import clean_text
from server.ratelimit import RateLimiter
from server.store.games import GameRecords
from server.store.reports import Outcome
from server.tables.machine import TableMachine, TableStatus


class TableChat:
    """The chat of one table: its recent messages in memory, the rest in Redis. Given the
    table's machine and its map of watching sockets (no reference to the table itself)."""

    def __init__(self, deps: TableDeps, machine: TableMachine,
                 watchers: dict[tuple[str, str], str]) -> None:
        self.deps = deps
        self.machine = machine
        self.watchers = watchers
        self.table_id = machine.id
        self.history: deque[dict[str, Any]] = deque(maxlen=deps.settings.chat_history)

    def game_no(self) -> int:
        """The game a message sent now belongs to (before the first: the first)."""
        return max(1, self.machine.game_no)

    def is_playing(self) -> bool:
        return self.machine.status is TableStatus.PLAYING and self.machine.game is not None

    def channel_of(self, actor: Actor) -> str:
        """``actor``'s channel at the table: ``players`` when seated, ``watchers`` when its
        socket watches; else ``not_at_table``."""
        if self.machine.side_of(actor.player) is not None:
            return PLAYERS
        if (actor.node, actor.conn) in self.watchers:
            return WATCHERS
        raise ProtocolError(ErrorCode.NOT_AT_TABLE,
                            f"you neither play nor watch at table {self.table_id}",
                            field="table")

    async def post(self, actor: Actor, msg: Chat) -> None:
        """Store and deliver ``actor``'s message (its text already cleaned), then ack."""
        channel = self.channel_of(actor)
        table_id = self.table_id
        message = {
            "type": "chat", "table": table_id, "channel": channel,
            "msg": secrets.token_hex(6), "from": actor.player, "name": actor.name,
            "text": msg.text, "at": self.deps.clock.now(),
        }
        try:
            await self.deps.records.append_chat(table_id, self.game_no(), message)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        self.history.append(message)
        self.deliver(message)
        if msg.ref is not None:
            self.deps.delivery.reply(actor, {"type": "ack", "ref": msg.ref, "table": table_id})

    def deliver(self, message: dict[str, Any]) -> None:
        """Send ``message`` to whoever its channel reaches, one bus message per node. A
        watching socket of a seated player is a player's: it gets what the players get."""
        channel, playing = str(message["channel"]), self.is_playing()
        players: dict[str, list[str]] = {}
        seated: set[str] = set()
        for seat in self.machine.seats:
            if seat is not None:
                seated.add(seat.player)
                if players_see(channel, playing):
                    for node in seat.nodes:
                        players.setdefault(node, []).append(seat.player)
        conns: dict[str, list[str]] = {}
        for (node, conn), watcher in self.watchers.items():
            if watcher_sees(channel, playing, seated=watcher in seated):
                conns.setdefault(node, []).append(conn)
        self.deps.delivery.deliver_chat(players, conns, message)

    def for_player(self) -> list[dict[str, Any]]:
        """The recent messages a seated player may see (``resume``; the node holding the
        socket leaves out those of players it muted)."""
        return visible(self.history, is_player=True, playing=self.is_playing())

    def for_watcher(self, player: str) -> list[dict[str, Any]]:
        """The recent messages a watching socket of ``player`` may see (``watching``): a
        seated player's, what the players see."""
        seated = self.machine.side_of(player) is not None
        return visible(self.history, is_player=seated, playing=self.is_playing())

    async def report(self, actor: Actor, msg: Report) -> None:
        """Keep ``msg.msg`` (a message of the table), its author and the reporter for the
        operators, once per reporter and message; ``no_such_message`` when the table does not
        hold it, ``rate_limited`` past the reporter's ``reports_per_player``,
        ``reports_full`` when ``reports_kept`` reports are open (the reason was cleaned and
        the per-socket limits checked by :meth:`LobbyChat.checked_report`)."""
        deps = self.deps
        table_id = self.table_id
        found = next((m for m in self.history if m.get("msg") == msg.msg), None)
        try:
            if found is None:
                game = self.game_no()
                found = await deps.records.find_chat(
                    table_id, sorted({game, max(1, game - 1)}), msg.msg)
            if found is None:
                raise ProtocolError(ErrorCode.NO_SUCH_MESSAGE,
                                    f"no chat message {msg.msg!r} at table {table_id}",
                                    field="msg")
            filed = await deps.records.reports.add({
                "at": deps.clock.now(), "table": table_id, "msg": found.get("msg"),
                "channel": found.get("channel"), "from": found.get("from"),
                "name": found.get("name"), "text": found.get("text"),
                "sent_at": found.get("at"), "reporter": actor.player,
                "reason": msg.reason,
            })
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        settings = deps.settings
        if filed.outcome is Outcome.LIMITED:
            deps.metrics.refused("reports_window")
            raise retry_later(ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"at most {settings.reports_per_player} reports per "
                f"{settings.reports_window:g} seconds", field="msg"), filed.wait)
        if filed.outcome is Outcome.FULL:
            deps.metrics.refused("reports_full")
            raise ProtocolError(ErrorCode.REPORTS_FULL,
                                f"the operators have {settings.reports_kept} open reports; "
                                "this one was not kept", field="msg")
        if msg.ref is not None:
            deps.delivery.reply(actor, {"type": "ack", "ref": msg.ref, "table": table_id})

    async def restore(self) -> None:
        """Reload the recent messages (a table taken over from another node)."""
        try:
            tail = await self.deps.records.chat_tail(self.table_id, self.game_no(),
                                                     self.deps.settings.chat_history)
        except (RedisError, OSError):
            return
        self.history.extend(tail)


class LobbyChat:
    """The chat checks of the node a socket is on: the text, the operator mute and the rates
    (before a message or a report is routed to its table), and the players each player
    mutes."""

    def __init__(self, settings: Settings, *, records: GameRecords, mutes: ChatMutes,
                 outbox: Outbox, bus: NodeSender, clock: Clock, metrics: Metrics) -> None:
        self.settings = settings
        self.records = records
        self.mutes = mutes
        self.outbox = outbox
        self.bus = bus
        self.clock = clock
        self.metrics = metrics
        self.rate = ChatRate(self.settings.chat_rate, self.settings.chat_window)
        self.report_limit = RateLimiter(self.settings.report_rate, self.settings.report_burst)

    def check_rate(self, actor: Actor) -> None:
        """Raise ``chat_rate_limited`` when ``actor``'s player sent too many messages."""
        wait = self.rate.allow(actor.player, self.clock.monotonic())
        if wait is not None:
            settings = self.settings
            exc = ProtocolError(ErrorCode.CHAT_RATE_LIMITED,
                                f"at most {settings.chat_rate} chat messages per "
                                f"{settings.chat_window:g} seconds")
            raise retry_later(exc, wait)

    def checked(self, actor: Actor, msg: Chat) -> Chat:
        """``msg`` with its text cleaned, once the text, the operator mute and the rate
        allow it (PROTOCOL.md §16); else ProtocolError."""
        text = clean_text(msg.text)
        limit = self.settings.chat_max_length
        if not 1 <= len(text) <= limit:
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                f"field 'text' must have 1..{limit} visible characters once "
                                "cleaned", field="text")
        until = self.mutes.chat_muted_until(actor.player)
        if until > self.clock.now():
            exc = ProtocolError(ErrorCode.CHAT_MUTED, "an operator muted your chat")
            exc.until = until
            raise exc
        self.check_rate(actor)
        return msg if text == msg.text else Chat(table=msg.table, text=text, ref=msg.ref)

    def checked_report(self, actor: Actor, msg: Report) -> Report:
        """``msg`` with its reason cleaned, once the reason, the chat rate and the reports
        one account and one address may file (``report_rate``/``report_burst`` on this node)
        allow it; else ProtocolError."""
        reason = msg.reason
        if reason is not None:
            reason = clean_text(reason)
            if not reason:
                raise ProtocolError(ErrorCode.BAD_FIELD,
                                    "field 'reason' must have a visible character once cleaned",
                                    field="reason")
        self.check_rate(actor)
        if self.settings.limits:
            now = self.clock.monotonic()
            for key, limit in (("p:" + actor.player, "reports_per_player"),
                               ("a:" + network_key(actor.address), "reports_per_address")):
                wait = self.report_limit.take(key, now)
                if wait > 0:
                    self.metrics.refused(limit)
                    raise retry_later(ProtocolError(
                        ErrorCode.RATE_LIMITED, "reporting too fast; retry later",
                        field="msg"), wait)
        return msg if reason == msg.reason else msgspec.structs.replace(msg, reason=reason)

    async def mute(self, actor: Actor, msg: Mute | Unmute) -> None:
        """Mute or unmute a player for ``actor``'s player, on all their sockets everywhere."""
        player = actor.player
        if msg.player == player:
            raise ProtocolError(ErrorCode.BAD_FIELD, "you cannot mute yourself", field="player")
        records = self.records
        if isinstance(msg, Mute):
            muted = await records.mute(player, msg.player)
            if muted is None:
                raise ProtocolError(ErrorCode.BAD_FIELD,
                                    f"at most {self.settings.chat_mute_max} muted players",
                                    field="player")
        else:
            muted = await records.unmute(player, msg.player)
        self.mutes.set_muted(player, muted)
        self.bus.broadcast(ops.Muted(player=player, muted=muted))
        self.outbox.push_conn_id(actor.conn, Outgoing({"type": "ack", "ref": msg.ref}))

"""The client library's one-line helpers, one per lobby and game command (PROTOCOL.md),
each a :meth:`Commands.request` of the message it names. :class:`server.client.Client`
provides ``request``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.client.wire import Message


class Commands:
    """The command helpers; a subclass supplies :meth:`request`."""

    async def request(self, message: Mapping[str, Any], *,
                      timeout: float | None = None) -> Message:
        raise NotImplementedError

    async def create_table(self, mode: str = "private", match_length: int = 0) -> str:
        answer = await self.request({"type": "create_table", "mode": mode,
                                     "match_length": match_length})
        return str(answer["table"])

    async def join(self, table: str) -> Message:
        return await self.request({"type": "join", "table": table})

    async def leave(self, table: str) -> Message:
        return await self.request({"type": "leave", "table": table})

    async def watch(self, table: str) -> Message:
        return await self.request({"type": "watch", "table": table})

    async def queue(self, pool: str) -> Message:
        return await self.request({"type": "queue", "pool": pool})

    async def cancel_queue(self) -> Message:
        return await self.request({"type": "cancel_queue"})

    async def play_computer(self, level: str = "beginner", match_length: int = 0) -> str:
        """Ask the server for a game against its computer player; returns the table id."""
        answer = await self.request({"type": "play_computer", "level": level,
                                     "match_length": match_length})
        return str(answer["table"])

    async def chat(self, table: str, text: str) -> Message:
        """Say ``text`` at ``table`` (players' or watchers' channel by your role there);
        returns the ``ack``. Others receive it as a ``chat`` message (PROTOCOL.md §16)."""
        return await self.request({"type": "chat", "table": table, "text": text})

    async def mute(self, player: str) -> Message:
        """Stop receiving ``player``'s chat (kept for your account)."""
        return await self.request({"type": "mute", "player": player})

    async def unmute(self, player: str) -> Message:
        return await self.request({"type": "unmute", "player": player})

    async def report(self, table: str, msg: str, reason: str | None = None) -> Message:
        """Report the chat message ``msg`` (its id) of ``table`` to the operators."""
        message: dict[str, Any] = {"type": "report", "table": table, "msg": msg}
        if reason:
            message["reason"] = reason
        return await self.request(message)

    async def act(self, table: str, action: Mapping[str, Any]) -> Message:
        """Send a game action (``{"type": "roll"}``...) for ``table``; returns the ``ack``."""
        return await self.request({**action, "table": table})

    async def roll(self, table: str) -> Message:
        return await self.act(table, {"type": "roll"})

    async def play(self, table: str, play: Any) -> Message:
        """``play``: one of :meth:`legal_plays` as it is, or the play as text."""
        return await self.act(table, {"type": "play", "play": play})

    async def double(self, table: str) -> Message:
        return await self.act(table, {"type": "double"})

    async def take(self, table: str) -> Message:
        return await self.act(table, {"type": "take"})

    async def drop(self, table: str) -> Message:
        return await self.act(table, {"type": "drop"})

    async def resign(self, table: str, kind: str = "single") -> Message:
        return await self.act(table, {"type": "resign", "kind": kind})

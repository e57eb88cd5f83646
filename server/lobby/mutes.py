"""Who muted whom, for the players with a socket on this node (PROTOCOL.md §16).

Each player's own mutes (the players whose chat they do not want) and an operator's chat mute
of the player (until a Unix time; 0: none) are read from Redis when the player's socket opens
(:meth:`ChatMutes.load`), changed by ``mute``/``unmute`` and the operators everywhere (the
``muted``/``chat_mute`` node messages) and forgotten when the player's last socket here
closes. The node holding a socket leaves out the chat of players its player muted.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ChatMutes"]

_NONE: frozenset[str] = frozenset()


class ChatMutes:
    """The chat mutes of the players connected here (see the module docstring)."""

    def __init__(self) -> None:
        self._muted: dict[str, frozenset[str]] = {}
        self._until: dict[str, float] = {}

    def load(self, player: str, muted: Iterable[str], until: float) -> None:
        """``player``'s mutes as stored (their socket opened)."""
        self.set_muted(player, muted)
        self.set_chat_muted(player, until)

    def forget(self, player: str) -> None:
        """``player`` has no socket here any more."""
        self._muted.pop(player, None)
        self._until.pop(player, None)

    def set_muted(self, player: str, muted: Iterable[str]) -> None:
        """``player`` muted exactly ``muted`` now."""
        names = frozenset(muted)
        if names:
            self._muted[player] = names
        else:
            self._muted.pop(player, None)

    def set_chat_muted(self, player: str, until: float) -> None:
        """An operator muted ``player``'s chat until ``until`` (0: lifted)."""
        if until:
            self._until[player] = until
        else:
            self._until.pop(player, None)

    def muted_by(self, player: str | None) -> frozenset[str]:
        """The players whose chat ``player`` does not want."""
        return _NONE if player is None else self._muted.get(player, _NONE)

    def chat_muted_until(self, player: str) -> float:
        """Until when an operator muted ``player``'s chat (0: not muted)."""
        return self._until.get(player, 0.0)

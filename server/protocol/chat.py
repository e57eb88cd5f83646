"""Table chat rules (pure): the per-player rate, who sees which channel.

PROTOCOL.md §16. No I/O: the lobby (``server/lobby/chat.py``) stores and delivers; texts are
cleaned by ``server/protocol/text.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

PLAYERS = "players"
WATCHERS = "watchers"


class ChatRate:
    """At most ``rate`` messages per ``window`` seconds per player (a sliding window).

    :meth:`allow` is told the time; it records the message when it is allowed and returns
    None, else returns the seconds until the next one would be. Memory: one short deque per
    player who chatted in the last window; the others are dropped now and then.
    """

    def __init__(self, rate: int, window: float, *, max_players: int = 100_000) -> None:
        self.rate = rate
        self.window = window
        self.max_players = max_players
        self._sent: dict[str, deque[float]] = {}

    def allow(self, player: str, now: float) -> float | None:
        times = self._sent.get(player)
        if times is None:
            if len(self._sent) >= self.max_players:
                self._prune(now)
            times = self._sent[player] = deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.rate:
            return max(0.001, times[0] + self.window - now)
        times.append(now)
        return None

    def _prune(self, now: float) -> None:
        self._sent = {p: t for p, t in self._sent.items() if t and t[-1] > now - self.window}
        if len(self._sent) >= self.max_players:  # everyone is chatting: start afresh
            self._sent.clear()


def players_see(channel: str, playing: bool) -> bool:
    """Whether the seated players see a message of ``channel`` (the watchers see both):
    the watchers' channel only while no game is in play."""
    return channel == PLAYERS or not playing


def watcher_sees(channel: str, playing: bool, *, seated: bool) -> bool:
    """Whether a watching socket receives a message of ``channel``: every one, unless its
    player is seated at the table: then only what the players see (``players_see``), from
    whichever socket."""
    return not seated or players_see(channel, playing)


def visible(messages: Iterable[Mapping[str, Any]], *, is_player: bool, playing: bool,
            muted: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The ``messages`` a player (``is_player``) or a watcher may see, without those from
    ``muted`` players, in order."""
    hidden = set(muted)
    return [dict(m) for m in messages
            if (not is_player or players_see(str(m.get("channel")), playing))
            and m.get("from") not in hidden]

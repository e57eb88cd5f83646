"""The chat rules without sockets (server/protocol/chat.py; the text: test_text_pure.py)."""

from __future__ import annotations

import pytest

from server.protocol.chat import ChatRate, players_see, visible


def test_rate_is_a_sliding_window_per_player() -> None:
    rate = ChatRate(5, 10.0)
    assert [rate.allow("a", t) for t in (0.0, 1.0, 2.0, 3.0, 4.0)] == [None] * 5
    assert rate.allow("a", 5.0) == pytest.approx(5.0)
    assert rate.allow("b", 5.0) is None
    assert rate.allow("a", 10.0) is None  # the message at 0.0 left the window
    assert rate.allow("a", 10.5) == pytest.approx(0.5)


def test_rate_memory_is_bounded() -> None:
    rate = ChatRate(1, 10.0, max_players=3)
    for n, player in enumerate("abcdef"):
        rate.allow(player, float(n) * 20)
    assert len(rate._sent) <= 3


def test_who_sees_which_channel() -> None:
    assert players_see("players", playing=True)
    assert not players_see("watchers", playing=True)
    assert players_see("watchers", playing=False)
    messages = [{"channel": "players", "from": "a", "text": "1"},
                {"channel": "watchers", "from": "w", "text": "2"},
                {"channel": "players", "from": "b", "text": "3"}]
    texts = [[m["text"] for m in visible(messages, is_player=p, playing=g, muted=mu)]
             for p, g, mu in ((True, True, ()), (True, False, ()), (False, True, ()),
                              (False, True, ("b",)))]
    assert texts == [["1", "3"], ["1", "2", "3"], ["1", "2", "3"], ["1", "2"]]

"""A player whose socket was on a node found dead gets the node-loss grace, counted from when
the node was found dead, instead of the disconnect grace: the server's fault is not theirs."""

from __future__ import annotations

import random

from server.lobby.node_loss import split_by_liveness
from server.protocol.messages import TableMode
from server.rules import EndReason
from server.tables.machine import GRACE, MachineSettings, TableMachine, TableStatus

NOW = 1_000_000.0
SETTINGS = MachineSettings(grace_period=20.0, node_loss_grace=120.0)


class Dice:
    def __init__(self) -> None:
        self.rnd = random.Random(7)

    def roll_die(self) -> int:
        return self.rnd.randint(1, 6)


def playing(nodes: tuple[str, str] = ("n1", "n1")) -> TableMachine:
    machine = TableMachine(
        table_id="t1", mode=TableMode.COMPETITIVE, match_length=0, tournament_id=None,
        created_at=NOW, settings=SETTINGS, dice_factory=Dice,
    )
    for side, player in enumerate(("alice", "bob")):
        machine.seat(side, player, player, is_guest=False, address=f"10.0.0.{side}",
                     nodes={nodes[side]}, now=NOW)
    machine.start(NOW)
    assert machine.status is TableStatus.PLAYING
    return machine


def test_a_plain_disconnect_gets_the_disconnect_grace() -> None:
    machine = playing()
    step = machine.disconnect("bob", "n1", NOW + 1)
    assert [d.at for d in step.deadlines if d.kind == GRACE] == [NOW + 21]


def test_a_socket_on_a_dead_node_gets_the_node_loss_grace_from_the_death() -> None:
    machine = playing()
    step = machine.disconnect("bob", "n1", NOW + 5, lost_at=NOW)
    assert [d.at for d in step.deadlines if d.kind == GRACE] == [NOW + 120]
    event = step.events[0].obj
    assert event["type"] == "player_disconnected"
    assert event["deadline"] == NOW + 120 and event["grace"] == 115


def test_a_node_found_dead_long_ago_still_leaves_the_disconnect_grace() -> None:
    machine = playing()
    step = machine.disconnect("bob", "n1", NOW + 500, lost_at=NOW)
    assert [d.at for d in step.deadlines if d.kind == GRACE] == [NOW + 520]


def test_the_disconnect_grace_ends_the_game_the_node_loss_grace_does_not() -> None:
    plain, lost = playing(), playing()
    grace = plain.disconnect("bob", "n1", NOW).deadlines[0]
    settle = plain.expire(grace, grace.at).settle
    assert settle is not None and settle.outcome.reason is EndReason.DISCONNECT
    node_grace = lost.disconnect("bob", "n1", NOW, lost_at=NOW).deadlines[0]
    assert node_grace.at == NOW + 120
    assert lost.status is TableStatus.PLAYING and lost.settlement is None
    back = lost.connect("bob", "n2", NOW + 100)  # re-attached through another node
    assert back is not None and back.cancelled == (node_grace,)
    assert [e.obj["type"] for e in back.events] == ["player_reconnected"]
    assert lost.seats[1] is not None and lost.seats[1].grace is None


def test_take_over_gives_players_of_a_dead_node_the_node_loss_grace() -> None:
    machine = playing(("n1", "n2"))
    step = machine.take_over(NOW + 8, 10.0, present=[set(), set()], lost_at=[NOW + 6, None])
    graces = {d.side: d.at for d in step.deadlines if d.kind == GRACE}
    assert graces == {0: NOW + 126, 1: NOW + 28}
    assert not step.events
    seats = machine.state()["seats"]
    assert seats[0]["grace_deadline"] == NOW + 126 and seats[0]["connected"] is False


def test_take_over_keeps_players_on_live_nodes_connected() -> None:
    machine = playing(("n1", "n2"))
    step = machine.take_over(NOW + 8, 10.0, present=[set(), {"n2"}], lost_at=[NOW + 6, None])
    assert [(d.kind, d.side) for d in step.deadlines if d.kind == GRACE] == [(GRACE, 0)]
    assert machine.seats[1] is not None and machine.seats[1].is_connected


def test_split_by_liveness() -> None:
    peers = {"a": NOW + 3, "b": NOW - 4, "c": NOW - 9}
    assert split_by_liveness(["a", "b", "c", "me"], peers, "me", NOW) == ({"a", "me"},
                                                                          NOW - 4)
    assert split_by_liveness(["a", "unknown"], peers, "me", NOW) == ({"a"}, None)
    assert split_by_liveness(["c"], {"c": NOW + 0.0}, "me", NOW) == (set(), NOW)

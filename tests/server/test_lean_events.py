"""Change-only table events (protocol 2, PROTOCOL.md §5.1) against the full form (protocol 1).

The property, over random games played over real sockets: a lean client that applies the
events it receives, in order, to the state it got (``game_start``, ``watching``, ``sync``)
holds, at every event, exactly the state a full-form client receives with that event. Also
the pure functions (``state_changes``/``apply_changes``) on random states with Hypothesis.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from event_forms import FullFormShadow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import (
    Client,
    RunningServer,
    StartServer,
    connect,
    play_out,
    register,
    scripted,
    seat_two,
)

from server.protocol.codec import Outgoing
from server.protocol.lean import apply_changes, apply_event, state_changes


async def connect_form(server: RunningServer, token: str, *, protocol: int, binary: bool,
                       address: str, hello: bool = True) -> Client:
    """A socket in event form ``protocol`` (in its ``hello``, or ``?protocol=`` with a bearer
    header), keeping the events as the server sent them (no state attached)."""
    client = Client(server.ws_url, token=token, binary=binary,
                    headers={"X-Forwarded-For": address}, hello=hello)
    client.protocol = protocol
    client.full_states = False
    await client._open(wait_welcome=False)
    welcome = await client.expect("welcome")
    assert welcome["protocol"] == protocol
    client.player = welcome["player"]
    return client


async def connect_lean(server: RunningServer, token: str, *, binary: bool,
                       address: str) -> Client:
    return await connect_form(server, token, protocol=2, binary=binary, address=address)


def random_decider(rng: random.Random) -> Any:
    def decide(side: int, state: dict[str, Any]) -> dict[str, Any] | None:
        game = state["game"]
        phase = game["phase"]
        if phase == "roll":
            if rng.random() < 0.01:
                return {"type": "resign", "kind": rng.choice(["single", "gammon"])}
            if game["can_double"] and rng.random() < 0.2:
                return {"type": "double"}
            return {"type": "roll"}
        if phase == "move":
            return {"type": "play", "play": rng.choice(game["legal_plays"])}
        if phase == "double_offered":
            return {"type": "take" if rng.random() < 0.8 else "drop"}
        if phase == "resign_offered":
            return {"type": rng.choice(["accept_resign", "reject_resign"])}
        return None
    return decide


def full_states(client: Client, table: str) -> dict[int, dict[str, Any]]:
    return {m["v"]: m["state"] for m in client.messages
            if m.get("table") == table and "v" in m and isinstance(m.get("state"), dict)
            and m.get("type") not in ("watching", "sync", "resume")}


def folded(client: Client, table: str) -> dict[int, dict[str, Any]]:
    """Each versioned event's state as the lean client computes it (from the last whole
    state it received on)."""
    state: dict[str, Any] | None = None
    out: dict[int, dict[str, Any]] = {}
    for m in client.messages:
        if m.get("table") != table:
            continue
        if m.get("type") in ("watching", "sync", "resume"):
            state = m["state"]
            for event in m.get("events", ()):  # none here: synced up to date
                state = apply_event(state, event)
            continue
        if "v" not in m:
            continue
        assert "state" not in m or m["type"] == "game_start", m
        if "changes" in m or "state" in m:
            state = apply_event(state, m)
            assert state is not None
            out[m["v"]] = state
    return out


@pytest.mark.parametrize(("seed", "mode", "match_length", "binary"), [
    (1, "competitive", 0, False),
    (2, "private", 3, True),
    (3, "competitive", 0, True),
    (4, "private", 5, False),
])
async def test_lean_events_rebuild_every_full_state(
    start_server: StartServer, seed: int, mode: str, match_length: int, binary: bool
) -> None:
    server = await start_server(dice_factory=scripted(seed))
    rng = random.Random(seed)
    a = await connect_form(server, await register(server, f"full{seed}"), protocol=1,
                           binary=not binary, address=f"10.96.{seed}.1", hello=False)
    b = await connect_lean(server, await register(server, f"lean{seed}"), binary=binary,
                           address=f"10.99.{seed}.1")
    watcher = await connect_lean(server, await register(server, f"look{seed}"), binary=binary,
                                 address=f"10.98.{seed}.1")
    table, _ = await seat_two(server, a, b, mode=mode, match_length=match_length)
    await watcher.request({"type": "watch", "table": table})
    until = "game_over" if match_length == 0 else "match_over"
    late: Client | None = None

    def stop(message: dict[str, Any]) -> bool:
        return late is None and message.get("type") == "moved" and message["v"] >= 12

    decide = random_decider(rng)
    over = await play_out({0: a, 1: b}, table, decide=decide, until=until, stop=stop)
    if over["type"] != until:  # a second lean watcher arrives mid-game
        late = await connect_lean(server, await register(server, f"late{seed}"),
                                  binary=binary, address=f"10.97.{seed}.1")
        await late.request({"type": "watch", "table": table})
        over = await play_out({0: a, 1: b}, table, decide=decide, until=until)
    for client in (b, watcher, *(() if late is None else (late,))):
        await client.expect(until, table=table)
    full = full_states(a, table)
    assert len(full) >= 2
    for client in (b, watcher, *(() if late is None else (late,))):
        lean = folded(client, table)
        common = sorted(set(full) & set(lean))
        assert common and common[-1] == max(full)
        for v in common:
            assert lean[v] == full[v], (client.player, v)
    # The bytes saved: a lean move event is a small fraction of the full one.
    moved_full = [m for m in a.messages if m.get("type") == "moved"]
    moved_lean = [m for m in b.messages if m.get("type") == "moved"]
    assert moved_full and moved_lean
    # A lean sync from a version mid-game: its events applied to the full state at that
    # version give every later full state, and the state it carries.
    since = sorted(full)[len(full) // 2]
    synced = await b.request({"type": "sync", "table": table, "since": since})
    state: dict[str, Any] | None = full[since]
    for event in synced["events"]:
        state = apply_event(state, event)
        if event["v"] in full:
            assert state == full[event["v"]]
    assert state == synced["state"]
    # The full form of the same sync carries the states the full client received.
    synced_full = await a.request({"type": "sync", "table": table, "since": since})
    received = {m["v"]: m for m in a.messages if m.get("table") == table and "v" in m
                and m.get("type") not in ("watching", "sync", "resume", "ack")}
    assert all(received[e["v"]] == e for e in synced_full["events"] if e["v"] in received)


async def test_protocol_at_connect_and_bad_protocol(start_server: StartServer) -> None:
    server = await start_server()
    for protocol in (1, 2):
        client = await connect_form(server, await register(server, f"proto{protocol}"),
                                    protocol=protocol, binary=False, address="10.95.0.1",
                                    hello=False)
        await client.close()
    other = await connect(server, await register(server, "proto3"), hello=True,
                          welcome=False)
    await other.send({"type": "hello", "token": "x", "protocol": 3, "id": 1})
    err = await other.expect("error")
    assert (err["code"], err["field"]) == ("bad_field", "protocol")


async def test_library_client_keeps_the_full_state(start_server: StartServer) -> None:
    """The client library on protocol 2 keeps each table's state by applying the changes,
    and hands every event on with the full state protocol 1 sends with it."""
    server = await start_server(dice_factory=scripted(11))
    full = await connect_form(server, await register(server, "fullside"), protocol=1,
                              binary=False, address="10.94.0.1")
    lean = await connect_form(server, await register(server, "leanside"), protocol=2,
                              binary=True, address="10.94.0.2")
    lean.full_states = True  # the library's default
    table, _ = await seat_two(server, full, lean)
    await play_out({0: full, 1: lean}, table)
    await lean.expect("game_over", table=table)
    states = full_states(full, table)
    seen = {m["v"]: m for m in lean.messages if m.get("table") == table and "v" in m
            and m.get("type") not in ("watching", "sync", "resume")}
    for v, state in states.items():
        assert seen[v]["state"] == state
    assert lean.state(table) == states[max(states)]


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
sections = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4)
states = st.fixed_dictionaries({
    "status": st.sampled_from(["open", "playing"]),
    "game": st.one_of(st.none(), sections),
    "clock": sections,
    "match": st.one_of(st.none(), sections),
    "seats": st.lists(st.one_of(st.none(), sections), max_size=2),
})


# Generation speed is wall-clock time: on a loaded machine it says nothing about the code.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states, states, st.sets(st.sampled_from(["status", "game", "clock"])))
def test_changes_then_apply_is_the_new_state(
    before: dict[str, Any], after: dict[str, Any], force: set[str]
) -> None:
    changes = state_changes(before, after, force)
    if changes is None:  # sent as a whole state
        assert any(type(before[k]) is dict and type(after[k]) is dict
                   and before[k].keys() != after[k].keys() for k in ("game", "clock"))
        return
    assert apply_changes(before, changes) == after
    assert before == before  # untouched
    if same(before, after) and not force:
        assert changes == {}


def same(a: Any, b: Any) -> bool:
    """Equal as the wire sees it: Python's ``0 == False`` and ``1 == True`` are different
    values on the wire, so a change from one to the other is sent."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_a_change_of_type_alone_is_sent() -> None:
    changes = state_changes({"status": "playing", "game": None, "clock": {"c": 0},
                             "match": None, "seats": []},
                            {"status": "playing", "game": None, "clock": {"c": False},
                             "match": None, "seats": []}, set())
    assert changes == {"clock": {"c": False}}


def test_the_check_below_the_socket_finds_a_full_form_that_differs() -> None:
    """``event_forms.FullFormShadow`` (the ``[lean+full]`` tests): a full-form event whose
    state is not the lean client's, after the changes, fails the check."""
    start: dict[str, Any] = {"status": "playing", "game": {"turn": 0}, "clock": None,
                             "match": None, "seats": []}
    after = {**start, "game": {"turn": 1}}
    changes = state_changes(start, after, set())
    assert changes is not None
    first = Outgoing({"type": "game_start", "table": "t1", "v": 1, "state": start},
                     {"type": "game_start", "table": "t1", "v": 1, "state": start})
    shadow = FullFormShadow()
    shadow.written["c1"] = [first, Outgoing(
        {"type": "rolled", "table": "t1", "v": 2, "state": after},
        {"type": "rolled", "table": "t1", "v": 2, "changes": changes})]
    assert shadow.check() == 2
    shadow.written["c1"].append(Outgoing(  # the full form went back a turn; the lean did not
        {"type": "rolled", "table": "t1", "v": 3, "state": start},
        {"type": "rolled", "table": "t1", "v": 3, "changes": {}}))
    with pytest.raises(AssertionError):
        shadow.check()

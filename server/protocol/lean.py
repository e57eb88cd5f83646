"""Change-only ("lean") table events, pure: what changed between two states, and applying it.

Two event forms exist (PROTOCOL.md §5.1); a client picks one at ``hello``:

- protocol 1, the full form: every state-carrying event has the whole ``state`` (§6);
- protocol 2, the lean form: the same event carries ``changes`` instead, only the parts of the
  state that differ from the state of the table's previous state-carrying event. ``game`` and
  ``clock`` are merged key by key (only their changed keys are sent); every other top-level
  key (``status``, ``seats``, ``game_no``, ``match``, ``rating``) is replaced whole. An event
  that starts a game (``game_start``) carries the whole ``state`` in both forms, and so do
  ``sync``, ``resume`` and ``watching`` replies.

:func:`apply_event` is what a client does with either form: applying the lean events in order
to the state of a ``sync`` gives, at every event, exactly the state the full form carries.

The table machine builds most events' ``changes`` from what its step changed
(``TableMachine._built_changes``, ``Game.snapshot_changes``); :func:`state_changes` is the
definition they must match key for key (``tests/tables/test_machine_built_changes.py``) and
what the machine uses where it has whole states to compare: after a handout (``force``), on a
replayed table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROTOCOL_FULL = 1
PROTOCOL_LEAN = 2
PROTOCOLS = (PROTOCOL_FULL, PROTOCOL_LEAN)

MERGED = ("game", "clock")
"""Top-level state keys whose changes are sent key by key (the others are replaced whole)."""

State = dict[str, Any]


def state_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any],
                  force: frozenset[str] | set[str] = frozenset()) -> dict[str, Any] | None:
    """The ``changes`` that turn ``before`` into ``after`` (see the module docstring), or None
    when they cannot say it (no state before, a key of ``game``/``clock`` came or went):
    then the event carries the whole state.

    ``force`` names top-level keys sent whole even when they look unchanged (a client may hold
    another value for them, e.g. from a ``sync`` answered between two events).
    """
    if before is None or before.keys() != after.keys():
        return None
    changes: dict[str, Any] = {}
    for key, value in after.items():
        old = before[key]
        if force and key in force:
            if (key in MERGED and type(value) is dict and type(old) is dict
                    and value.keys() != old.keys()):
                return None
            changes[key] = value
            continue
        if old is value:
            continue
        if type(value) is dict and type(old) is dict and key in MERGED:
            if value.keys() != old.keys():
                return None
            # A plain loop with old[k] (the keys are the same): this runs for every event,
            # over the game's ~20 keys, most of them the very same objects as before.
            part: dict[str, Any] = {}
            for k, v in value.items():
                o = old[k]
                if o is not v and (o != v or type(o) is not type(v)):
                    part[k] = v
            if part:
                changes[key] = part
        elif old != value or type(old) is not type(value):
            changes[key] = value
    return changes


def apply_changes(state: Mapping[str, Any], changes: Mapping[str, Any]) -> State:
    """A new state: ``state`` with ``changes`` applied (neither argument is modified)."""
    out = dict(state)
    for key, value in changes.items():
        old = out.get(key)
        if key in MERGED and type(value) is dict and type(old) is dict:
            merged = dict(old)
            merged.update(value)
            out[key] = merged
        else:
            out[key] = value
    return out


def apply_event(state: Mapping[str, Any] | None, event: Mapping[str, Any]) -> State | None:
    """The state after ``event`` (either form) for a client that held ``state`` before it.

    An event with a whole ``state`` replaces it; one with ``changes`` is applied to it; any
    other event leaves it as it is. Raises ValueError for ``changes`` with no state to apply
    them to (the client must ``sync`` first).
    """
    full = event.get("state")
    if isinstance(full, dict):
        return full
    changes = event.get("changes")
    if changes is None:
        return None if state is None else dict(state)
    if state is None:
        raise ValueError(f"event v{event.get('v')} carries changes but there is no state yet")
    return apply_changes(state, changes)


def full_form(event: Mapping[str, Any], state: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full-form event for a lean ``event``, given the state after it (None: unknown)."""
    out = {k: v for k, v in event.items() if k != "changes"}
    if "changes" in event and state is not None:
        out["state"] = state
    return out


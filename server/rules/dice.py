"""Dice sources: a cryptographically secure one for real games, a scripted one for tests."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from server.rules.errors import DiceExhaustedError

Roll = tuple[int, int]
"""Two dice, each 1..6, in the order they were rolled."""


@runtime_checkable
class DiceSource(Protocol):
    """Anything that rolls one die: ``roll_die()`` returns an int in 1..6."""

    def roll_die(self) -> int: ...


class SecretDice:
    """Dice from the operating system's CSPRNG (``secrets``); the default everywhere.

    Random bytes are fetched 64 at a time (one system call for about 30 rolls instead of
    one per die); a byte of 252 or more is skipped so that each face is equally likely.
    """

    __slots__ = ("_bytes",)

    def __init__(self) -> None:
        self._bytes: Iterator[int] = iter(())

    def roll_die(self) -> int:
        while True:
            for byte in self._bytes:
                if byte < 252:  # 252 = 42 x 6: the faces stay uniform
                    return byte % 6 + 1
            self._bytes = iter(secrets.token_bytes(64))


class ScriptedDice:
    """Dice that come out in a fixed order, for tests.

    ``ScriptedDice([3, 1, 6, 6])`` yields 3, then 1, then 6, then 6; one more roll raises
    ``DiceExhaustedError``. Every value must be an int in 1..6.
    """

    __slots__ = ("_index", "_values")

    def __init__(self, values: Iterable[int]) -> None:
        checked: list[int] = []
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
                raise ValueError(f"dice value must be an int in 1..6, got {value!r}")
            checked.append(value)
        self._values = checked
        self._index = 0

    @property
    def remaining(self) -> int:
        """How many dice are left in the script."""
        return len(self._values) - self._index

    def roll_die(self) -> int:
        if self._index >= len(self._values):
            raise DiceExhaustedError(f"scripted dice exhausted after {len(self._values)} dice")
        value = self._values[self._index]
        self._index += 1
        return value


def check_roll(roll: object) -> Roll:
    """Return ``roll`` as a ``(die, die)`` tuple, or raise ValueError naming the field."""
    if not isinstance(roll, (tuple, list)) or len(roll) != 2:
        raise ValueError(f"roll must be two dice, got {roll!r}")
    a, b = roll
    for die in (a, b):
        if isinstance(die, bool) or not isinstance(die, int) or not 1 <= die <= 6:
            raise ValueError(f"roll: each die must be an int in 1..6, got {roll!r}")
    return (a, b)

"""When the client library sends a refused request again, pure (no I/O): the waits that
:meth:`server.client.Client.request` takes from a refusal's ``retry_after``.

Two refusals say that nothing was done and when to ask again (PROTOCOL.md §8, §9):

- ``rate_limited``: the socket's message rate; the same message (the same ``id``) is sent
  again after ``retry_after``, at most :data:`RATE_RETRIES` times, unless the wait is longer
  than :data:`RATE_RETRY_WAIT_MAX` (a limit that is not the message rate, such as open
  tables per address: the request fails);
- ``unavailable``: the table's node did not answer, the table is changing hands, the store
  is away; sent again (a fresh ``id``) after ``retry_after``, at most ``retries`` times and
  ``retry_for`` seconds of waiting in all (:class:`UnavailableResend`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RATE_RETRIES = 5
"""Times a request refused ``rate_limited`` is sent again (after its ``retry_after``)."""
RATE_RETRY_WAIT_MAX = 10.0
"""A ``rate_limited`` refusal asking to wait longer than this (s) is not waited out."""
UNAVAILABLE_RETRIES = 3
"""Times a request refused ``unavailable`` is sent again (by default)."""
UNAVAILABLE_RETRY_FOR = 10.0
"""Seconds of ``retry_after`` waits spent on one request at most (by default)."""


def rate_retry_wait(answer: Mapping[str, Any]) -> float | None:
    """The wait before sending again a request answered ``answer``: None when it is not a
    ``rate_limited`` refusal, or asks for a wait longer than :data:`RATE_RETRY_WAIT_MAX`."""
    if answer.get("type") != "error" or answer.get("code") != "rate_limited":
        return None
    retry_after = answer.get("retry_after")
    wait = float(retry_after) if isinstance(retry_after, int | float) else 1.0
    return wait if 0 <= wait <= RATE_RETRY_WAIT_MAX else None


@dataclass(frozen=True, slots=True)
class UnavailableResend:
    """How long a request refused ``unavailable`` waits before it is sent again."""

    retries: int = UNAVAILABLE_RETRIES
    retry_for: float = UNAVAILABLE_RETRY_FOR

    def wait(self, refusal: Mapping[str, Any], retries: int, waited: float) -> float | None:
        """The wait before sending again a request refused ``refusal`` after ``retries``
        resends and ``waited`` seconds of waiting; None: the refusal is final."""
        if refusal.get("code") != "unavailable" or retries >= self.retries:
            return None
        wait = refusal.get("retry_after")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or wait <= 0:
            return None
        return float(wait) if waited + wait <= self.retry_for else None

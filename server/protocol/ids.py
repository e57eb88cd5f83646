"""The shape of a player id, one source for every check and for the OpenAPI documents.

Every player id the server issues matches :data:`PLAYER_ID_PATTERN`: an account's id is its
lower-case name, a guest's ``guest-<10 hex digits>``, a bot's ``bot-<level>-<10 hex
digits>``. An HTTP parameter or body naming a player is checked against it, and the OpenAPI
documents (``server/openapi.json``, ``server/openapi_tournaments.json``) carry the same
pattern (a test holds them to it), so what they describe is exactly what the server accepts.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_PLAYER_ID", "PLAYER_ID", "PLAYER_ID_PATTERN"]

MAX_PLAYER_ID: Final = 64
#: 1..64 ASCII letters, digits, ``_`` or ``-`` (anchored, as JSON Schema writes it).
PLAYER_ID_PATTERN: Final = "^[A-Za-z0-9_-]{1,64}$"
PLAYER_ID: Final = re.compile(PLAYER_ID_PATTERN[1:-1])

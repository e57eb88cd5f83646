"""Identifiers every part shares: the shape of a player id, the guest and bot prefixes, and the
network key two client addresses are compared by. Pure; core and shell import it alike.

Every player id the server issues matches :data:`PLAYER_ID_PATTERN`: an account's id is its
lower-case name, a guest's ``guest-<10 hex digits>``, a bot's ``bot-<level>-<10 hex
digits>``. An HTTP parameter or body naming a player is checked against it, and the OpenAPI
documents (``server/openapi.json``, ``server/openapi_tournaments.json``) carry the same
pattern (a test holds them to it), so what they describe is exactly what the server accepts.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import secrets
from typing import Final

__all__ = ["BOT_ID", "BOT_PREFIX", "GUEST_PREFIX", "MAX_PLAYER_ID", "PLAYER_ID",
           "PLAYER_ID_PATTERN", "bot_name", "is_bot_id", "network_key", "new_table_id"]

MAX_PLAYER_ID: Final = 64
#: 1..64 ASCII letters, digits, ``_`` or ``-`` (anchored, as JSON Schema writes it).
PLAYER_ID_PATTERN: Final = "^[A-Za-z0-9_-]{1,64}$"
PLAYER_ID: Final = re.compile(PLAYER_ID_PATTERN[1:-1])

GUEST_PREFIX: Final = "guest-"
"""A guest's id: ``guest-<10 hex digits>``."""
BOT_PREFIX: Final = "bot-"
"""A bot account's id: ``bot-<level>-<hex>``; only the server issues them (names cannot
contain ``-``, so no account or guest id starts like this)."""
BOT_ID: Final = re.compile(
    r"bot-(random|beginner|casual|intermediate|advanced|basic|strong|expert)-[0-9a-f]{10}")
"""The shape of every bot id the server issues (``bot-<level>-<10 hex digits>``; ids issued
before the ladder name its old levels, still read: ``basic``, ``strong``, ``expert``)."""


def is_bot_id(player: str) -> bool:
    return player.startswith(BOT_PREFIX)


def bot_name(player: str) -> str | None:
    """The display name of a bot id the server could have issued ("Computer (beginner)"), or
    None when ``player`` is not shaped like one."""
    match = BOT_ID.fullmatch(player)
    return None if match is None else f"Computer ({match.group(1)})"


def network_key(address: str, *, ipv6_prefix: int = 64) -> str:
    """What "the same network address" compares.

    An IPv4 address is itself; an IPv4-mapped IPv6 address is its IPv4 address; any other IPv6
    address stands for its ``/ipv6_prefix`` network (one household or host usually owns a whole
    /64); text that is not an IP address (a proxy's client id, say) is compared lower-cased.
    """
    text = address.strip()
    if _PLAIN_IPV4.fullmatch(text):
        return text
    return _parsed_network_key(text, ipv6_prefix)


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PLAIN_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
"""A dotted-quad IPv4 address already in canonical form: the common case, kept cheap."""


@functools.lru_cache(maxsize=65536)
def _parsed_network_key(text: str, ipv6_prefix: int) -> str:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text.lower()
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))
    return str(ip)


def new_table_id() -> str:
    """A new table's id: 12 URL-safe characters (72 random bits), never starting with "-"
    (a command line would take ``--join -x…`` for an option)."""
    while True:
        table_id = secrets.token_urlsafe(9)
        if not table_id.startswith("-"):
            return table_id

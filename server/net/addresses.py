"""The client's network address, believing X-Forwarded-For only from trusted proxies. Pure.

Two accounts playing from the same address are never rated, so the address matters. Behind a
load balancer every peer is the balancer; list it in ``trusted_proxies`` and the address is
read from ``X-Forwarded-For`` instead: walking the header from the right (the hop nearest to
us), skipping addresses that are themselves trusted proxies, the first other one is the
client's. A header from an untrusted peer is ignored, so clients cannot forge it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from server.config import IPNetwork


def _parse(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[::1]:443"
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # "1.2.3.4:5678"
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_trusted(address: str | None, trusted: Sequence[IPNetwork]) -> bool:
    if address is None or not trusted:
        return False
    ip = _parse(address)
    return ip is not None and any(ip in net for net in trusted)


def client_address(
    peer: str | None, forwarded_for: str | None, trusted: Sequence[IPNetwork]
) -> str:
    """The address to attribute a request to (``"unknown"`` when there is none)."""
    if peer is None:
        return "unknown"
    if forwarded_for is None or not is_trusted(peer, trusted):
        return peer
    hops = [h for h in (part.strip() for part in forwarded_for.split(",")) if h]
    for hop in reversed(hops):
        ip = _parse(hop)
        if ip is None:
            # A malformed hop: stop here and attribute the request to the last good hop.
            break
        if not any(ip in net for net in trusted):
            return str(ip)
        peer = str(ip)
    return peer

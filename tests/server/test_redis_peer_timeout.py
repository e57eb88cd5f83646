"""A node's TCP connections to Redis fail within ``PEER_TIMEOUT`` once their peer stops
acknowledging (``server/store/redis_client.py``): keep-alive and ``TCP_USER_TIMEOUT`` are set on
every TCP connection of the node's client, plain or cluster, and nothing on a Unix socket."""

from __future__ import annotations

import socket
import sys

import pytest
from redis.exceptions import RedisError

from server.store.redis_client import PEER_TIMEOUT, TCP_OPTIONS, redis_client

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux socket options")


def _socket_of(client: object) -> socket.socket:
    pool = client.connection_pool  # type: ignore[attr-defined]
    conn = next(iter(pool._available_connections))
    sock: socket.socket = conn._writer.transport.get_extra_info("socket")
    return sock


async def test_a_tcp_connection_fails_within_the_peer_timeout(redis_url: str) -> None:
    url = "redis://127.0.0.1:6379/0" if redis_url.startswith("unix://") else redis_url
    if url.startswith("redis+cluster://"):
        pytest.skip("a cluster's node clients are checked through their pool elsewhere")
    client = redis_client(url)
    try:
        try:
            await client.ping()
        except (RedisError, OSError):
            pytest.skip("no Redis on TCP here")
        sock = _socket_of(client)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        for option, value in TCP_OPTIONS.items():
            assert sock.getsockopt(socket.IPPROTO_TCP, option) == value
        assert TCP_OPTIONS[socket.TCP_KEEPIDLE] == PEER_TIMEOUT
    finally:
        await client.aclose()


def test_a_unix_socket_gets_no_tcp_option() -> None:
    # Options of a TCP socket would fail on a Unix one (the embedded store's): none is given.
    client = redis_client("unix:///tmp/table42-none.sock?db=0")
    kwargs = client.connection_pool.connection_kwargs
    assert "socket_keepalive" not in kwargs and "socket_keepalive_options" not in kwargs
    tcp = redis_client("redis://127.0.0.1:1/0").connection_pool.connection_kwargs
    assert tcp["socket_keepalive"] is True and tcp["socket_keepalive_options"] == TCP_OPTIONS

"""The process settings (``--workers``, ``--uvloop``) and uvloop's transports, without a
server: what ``python -m server`` picks and what a socket writes through."""

from __future__ import annotations

import asyncio
import os

import pytest

from server.config import SettingsError
from server.config_args import settings_from
from server.net.connection import writable
from server.net.event_loop import loop_factory
from server.workers import worker_args


def test_workers_default_to_one_and_auto_is_every_usable_core() -> None:
    assert settings_from([], {}).workers == 1
    assert settings_from(["--workers", "3"], {}).workers == 3
    assert settings_from(["--workers", "auto"], {}).workers == len(os.sched_getaffinity(0))
    assert settings_from([], {"TABLE42_WORKERS": "auto"}).workers >= 1
    with pytest.raises(SettingsError):
        settings_from(["--workers", "0"], {})


def test_a_worker_gets_the_parent_flags_then_its_own() -> None:
    settings = settings_from(["--node-id", "n", "--workers", "2"], {})
    args = worker_args(["--node-id", "n", "--workers", "2"], settings, 8123, "redis://x", 2)
    # argparse keeps a flag's last value: each worker is one node with its own id
    worker = settings_from(args[3:], {})
    assert (worker.workers, worker.reuse_port, worker.port, worker.node_id,
            worker.redis_url) == (1, True, 8123, "n-2", "redis://x")


def test_uvloop_is_used_when_installed_unless_turned_off() -> None:
    uvloop = pytest.importorskip("uvloop")
    assert settings_from([], {}).uvloop is True
    assert loop_factory(True) is uvloop.new_event_loop
    assert loop_factory(settings_from(["--uvloop", "0"], {}).uvloop) is None


def test_a_uvloop_socket_transport_is_written_to() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def check() -> None:
        got = asyncio.get_running_loop().create_future()

        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            got.set_result(await reader.readexactly(5))
            writer.close()

        server = await asyncio.start_server(on_client, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert not isinstance(writer.transport, asyncio.WriteTransport)  # uvloop's own class
        transport = writable(writer.transport)
        assert transport is writer.transport
        transport.write(b"hello")
        assert await got == b"hello"
        writer.close()
        server.close()
        await server.wait_closed()

    uvloop.run(check())
    assert writable(None) is None
    assert writable(asyncio.BaseTransport()) is None

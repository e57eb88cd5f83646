"""The deployment files hold together: docker-compose.yml's structure, HAProxy's config.

Images cannot be pulled here, so the compose file is checked as data (PyYAML) and the load
balancer's config by HAProxy itself (``haproxy -c``, Debian's ``haproxy`` package). The last
test runs that config for real, pointed at two ``python -m server`` processes on loopback,
and opens a WebSocket through it: upgrades pass, both nodes get traffic.

Without ``haproxy`` on PATH the HAProxy tests are skipped, except under ``CI=true`` where
they fail (``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
import yaml

from server.client import Client

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
DOCKERFILE = ROOT / "Dockerfile"


def _haproxy() -> str:
    found = shutil.which("haproxy")
    if found is None:
        message = "haproxy not installed (apt-get install -y haproxy)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):  # KEY=VALUE form
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text))


def test_redis_keeps_an_append_only_file_on_a_volume(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    assert "--appendfsync everysec" in command
    volume, _, target = redis["volumes"][0].partition(":")
    assert volume in compose["volumes"]  # a named volume, kept across `down`/`up`
    assert target == "/data" and "--dir /data" in command
    assert "redis-cli" in redis["healthcheck"]["test"]


def test_server_replicas_are_built_from_the_dockerfile(compose: dict[str, Any]) -> None:
    server = compose["services"]["server"]
    assert server["build"]["dockerfile"] == "Dockerfile"
    assert (ROOT / server["build"]["context"] / "Dockerfile").is_file()
    assert server["deploy"]["replicas"] >= 2
    assert "ports" not in server  # replicas share no host port; only the LB publishes one
    env = _env(server)
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert "TABLE42_NODE_ID" not in env  # one id per process (random), not one per service
    assert server["depends_on"]["redis"]["condition"] == "service_healthy"
    assert server["stop_signal"] == "SIGTERM"
    assert _seconds(server["stop_grace_period"]) >= 30
    assert "/healthz" in " ".join(server["healthcheck"]["test"])


def test_the_nodes_trust_exactly_the_load_balancer(compose: dict[str, Any]) -> None:
    services = compose["services"]
    lb_address = services["lb"]["networks"]["backend"]["ipv4_address"]
    subnet = compose["networks"]["backend"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(lb_address) in ipaddress.ip_network(subnet)
    assert _env(services["server"])["TABLE42_TRUSTED_PROXIES"] == lb_address
    assert services["server"]["networks"] == ["backend"]


def test_the_load_balancer_publishes_8080_and_waits_for_the_nodes(
    compose: dict[str, Any],
) -> None:
    lb = compose["services"]["lb"]
    assert "haproxy" in lb["image"]
    assert "8080:8080" in lb["ports"]
    assert lb["depends_on"]["server"]["condition"] == "service_healthy"
    source, target = lb["volumes"][0].split(":")[:2]
    assert (ROOT / source).resolve() == HAPROXY_CFG
    assert target == "/usr/local/etc/haproxy/haproxy.cfg"


def test_the_dockerfile_installs_the_package_and_runs_a_node() -> None:
    text = DOCKERFILE.read_text()
    assert "pip wheel" in text and "pip install" in text
    assert "STOPSIGNAL SIGTERM" in text
    assert '"python", "-m", "server", "--host", "0.0.0.0", "--port", "8080"' in text


def test_the_haproxy_config_passes_websockets_and_the_client_address() -> None:
    text = HAPROXY_CFG.read_text()
    assert re.search(r"^\s*timeout tunnel\s+\S+", text, re.M)
    assert _seconds(re.search(r"timeout tunnel\s+(\S+)", text)[1]) >= 600  # type: ignore[index]
    assert "http-request set-header X-Forwarded-For %[src]" in text
    assert "uri /readyz" in text and "http-check expect status 200" in text
    assert re.search(r"server-template \S+ \d+ server:8080", text)
    assert "bind :8080" in text


def test_haproxy_accepts_the_config() -> None:
    result = subprocess.run([_haproxy(), "-c", "-f", str(HAPROXY_CFG)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


# --- The same config, live: two nodes on loopback instead of Docker's DNS -----------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_variant(lb_port: int, node_ports: list[int]) -> str:
    """deploy/haproxy.cfg with its listener on loopback and fixed nodes in place of the
    DNS-discovered ones (and a fast health check); everything else as deployed."""
    text = HAPROXY_CFG.read_text()
    text = text.replace("bind :8080", f"bind 127.0.0.1:{lb_port}")
    text = text.replace("log stdout format raw local0 info", "log stderr format raw local0 err")
    text = re.sub(r"maxconn \d+", "maxconn 1000", text)  # within a small descriptor limit
    text = re.sub(r"^\s*default-server .*$", "    default-server check inter 100ms fall 2 rise 1",
                  text, flags=re.M)
    servers = "\n".join(f"    server node{i} 127.0.0.1:{port}"
                        for i, port in enumerate(node_ports, 1))
    text = re.sub(r"^\s*server-template .*$", servers, text, flags=re.M)
    assert not re.search(r"^\s*server-template", text, re.M)
    assert f"127.0.0.1:{lb_port}" in text
    return text


async def _get_json(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any]]:
    async with http.get(url) as resp:
        return resp.status, await resp.json()


async def _wait_ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                if (await _get_json(http, url))[0] == 200:
                    return
            except (aiohttp.ClientError, ValueError):
                pass
            await asyncio.sleep(0.05)
    raise AssertionError(f"{url} never answered 200")


@pytest.fixture
async def two_nodes(
    redis_url: str, key_prefix: str, redis_client: aioredis.Redis
) -> AsyncIterator[list[int]]:
    ports = [_free_port(), _free_port()]
    env = {**os.environ, "REDIS_URL": redis_url, "TABLE42_KEY_PREFIX": key_prefix,
           "TABLE42_SCRYPT_N": "2", "TABLE42_LOG_LEVEL": "WARNING",
           "TABLE42_TRUSTED_PROXIES": "127.0.0.1"}
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "--port", str(port), "--node-id", f"lb-node{i}",
        env=env) for i, port in enumerate(ports, 1)]
    try:
        for port in ports:
            await _wait_ready(f"http://127.0.0.1:{port}/readyz")
        yield ports
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.terminate()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


@pytest.fixture
def haproxy() -> str:
    return _haproxy()


async def test_websockets_pass_through_haproxy_to_both_nodes(
    haproxy: str, two_nodes: list[int], tmp_path: Path
) -> None:
    lb_port = _free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(local_variant(lb_port, two_nodes))
    proc = await asyncio.create_subprocess_exec(haproxy, "-db", "-f", str(config))
    try:
        base = f"http://127.0.0.1:{lb_port}"
        await _wait_ready(base + "/readyz")
        nodes = set()
        for _ in range(8):  # a new connection each time: leastconn alternates on a tie
            async with aiohttp.ClientSession() as http:
                status, body = await _get_json(http, base + "/readyz")
            assert status == 200
            nodes.add(body["node"])
        assert nodes == {"lb-node1", "lb-node2"}
        # A WebSocket through the balancer: upgraded, authenticated, welcomed, answered.
        client = await Client.connect(f"ws://127.0.0.1:{lb_port}/ws", guest=True, hello=True)
        try:
            assert client.welcome is not None
            reply = await client.request({"type": "list_tables"})
            assert reply["type"] == "tables"
        finally:
            await client.close()
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()

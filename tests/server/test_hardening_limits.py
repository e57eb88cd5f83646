"""Hardening, per-address and per-account limits: limits on what one address or account can take.

Each test floods from one address (sent as X-Forwarded-For through the trusted loopback
proxy), bounded in count, checks that the limit holds with 429 / ``rate_limited`` and a
``Retry-After``, and that a second address is served normally meanwhile.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
import websockets
from hardening_helpers import ServerProcess, http_json
from server_helpers import RunningServer, StartServer, connect, guest, register

FLOODER = "198.51.100.7"
OTHER = "203.0.113.9"


def _from(address: str, **headers: str) -> dict[str, str]:
    return {"X-Forwarded-For": address, **headers}


async def test_guest_sessions_and_registrations_per_address(start_server: StartServer) -> None:
    server = await start_server(limits=True, guest_rate=0.01, guest_burst=5,
                                register_rate=0.01, register_burst=3)
    statuses = []
    for _ in range(40):
        status, headers, body = await http_json("POST", server.http + "/api/guest",
                                                headers=_from(FLOODER))
        statuses.append(status)
        if status == 429:
            assert body["error"]["code"] == "rate_limited"
            assert int(headers["Retry-After"]) >= 1
    assert statuses.count(200) == 5 and statuses.count(429) == 35
    status, _h, _b = await http_json("POST", server.http + "/api/guest", headers=_from(OTHER))
    assert status == 200

    codes = []
    for i in range(10):
        status, headers, _b = await http_json(
            "POST", server.http + "/api/register", headers=_from(FLOODER),
            json_body={"name": f"flood{i}", "password": "correct horse"})
        codes.append(status)
    assert codes.count(201) == 3 and codes.count(429) == 7
    status, _h, _b = await http_json("POST", server.http + "/api/register", headers=_from(OTHER),
                                     json_body={"name": "honest", "password": "correct horse"})
    assert status == 201


async def test_bot_tokens_share_the_guest_limit_per_address(start_server: StartServer) -> None:
    # POST /api/bot issues a token kept as long as a guest's: the same bucket bounds both.
    server = await start_server(limits=True, guest_rate=0.01, guest_burst=5)
    statuses = []
    for i in range(12):
        path = "/api/bot" if i % 2 else "/api/guest"
        status, headers, body = await http_json("POST", server.http + path,
                                                headers=_from(FLOODER), json_body={})
        statuses.append(status)
        if status == 429:
            assert body["error"]["code"] == "rate_limited" and int(headers["Retry-After"]) >= 1
    assert statuses.count(200) == 5 and statuses.count(429) == 7
    status, _h, body = await http_json("POST", server.http + "/api/bot", headers=_from(OTHER),
                                       json_body={"level": "random"})
    assert status == 200 and body["bot"] is True


async def test_sockets_per_address(start_server: StartServer) -> None:
    server = await start_server(limits=True, max_sockets_per_address=5)
    token = await guest(server)
    held = [await connect(server, token if i == 0 else await guest(server), address=FLOODER)
            for i in range(5)]
    refused = 0
    for _ in range(20):
        try:
            await websockets.connect(server.ws_url, additional_headers=_from(FLOODER))
        except websockets.InvalidStatus as exc:
            assert exc.response.status_code == 429
            assert exc.response.headers["Retry-After"]
            refused += 1
    assert refused == 20
    other = await connect(server, await guest(server), address=OTHER)
    assert other.player.startswith("guest-")
    await held[0].close()
    await asyncio.sleep(0.1)
    again = await connect(server, await guest(server), address=FLOODER)  # room again
    assert again.player


async def test_tables_per_player_and_per_address(start_server: StartServer) -> None:
    server = await start_server(limits=True, table_create_rate=0.01, table_create_burst=3,
                                max_open_tables_per_address=2)
    flooder = await connect(server, await guest(server), address=FLOODER)
    answers = []
    for _ in range(10):  # create and abandon, as fast as the socket allows
        reply = await flooder.request({"type": "create_table", "mode": "boosted"})
        answers.append(reply)
        if reply["type"] == "table_created":
            await flooder.request({"type": "leave", "table": reply["table"]})
    created = [r for r in answers if r["type"] == "table_created"]
    limited = [r for r in answers if r.get("code") == "rate_limited"]
    assert len(created) == 3 and len(limited) == 7
    assert all(r["retry_after"] >= 1 for r in limited)

    # Open tables per address: other players from that address may open two, not three.
    openers = [await connect(server, await guest(server), address="198.51.100.8")
               for _ in range(3)]
    replies = [await c.request({"type": "create_table", "mode": "boosted"}) for c in openers]
    assert [r["type"] for r in replies] == ["table_created", "table_created", "error"]
    assert replies[2]["code"] == "rate_limited"
    # Another address is served normally.
    honest = await connect(server, await guest(server), address=OTHER)
    reply = await honest.request({"type": "create_table", "mode": "boosted"})
    assert reply["type"] == "table_created"


async def _login(server: RunningServer, address: str, password: str) -> tuple[int, dict[str, str]]:
    status, headers, _body = await http_json(
        "POST", server.http + "/api/login", headers=_from(address),
        json_body={"name": "alice", "password": password})
    return status, headers


async def test_login_attempts_per_address(start_server: StartServer) -> None:
    server = await start_server(limits=True, login_rate=0.01, login_burst=4)
    await register(server, "alice", "correct horse")
    statuses = []
    for _ in range(10):  # right passwords, bounded: the per-address rate alone refuses
        status, headers = await _login(server, FLOODER, "correct horse")
        statuses.append(status)
        if status == 429:
            assert int(headers["Retry-After"]) >= 1
    assert statuses == [200] * 4 + [429] * 6
    assert (await _login(server, OTHER, "correct horse"))[0] == 200


async def test_login_failures_delay_then_lock_one_address_not_the_owner(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, login_free_failures=3, login_delay_base=30.0,
                                login_lock_after=5, login_lock_time=600.0, login_rate=0.0)
    await register(server, "alice", "correct horse")
    statuses = []
    for _ in range(30):  # guessing from one address, bounded
        status, headers = await _login(server, FLOODER, "wrong guess!")
        statuses.append(status)
        if status == 429:
            assert int(headers["Retry-After"]) >= 1
    # Three free failures, then a growing delay: every further guess is refused unchecked.
    assert statuses[:3] == [401, 401, 401] and set(statuses[3:]) == {429}
    # Even the right password waits at that address ...
    assert (await _login(server, FLOODER, "correct horse"))[0] == 429
    # ... while the owner, logging in from another address, is not locked out.
    assert (await _login(server, OTHER, "correct horse"))[0] == 200


async def test_password_change_guesses_share_the_login_failure_throttle(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, login_free_failures=3, login_delay_base=30.0,
                                login_lock_after=5, login_lock_time=600.0, login_rate=0.0)
    token = await register(server, "alice", "correct horse")
    statuses = []
    for _ in range(10):  # a token holder guessing the current password, bounded
        status, headers, _body = await http_json(
            "POST", server.http + "/api/password",
            headers=_from(FLOODER, Authorization=f"Bearer {token}"),
            json_body={"password": "wrong guess!", "new_password": "a brand new secret"})
        statuses.append(status)
        if status == 429:
            assert int(headers["Retry-After"]) >= 1
    assert statuses[:3] == [401, 401, 401] and set(statuses[3:]) == {429}
    # The failures count against logins from that address too, not from another one.
    assert (await _login(server, FLOODER, "correct horse"))[0] == 429
    assert (await _login(server, OTHER, "correct horse"))[0] == 200


async def test_account_wide_failures_only_let_known_addresses_in(
    start_server: StartServer,
) -> None:
    server = await start_server(limits=True, login_free_failures=100, login_lock_after=100,
                                login_account_lock_after=6, login_rate=0.0)
    await register(server, "alice", "correct horse")
    assert (await _login(server, OTHER, "correct horse"))[0] == 200  # the owner's address
    for i in range(6):  # a spread-out guesser: one guess from each of six addresses
        assert (await _login(server, f"192.0.2.{i + 1}", "wrong guess!"))[0] == 401
    # Past the account-wide threshold, a new address (even with the password) must wait ...
    assert (await _login(server, "192.0.2.99", "correct horse"))[0] == 429
    # ... and the owner's known address still gets in.
    assert (await _login(server, OTHER, "correct horse"))[0] == 200


async def test_password_hashing_is_shared_fairly_between_addresses(
    start_server: StartServer,
) -> None:
    # Real hashing cost, two hashes at a time: one address floods logins concurrently.
    server = await start_server(limits=True, scrypt_n=2**12, scrypt_r=8,
                                max_concurrent_hashes=2, hashes_per_address=2, login_rate=0.0,
                                login_free_failures=1000, login_lock_after=1000,
                                login_account_lock_after=100_000)
    await register(server, "alice", "correct horse")
    await register(server, "bob", "bob's secret")

    async def attacker() -> int:
        status, _h, _b = await http_json(
            "POST", server.http + "/api/login", headers=_from(FLOODER),
            json_body={"name": "alice", "password": "wrong guess!"})
        return status

    async def victim(i: int) -> int:
        status, _h, _b = await http_json(
            "POST", server.http + "/api/login", headers=_from(f"203.0.113.{20 + i}"),
            json_body={"name": "bob", "password": "bob's secret"})
        return status

    flood = [asyncio.ensure_future(attacker()) for _ in range(60)]
    honest = await asyncio.gather(*(victim(i) for i in range(10)))
    flooded = await asyncio.gather(*flood)
    assert honest == [200] * 10, honest  # no busy, no refusal for the other addresses
    assert set(flooded) <= {401, 429} and flooded.count(429) > 0


def _half_sent(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # headers never end
    return sock


@pytest.mark.timeout(120)
async def test_half_sent_requests_cannot_starve_healthz(redis_url: str, key_prefix: str) -> None:
    server = await ServerProcess(
        "--redis-url", redis_url, "--key-prefix", key_prefix, "--http-max-connections", "60",
        "--http-header-timeout", "2", "--scrypt-n", "2").start()
    held: list[socket.socket] = []
    try:
        for _ in range(300):
            held.append(await asyncio.to_thread(_half_sent, server.port))
        status, _h, body = await http_json("GET", server.http + "/healthz")
        assert status == 200, body
        assert server.open_fds() < 60 + 80  # the cap, plus Redis, the log and the listener
        # The slow ones are closed after the header timeout (those the cap did not close).
        open_ones = list(held)
        for _ in range(60):
            await asyncio.sleep(0.25)
            still = []
            for sock in open_ones:
                sock.settimeout(0.001)
                try:
                    if sock.recv(1) != b"":
                        still.append(sock)
                except TimeoutError:
                    still.append(sock)
                except OSError:
                    pass
            open_ones = still
            if not open_ones:
                break
        assert open_ones == []
    finally:
        for sock in held:
            sock.close()
        server.stop()

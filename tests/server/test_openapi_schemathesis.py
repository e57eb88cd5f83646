"""A property test of every endpoint of the OpenAPI document (schemathesis, from PyPI) against a
real running server and real Redis: requests generated from the spec, valid ones and (negative
mode) ones that break it, each response checked (no 5xx; status, headers, content type and
body as the spec says).

One test per operation (so the workers share them out), all against one server for the module
(``module_server``) with two players and a settled game. Bounded: at most ``MAX_EXAMPLES``
generated requests per operation and mode, no example database, derandomized (the same
requests every run).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import hypothesis
import pytest
import pytest_asyncio
import schemathesis
from hypothesis import HealthCheck
from public_helpers import get
from redis.asyncio import Redis
from schemathesis import GenerationMode
from server_helpers import RunningServer, register

from rating_plugin.store import RatingStore
from server.net.public_api import load_openapi

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODULE_SERVER = {"http_rate_limit": 100_000.0, "http_rate_burst": 100_000}
"""The fuzzer's requests all come from one address."""
MAX_EXAMPLES = 20
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.response_schema_conformance,
]
"""What "matches the spec" means here. Left out: schemathesis's positive-data check, which
wants every schema-valid request accepted; a spec cannot say that ``k`` and
``recent_games`` exclude each other or that ``player`` and ``opponent`` differ, and those
requests are answered 400 naming the parameter, as documented."""


def _operations(document: dict[str, Any]) -> list[Any]:
    schema = schemathesis.openapi.from_dict(document)
    found = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    # The WebSocket upgrade: the socket tests drive it with real clients.
    return [operation for operation in found if operation.path != "/ws"]


LABELS = [operation.label for operation in _operations(load_openapi())]
"""Every operation of the document the server serves (``test_the_served_document_is_fuzzed``
checks that it is this one)."""


def _fuzz(document: dict[str, Any], label: str, base_url: str) -> list[str]:
    """Run operation ``label`` of ``document`` against ``base_url``; returns the failures."""
    failures: list[str] = []
    [operation] = [op for op in _operations(document) if op.label == label]
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

        @hypothesis.settings(
            max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
            suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate],
        )
        @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
        def check(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=10)

        try:
            check()
        except hypothesis.errors.Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE  # nothing to break: no parameters
        except (Exception, BaseExceptionGroup) as exc:  # collect them all, then report
            failures.append(f"{operation.label} ({mode.value}): {exc}")
    return failures


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fuzzed(module_server: RunningServer) -> RunningServer:
    """The module's server with two players and a game of theirs settled."""
    for name in ("alice", "bob"):
        await register(module_server, name)
    async with Redis.from_url(module_server.settings.redis_url or "") as redis:
        store = RatingStore(redis, module_server.settings.key_prefix)
        await store.settle("g1", ladder="table42", winner="alice", loser="bob",
                           finished_at=time.time())
    return module_server


async def test_the_served_document_is_fuzzed(fuzzed: RunningServer) -> None:
    status, document = await get(fuzzed, "/api/openapi.json")
    assert status == 200
    assert document == load_openapi()
    assert len(LABELS) == len(set(LABELS)) > 0


@pytest.mark.parametrize("label", LABELS)
async def test_every_endpoint_matches_the_spec(fuzzed: RunningServer, label: str) -> None:
    failures = await asyncio.to_thread(_fuzz, load_openapi(), label, fuzzed.http)
    assert not failures, "\n\n".join(failures)

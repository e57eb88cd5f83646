"""The tournaments' OpenAPI fragment (server/openapi_tournaments.json): a valid OpenAPI 3.1
document once wrapped (its own schemas, security scheme and tag), naming every tournament
route, and a property test of every one of its operations (schemathesis) against a real
server and real Redis, with a runner key: no 5xx, every response as the fragment says. One
test per operation (so the workers share them out), all against one server for the module
(``module_server``) with a runner key and a tournament of two players. Bounded:
``MAX_EXAMPLES`` requests per operation."""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from typing import Any

import hypothesis
import pytest
import pytest_asyncio
import schemathesis
from hypothesis import HealthCheck
from openapi_spec_validator import validate
from server_helpers import RunningServer, register
from tournament_helpers import new_runner_key, new_tournament

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
"""The async tests run in the module's event loop, its server's."""
MODULE_SERVER = {"http_max_body": 4096}
MAX_EXAMPLES = 15
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
]


def document() -> dict[str, Any]:
    fragment = json.loads(
        resources.files("server").joinpath("openapi_tournaments.json").read_text("utf-8")
    )
    return {
        "openapi": "3.1.0", "info": {"title": "tournaments", "version": "1"},
        "tags": fragment["tags"], "paths": fragment["paths"],
        "components": fragment["components"],
    }


def test_fragment_is_valid() -> None:
    validate(document())


def _operations(doc: dict[str, Any]) -> list[Any]:
    schema = schemathesis.openapi.from_dict(doc)
    return [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]


LABELS = [operation.label for operation in _operations(document())]


def _fuzz(doc: dict[str, Any], label: str, base_url: str, key: str) -> list[str]:
    failures: list[str] = []
    [operation] = [op for op in _operations(doc) if op.label == label]

    @hypothesis.settings(
        max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
        suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate],
    )
    @hypothesis.given(case=operation.as_strategy())
    def check(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=10,
                               headers={"Authorization": f"Bearer {key}"})

    try:
        check()
    except (Exception, BaseExceptionGroup) as exc:
        failures.append(f"{operation.label}: {exc}")
    return failures


@IN_MODULE_LOOP
async def test_every_tournament_route_is_in_the_fragment(module_server: RunningServer) -> None:
    routes = {
        (route.method.lower(), route.resource.canonical)
        for route in module_server.app.router.routes()
        if route.resource is not None and route.resource.canonical.startswith("/api/tournaments")
        and route.method != "HEAD"
    }
    documented = {(m, path) for path, item in document()["paths"].items() for m in item}
    assert routes == documented
    assert len(LABELS) == len(documented)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runner_key(module_server: RunningServer) -> str:
    """A runner key of the module's server, whose tournament has two players."""
    for name in ("alice", "bob"):
        await register(module_server, name)
    settings = module_server.settings
    key = await new_runner_key(settings.redis_url or "", settings.key_prefix, "fuzz")
    await new_tournament(module_server, key, ["alice", "bob"])
    return key


@IN_MODULE_LOOP
@pytest.mark.parametrize("label", LABELS)
async def test_every_tournament_endpoint_matches_the_fragment(
    module_server: RunningServer, runner_key: str, label: str
) -> None:
    failures = await asyncio.to_thread(_fuzz, document(), label, module_server.http, runner_key)
    assert not failures, "\n\n".join(failures)

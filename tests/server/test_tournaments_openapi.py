"""The tournaments' OpenAPI fragment (server/openapi_tournaments.json): a valid OpenAPI 3.1
document once wrapped (its own schemas, security scheme and tag), naming every tournament
route, and a property test of every one of its operations (schemathesis) against a real
server and real Redis, with a runner key: no 5xx, every response as the fragment says. One
test per operation (so the workers share them out). Bounded: ``MAX_EXAMPLES`` requests per
operation."""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from openapi_spec_validator import validate
from server_helpers import StartServer, register
from tournament_helpers import new_runner_key, new_tournament

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


async def test_every_tournament_route_is_in_the_fragment(start_server: StartServer) -> None:
    server = await start_server()
    routes = {
        (route.method.lower(), route.resource.canonical)
        for route in server.app.router.routes()
        if route.resource is not None and route.resource.canonical.startswith("/api/tournaments")
        and route.method != "HEAD"
    }
    documented = {(m, path) for path, item in document()["paths"].items() for m in item}
    assert routes == documented
    assert len(LABELS) == len(documented)


@pytest.mark.parametrize("label", LABELS)
async def test_every_tournament_endpoint_matches_the_fragment(
    start_server: StartServer, redis_url: str, key_prefix: str, label: str
) -> None:
    server = await start_server(http_max_body=4096)
    for name in ("alice", "bob"):
        await register(server, name)
    key = await new_runner_key(redis_url, key_prefix, "fuzz")
    await new_tournament(server, key, ["alice", "bob"])
    failures = await asyncio.to_thread(_fuzz, document(), label, server.http, key)
    assert not failures, "\n\n".join(failures)

"""The HTTP shell every route goes through: JSON errors, body checks and the rate limit.

One aiohttp middleware (:func:`http_middleware`), in this order for each request:

1. **Rate limit** (not for ``/healthz``): one token from the client address's bucket (the
   address from ``X-Forwarded-For`` when the peer is a trusted proxy, see
   :mod:`server.net.addresses`; an IPv6 address counts as its /64, as in the same-address rule,
   so one host cannot dodge the limit by rotating addresses) and, when an ``Authorization``
   header is sent, one from that credential's bucket (keyed by the SHA-256 of the header
   value, so neither tokens nor runner keys are kept in memory). An empty bucket answers 429
   ``rate_limited`` with ``Retry-After`` (whole seconds). The buckets are
   :class:`server.ratelimit.RateLimiter` (pure); ``http_rate_limit`` / ``http_rate_burst``
   set them (0 turns the limit off).
2. **Body checks** for POST, PUT and PATCH on a route that exists (an unknown path or method
   is answered 404/405 first): a declared ``Content-Length`` over ``http_max_body`` answers
   413 ``too_big`` at once (a chunked body over the limit gets the same when the handler
   reads it); a body whose ``Content-Type`` is not ``application/json`` (or
   ``application/*+json``) answers 415 ``unsupported_media_type``. A request without a body
   (for example ``POST /api/guest``) needs no content type.
3. **Errors as JSON**: aiohttp's own refusals become ``{"error": {"code", "message"}}``: 404
   ``not_found``, 405 ``method_not_allowed`` (with ``Allow``), 413 ``too_big``, any other
   4xx ``bad_request``; Redis not answering gives 503 ``unavailable``, and any other failure
   500 ``internal_error`` (logged; nothing about it is sent).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from redis.exceptions import RedisError

from server.config import Settings
from server.logs import request_id
from server.metrics import Metrics
from server.net.addresses import client_address
from server.net.http_api import error_response
from server.protocol.errors import ErrorCode, ProtocolError, http_error_body, wait_seconds
from server.protocol.ids import network_key
from server.ratelimit import RateLimiter
from server.tables.ratings import SAME_NETWORK_IPV6_PREFIX

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

UNLIMITED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
"""Paths the rate limit leaves alone (load balancers and Prometheus poll them)."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

_CODES = {
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.TOO_BIG,
    415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    429: ErrorCode.RATE_LIMITED,
}


def is_json_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` header names JSON (``application/json``, ``*/*+json``)."""
    if not content_type:
        return False
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (mime.startswith("application/") and
                                          mime.endswith("+json"))


def credential_key(authorization: str) -> str:
    """The rate-limit key of an ``Authorization`` value: its digest, never the value."""
    return "c:" + hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()[:32]


def _new_request_id() -> str:
    return os.urandom(6).hex()


def retry_after(seconds: float) -> str:
    """``Retry-After`` in whole seconds, at least 1."""
    return str(wait_seconds(seconds))


def _error(code: ErrorCode, message: str, **headers: str) -> web.Response:
    response = error_response(ProtocolError(code, message))
    response.headers.update(headers)
    return response


def _from_http_exception(exc: web.HTTPException) -> web.Response:
    status = exc.status
    code = _CODES.get(status, ErrorCode.BAD_REQUEST)
    if status == 404:
        message = "no such path"
    elif status == 405:
        message = f"method not allowed here; allowed: {exc.headers.get('Allow', '')}"
    elif status == 413:
        message = "the request body is too big"
    else:
        message = exc.reason or "bad request"
    response = web.json_response(http_error_body(ProtocolError(code, message)), status=status)
    allow = exc.headers.get("Allow")
    if allow is not None:
        response.headers["Allow"] = allow
    return response


def http_middleware(settings: Settings, *, clock: Callable[[], float] = time.monotonic,
                    metrics: Metrics | None = None) -> Middleware:
    """The middleware for ``create_app`` (see the module docstring)."""
    counters = metrics if metrics is not None else Metrics(enabled=False)
    limiter = RateLimiter(settings.http_rate_limit, settings.http_rate_burst,
                          max_keys=settings.http_rate_max_clients)
    trusted = settings.trusted_networks
    max_body = settings.http_max_body

    def throttled(request: web.Request) -> float:
        if not limiter.is_enabled or request.path in UNLIMITED_PATHS:
            return 0.0
        now = clock()
        address = client_address(request.remote, request.headers.get("X-Forwarded-For"),
                                 trusted)
        wait = limiter.take("a:" + network_key(address, ipv6_prefix=SAME_NETWORK_IPV6_PREFIX),
                            now)
        authorization = request.headers.get("Authorization")
        if wait == 0.0 and authorization:
            wait = limiter.take(credential_key(authorization), now)
        return wait

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        request_id.set(request.headers.get("X-Request-Id", "")[:64] or _new_request_id())
        wait = throttled(request)
        if wait > 0:
            counters.refused("http_per_address")
            counters.error(ErrorCode.RATE_LIMITED)
            return _error(ErrorCode.RATE_LIMITED, "too many requests; retry later",
                          **{"Retry-After": retry_after(wait)})
        # A path or method that does not exist is told so (404/405) before its body is judged.
        if request.method in BODY_METHODS and request.match_info.http_exception is None:
            length = request.content_length
            if length is not None and length > max_body:
                return _error(ErrorCode.TOO_BIG, f"the request body is over {max_body} bytes")
            if request.body_exists and not is_json_type(request.headers.get("Content-Type")):
                return _error(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                              "the request body must be application/json")
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _from_http_exception(exc)
        except (RedisError, OSError) as exc:
            log.warning("%s %s: Redis did not answer: %s", request.method, request.path, exc)
            return _error(ErrorCode.UNAVAILABLE, "Redis unavailable; retry")
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            return _error(ErrorCode.INTERNAL, "internal error")

    return middleware

"""Headers every HTTP answer carries (the page, static files, the API, errors, the WebSocket
upgrade), set in one ``on_response_prepare`` hook so no route can forget them:

- ``Content-Security-Policy``: everything from this origin only, no inline script or style,
  no plugins, and ``frame-ancestors 'none'``: no other site may frame the page (a rated
  game's Drop/Accept cannot be clickjacked); ``img-src`` also allows ``data:`` (the page's
  empty favicon);
- ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``;
- ``Server: Table42``: no Python or aiohttp version for a scanner to match.

Answers that carry a bearer token (``/api/register``, ``/api/login``, ``/api/guest``,
``/api/bot``, ``/api/password``) also get ``Cache-Control: no-store`` from their routes'
paths here, so no cache keeps a token.
"""

from __future__ import annotations

from aiohttp import web

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Server": "Table42",
}
TOKEN_PATHS = frozenset({"/api/register", "/api/login", "/api/guest", "/api/bot",
                         "/api/password"})
"""Routes whose answer carries a bearer token."""


async def _secure(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)
    if request.path in TOKEN_PATHS:
        response.headers["Cache-Control"] = "no-store"


def add_security_headers(app: web.Application) -> None:
    """Install the hook on ``app`` (see the module docstring)."""
    app.on_response_prepare.append(_secure)

"""The browser client: ``GET /`` serves ``server/static/index.html``, ``/static/...`` the rest.

Plain files (HTML, ES modules, CSS) with nothing to build; the client speaks only PROTOCOL.md
(see docs/browser-client.md). Every reply says ``Cache-Control: no-cache`` so a browser checks
for a newer client after each server upgrade (a 304 costs one round trip).
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

STATIC_DIR = Path(__file__).parent.parent / "static"
NO_CACHE = {"Cache-Control": "no-cache"}


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html", headers=NO_CACHE)


async def _no_cache(request: web.Request, response: web.StreamResponse) -> None:
    if request.path == "/" or request.path.startswith("/static/"):
        response.headers.setdefault("Cache-Control", "no-cache")


def add_static_routes(app: web.Application) -> None:
    """``/`` and ``/static/`` (no directory listing, no symlinks out of the folder)."""
    app.router.add_get("/", index)
    app.router.add_static("/static/", STATIC_DIR, show_index=False, follow_symlinks=False)
    app.on_response_prepare.append(_no_cache)

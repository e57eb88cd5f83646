"""Logging setup: plain lines, or one JSON object per line (``--json-logs 1``) carrying the
request id (HTTP) or game id (a game's end) of what was being handled.

The ids live in context variables: the HTTP middleware sets :data:`request_id` for each
request, a table sets :data:`game_id` while it finishes a game; every log record made in that
context carries them (asyncio copies the context into the tasks it starts).
"""

from __future__ import annotations

import contextvars
import json
import logging
import time

__all__ = ["JsonFormatter", "game_id", "request_id", "setup_logging"]

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
game_id: contextvars.ContextVar[str] = contextvars.ContextVar("game_id", default="")

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", "request_id"?, "game_id"?, "exc"?}``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": round(record.created, 6),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            out["request_id"] = rid
        gid = game_id.get()
        if gid:
            out["game_id"] = gid
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def setup_logging(level: str, *, json_lines: bool) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())

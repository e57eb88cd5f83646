"""A finished game's review as ``GET /api/games/{game_id}/review`` answers it, made in a
worker process from the record's stored head (pure: zlib, JSON and the review).

The worker is given the record's head as stored (``server/store/record_bytes.py``: the
answer's JSON without its closing brace, zlib-compressed) and gives back the answer's
bytes, gzip-compressed, ready to be kept beside the record and served as they are: the
node's event loop neither folds the events, nor encodes, nor compresses.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from server.bot.review import review_events

_GZIP_WBITS = 31


def review_body(record: dict[str, Any]) -> dict[str, Any]:
    """The answer for ``record`` (the stored answer's fields, events in the full form)."""
    result = review_events(record.get("events") or ())
    return {"game_id": record["game_id"], "player_ids": list(record.get("players") or ()),
            "names": list(record.get("names") or ()), **result}


def review_answer(packed_head: bytes) -> bytes:
    """The review answer, gzip JSON, from a record's stored head (raises ValueError when
    its events do not replay)."""
    record = json.loads(zlib.decompress(packed_head) + b"}")
    body = json.dumps(review_body(record), separators=(",", ":")).encode()
    return zlib.compress(body, 6, _GZIP_WBITS)

"""A finished game's review as ``GET /api/games/{game_id}/review`` answers it, made in a
worker process from the record's stored head (pure: zlib, JSON and the review).

The worker is given the record's answer as stored (``server/store/record_bytes.py``: gzip
JSON) and the length of its head (the answer up to its chat, without the closing brace) and
gives back the review's answer, gzip-compressed, ready to be kept beside the record and
served as it is: the node's event loop neither decodes, nor folds, encodes or compresses.
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


def review_answer(body: bytes, head_len: int) -> bytes:
    """The review answer, gzip JSON, from a record's stored answer (gzip JSON) and the
    length of its head (raises ValueError when its events do not replay)."""
    record = json.loads(zlib.decompress(body, _GZIP_WBITS)[:head_len] + b"}")
    body = json.dumps(review_body(record), separators=(",", ":")).encode()
    return zlib.compress(body, 6, _GZIP_WBITS)

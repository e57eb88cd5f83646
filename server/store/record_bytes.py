"""A finished game's record in its served form: encoded once, served as bytes.

``GET /api/games/{game_id}`` answers a JSON object whose events are in the full form (each
with the table's ``state`` after it) and whose ``chat`` is the game's chat list. Folding the
events into the full form and encoding the JSON cost milliseconds per game (the state of
every event), so it is done once, when the game's end is stored, never per request:

- the **head**: the answer without its chat, as JSON with its closing brace left off
  (``{"game_id":...,"events":[...]``); its length is kept (``head_len``), not the head
  itself: it is the start of the body;
- the **body**: the whole answer, head + ``,"chat":[`` + the chat list's entries as stored
  (each is JSON already) + ``]}``, kept gzip-compressed: a client that accepts gzip gets
  these bytes as they are (``Content-Encoding: gzip``), any other gets them decompressed;
  a review's worker reads the head out of it (:func:`head_of`);
- the chat it holds is named by a **stamp**: the chat list's length and the CRC-32 of its
  last entry. A read whose stamp differs (a message came after the body was made) makes
  the body again from its head and the list: decompression, byte concatenation and
  compression, run in a thread (zlib lets go of the GIL), nothing per event.

The rest of a record is stored compact too (a record is kept 90 days): its ``.mat`` texts
gzip when that is shorter (:func:`pack_text`; served as they are to a client that accepts
gzip), its meta and each player's history row as msgpack arrays, values in a fixed order
(:func:`pack_row`: about 40% of the JSON object with its names). The JSON forms stored by
earlier versions are still read.

The functions here are the encoding alone (no I/O); ``server/store/games.py`` keeps them.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from server.tables.records import ROW_FIELDS, replay_events

HIDDEN = ("mat_game", "mat_match", "audience")
"""Record fields kept for the download or the store's access check, not sent with the
record."""
GZIP_LEVEL = 6
"""The body's compression (gzip, zlib's default level: done once per game, in a thread)."""
REBUILD_LEVEL = 1
"""The compression of a body made again for late chat (each new message makes it again:
zlib's fastest level, a fifth of the CPU for about a tenth more bytes)."""
_GZIP_WBITS = 31  # zlib's gzip container (RFC 1952)

_json = msgspec.json.Encoder()
_msgpack = msgspec.msgpack.Decoder()
_packer = msgspec.msgpack.Encoder()
ROW = (*ROW_FIELDS, "change")
"""A history row's fields, in the order its stored array holds them."""
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class ChatStamp:
    """Which chat a body holds: the list's length and the CRC-32 of its last entry."""

    count: int
    last: int

    @classmethod
    def of(cls, count: int, last: bytes | None) -> ChatStamp:
        return cls(int(count), zlib.crc32(last) if last else 0)


def record_body(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record as ``GET /api/games/{game_id}`` answers it, without ``chat`` (events in
    the full form; they may be given lean as maps or as the log's msgpack bytes)."""
    body = {k: v for k, v in record.items() if k not in HIDDEN and k not in ("events", "chat")}
    events = [_msgpack.decode(e) if isinstance(e, bytes) else e
              for e in record.get("events") or ()]
    body["events"] = replay_events(events)
    return body


def encode_head(record: Mapping[str, Any]) -> bytes:
    """The head of ``record``'s answer (uncompressed): its JSON without the closing brace."""
    encoded = _json.encode(record_body(record))
    assert encoded.endswith(b"}")
    return encoded[:-1]


def assemble(head: bytes, chat: Sequence[bytes]) -> bytes:
    """The whole answer (uncompressed JSON): ``head`` and the chat entries (JSON each)."""
    return b"".join((head, b',"chat":[', b",".join(chat), b"]}"))


def gzip_bytes(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    return zlib.compress(data, level, _GZIP_WBITS)


def gunzip_bytes(data: bytes) -> bytes:
    return zlib.decompress(data, _GZIP_WBITS)


def head_of(body: bytes, head_len: int) -> bytes:
    """The head (uncompressed) out of a stored (gzip) body."""
    return gunzip_bytes(body)[:head_len]


def rebody(body: bytes, head_len: int, chat: Sequence[bytes]) -> bytes:
    """A stored body made again with ``chat`` (run it in a thread)."""
    return gzip_bytes(assemble(head_of(body, head_len), chat), REBUILD_LEVEL)


def is_gzip(data: bytes) -> bool:
    """Whether ``data`` is gzip (a ``.mat`` text never starts with these bytes)."""
    return data[:2] == _GZIP_MAGIC


def pack_text(text: str) -> bytes:
    """A ``.mat`` text as stored: gzip when that is shorter, else its UTF-8 bytes."""
    raw = text.encode()
    packed = gzip_bytes(raw)
    return packed if len(packed) < len(raw) else raw


def text_of(stored: bytes) -> str:
    """A text stored by :func:`pack_text` (or as plain UTF-8 by earlier versions)."""
    return (gunzip_bytes(stored) if is_gzip(stored) else stored).decode()


def pack_row(row: Mapping[str, Any]) -> bytes:
    """A player's history row as stored: msgpack of its values in :data:`ROW` order."""
    return _packer.encode([row[key] for key in ROW])


def unpack_row(stored: bytes) -> dict[str, Any]:
    """A stored history row (or the JSON object stored by earlier versions) as a dict."""
    if stored[:1] == b"{":
        return dict(msgspec.json.decode(stored))
    return dict(zip(ROW, _msgpack.decode(stored), strict=True))


def pack_values(values: Sequence[Any]) -> bytes:
    return _packer.encode(values)


def unpack_values(stored: bytes) -> list[Any]:
    return list(_msgpack.decode(stored))


def head_record(head: bytes) -> dict[str, Any]:
    """The answer's fields (events in the full form) from an uncompressed head."""
    return dict(msgspec.json.decode(head + b"}"))


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header accepts gzip (``gzip``, ``x-gzip`` or ``*``, with
    a quality above 0)."""
    if not accept_encoding:
        return False
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() not in ("gzip", "x-gzip", "*"):
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            return True
    return False

"""Wire codec: the same message dicts as JSON in text frames or msgpack in binary frames.

Pure: bytes in, Python objects out, and back. A client picks its format per frame (text frame
= JSON, binary frame = msgpack) and the server answers in the format of the client's latest
frame. Decoding refuses anything that is not a plain document: NaN/Infinity in JSON, msgpack
extension types, non-string map keys, and nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import msgpack
import msgspec

from server.protocol.errors import FrameError

MAX_DEPTH = 32
"""Deepest nesting a client document may have; no message needs more than 3."""


class WireFormat(StrEnum):
    JSON = "json"  # text frames
    MSGPACK = "msgpack"  # binary frames


_MSGPACK = WireFormat.MSGPACK


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


_json_decoder = json.JSONDecoder(parse_constant=_reject_constant)
# msgspec's encoders write the same msgpack bytes as msgpack.Packer(use_bin_type=True) and
# compact UTF-8 JSON (docs/wire.md), at a fraction of the cost.
_json_out = msgspec.json.Encoder()
_msgpack_out = msgspec.msgpack.Encoder()


def _ext_hook(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} is not allowed")


def _depth_ok(obj: Any, limit: int) -> bool:
    """True when ``obj`` nests no deeper than ``limit`` containers (iterative, no recursion)."""
    if type(obj) is dict and limit >= 1:
        # The usual message: one flat map. Checked without building a stack.
        for value in obj.values():
            if type(value) is dict or type(value) is list:
                break
        else:
            return True
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > limit:
                return False
            stack.extend((v, depth + 1) for v in item)
    return True


_RECURSION_OK = 200
"""Up to this ``max_depth`` the checks walk the document recursively (one pass, no stack
list; Python's own recursion limit is far above it); beyond, iteratively."""


def _scan(item: Any, depth: int, limit: int, stamps: list[Any]) -> bool:
    """False when the container ``item`` (at ``depth``) nests deeper than ``limit``; collects
    the msgpack timestamps it holds in ``stamps``. One recursive pass over the containers:
    an event's ``legal_plays`` (lists of lists of ints) costs a loop per list."""
    if depth > limit:
        return False
    for value in item.values() if type(item) is dict else item:
        kind = type(value)
        if kind is dict or kind is list:
            if not _scan(value, depth + 1, limit, stamps):
                return False
        elif kind is msgpack.Timestamp:
            stamps.append(value)
    return True


def _check(obj: Any, fmt: WireFormat, max_depth: int) -> None:
    """Raise :class:`FrameError` for a document nested deeper than ``max_depth``, or (msgpack)
    holding a timestamp; the depth is judged first."""
    if max_depth > _RECURSION_OK:
        if not _depth_ok(obj, max_depth):
            raise FrameError(f"{fmt} document nests deeper than {max_depth}")
        if fmt is WireFormat.MSGPACK and _has_timestamp(obj):
            raise FrameError("msgpack extension type -1 (timestamp) is not allowed")
        return
    stamps: list[Any] = []
    kind = type(obj)
    if kind is dict or kind is list:
        if not _scan(obj, 1, max_depth, stamps):
            raise FrameError(f"{fmt} document nests deeper than {max_depth}")
    elif kind is msgpack.Timestamp:
        stamps.append(obj)
    if stamps and fmt is WireFormat.MSGPACK:
        # msgpack decodes extension type -1 (timestamps) itself, before ext_hook is asked.
        raise FrameError("msgpack extension type -1 (timestamp) is not allowed")


def decode(data: bytes | str, fmt: WireFormat, *, max_depth: int = MAX_DEPTH) -> Any:
    """Decode one frame's payload. Raises :class:`FrameError` (code ``bad_frame``) on any fault.

    Needs: the payload of a single frame (size already limited by the socket).
    Promises: a JSON-compatible value (dicts have string keys; bytes only from msgpack bin).
    """
    try:
        if fmt is WireFormat.JSON:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            obj = _json_decoder.decode(text)
        else:
            raw = data.encode("utf-8") if isinstance(data, str) else data
            obj = msgpack.unpackb(
                raw, raw=False, strict_map_key=True, ext_hook=_ext_hook, use_list=True,
                timestamp=0,
            )
    except RecursionError:
        raise FrameError(f"{fmt} document nests too deeply") from None
    except Exception as exc:  # every decoder fault is the client's, whatever its class
        raise FrameError(f"not a valid {fmt} document: {_short(exc)}") from None
    _check(obj, fmt, max_depth)
    return obj


def _has_timestamp(obj: Any) -> bool:
    """Whether a decoded msgpack document holds a timestamp (iterative, depth checked)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is msgpack.Timestamp:
            return True
    return False


def encode(obj: Any, fmt: WireFormat) -> bytes:
    """Encode a server message (plain dicts, lists, str, int, float, bool, None) as frame bytes.

    JSON is UTF-8 (sent in a text frame), msgpack uses the bin/str distinction.
    """
    try:
        if fmt is WireFormat.JSON:
            return _json_out.encode(obj)
        return _msgpack_out.encode(obj)
    except (UnicodeEncodeError, msgspec.EncodeError):
        # A lone surrogate (from a client's JSON "\ud800" escape) echoed back in a message:
        # not encodable as UTF-8, so it is replaced rather than crash the reply.
        return encode(_replace_surrogates(obj), fmt)


def _replace_surrogates(obj: Any) -> Any:
    if isinstance(obj, str):
        return obj.encode("utf-8", "replace").decode("utf-8")
    if isinstance(obj, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_replace_surrogates(v) for v in obj]
    return obj


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def wire_frame(payload: bytes, fmt: WireFormat) -> bytes:
    """The whole unmasked, uncompressed WebSocket frame a server sends for ``payload``
    (RFC 6455 §5.2): FIN + text (JSON) or binary (msgpack) opcode, the length, the payload."""
    first = 0x82 if fmt is WireFormat.MSGPACK else 0x81
    size = len(payload)
    if size < 126:
        header = bytes((first, size))
    elif size < 65536:
        header = bytes((first, 126)) + size.to_bytes(2, "big")
    else:
        header = bytes((first, 127)) + size.to_bytes(8, "big")
    return header + payload


class Outgoing:
    """One server message, encoded lazily and at most once per wire format and event form.

    A broadcast builds one ``Outgoing`` and every recipient asks for the bytes in its own
    format, so an event to 2 players and 50 watchers is encoded at most twice per form, and
    framed (:meth:`wire`) at most twice per form. ``obj`` is the message (for a table event:
    the full form, protocol 1); ``lean`` is the same event in the change-only form (protocol
    2), or None when the message has one form only.
    """

    __slots__ = ("_frames", "_wires", "lean", "obj")

    def __init__(self, obj: dict[str, Any], lean: dict[str, Any] | None = None) -> None:
        self.obj = obj
        self.lean = lean
        self._frames: list[bytes | None] = [None, None, None, None]
        self._wires: list[bytes | None] = [None, None, None, None]

    def _slot(self, fmt: WireFormat, lean: bool) -> int:
        slot = 1 if fmt is WireFormat.MSGPACK else 0
        return slot + 2 if lean and self.lean is not None else slot

    def frame(self, fmt: WireFormat, lean: bool = False) -> bytes:
        """The encoded message (a frame's payload) in ``fmt``; the lean form if asked for and
        there is one."""
        slot = self._slot(fmt, lean)
        data = self._frames[slot]
        if data is None:
            obj = self.lean if slot >= 2 else self.obj
            assert obj is not None
            data = self._frames[slot] = encode(obj, fmt)
        return data

    def wire(self, fmt: WireFormat, lean: bool = False) -> bytes:
        """The whole WebSocket frame (header and payload) to write to a socket in ``fmt``."""
        # _slot, inline: this runs for every frame written to every socket.
        slot = ((1 if fmt is _MSGPACK else 0)
                + (2 if lean and self.lean is not None else 0))
        data = self._wires[slot]
        if data is None:
            data = self._wires[slot] = wire_frame(self.frame(fmt, lean), fmt)
        return data


_packed_in = msgspec.msgpack.Decoder(dict[str, Any])


class Packed(Outgoing):
    """A message that came from another node already encoded (its msgpack payloads, the full
    form and, for a table event, the change-only one): msgpack sockets get those bytes as
    they are; the dict is decoded only when something asks for it (a JSON socket, a check
    of a field)."""

    __slots__ = ("_lean", "_lean_packed", "_obj", "_packed")

    def __init__(self, packed: bytes, lean: bytes | None = None) -> None:
        self._packed = packed
        self._lean_packed = lean
        self._obj: dict[str, Any] | None = None
        self._lean: dict[str, Any] | None = None
        self._frames = [None, packed, None, lean]
        self._wires = [None, None, None, None]

    @property
    def obj(self) -> dict[str, Any]:
        if self._obj is None:
            self._obj = _packed_in.decode(self._packed)
        return self._obj

    @obj.setter
    def obj(self, value: dict[str, Any]) -> None:
        self._obj = value

    @property
    def lean(self) -> dict[str, Any] | None:
        if self._lean is None and self._lean_packed is not None:
            self._lean = _packed_in.decode(self._lean_packed)
        return self._lean

    @lean.setter
    def lean(self, value: dict[str, Any] | None) -> None:
        self._lean = value

    def _slot(self, fmt: WireFormat, lean: bool) -> int:
        slot = 1 if fmt is _MSGPACK else 0
        return slot + 2 if lean and self._lean_packed is not None else slot

    def wire(self, fmt: WireFormat, lean: bool = False) -> bytes:
        slot = self._slot(fmt, lean)
        data = self._wires[slot]
        if data is None:
            data = self._wires[slot] = wire_frame(self.frame(fmt, lean), fmt)
        return data

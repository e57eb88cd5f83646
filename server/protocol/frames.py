"""Where a client's stream of WebSocket frames is: the frame boundaries, without parsing payloads.

A socket can be handed from one worker of a machine to another (``server/net/socket_moves.py``)
only between two messages: every byte before the cut has been read as whole messages by the
worker that gives it away, every byte after it goes with the socket. :class:`FrameCursor`
follows the frames a client sends (RFC 6455 §5.2: the header, its extended length and its
mask key) as they arrive, so the reader knows where the next boundary is, and when asked to
``hold`` it stops passing bytes on at the first boundary that is not inside a fragmented
message, keeping the rest.

Only lengths are read here: the WebSocket parser that reads the messages (aiohttp's) checks
everything else and closes a socket that breaks the rules. No I/O.
"""

from __future__ import annotations

__all__ = ["FrameCursor", "HeaderError"]

_CONTROL = 0x8
"""Opcodes from 8 up are control frames (close, ping, pong): one message each."""


class HeaderError(ValueError):
    """A frame header whose length cannot be read (a 64-bit length with its top bit set)."""


class FrameCursor:
    """Follows a client-to-server WebSocket stream frame by frame.

    ``messages`` counts the messages completed so far (a data message when its final frame
    ends, a control frame when it ends): the number a reader fed the same bytes returns.
    ``at_rest``: at a frame boundary and not inside a fragmented message. With ``holding``
    set, :meth:`feed` passes bytes on only up to the next resting point and keeps the rest
    in ``held``."""

    __slots__ = ("_fin", "_fragmented", "_header", "_left", "_opcode", "held", "holding",
                 "messages")

    def __init__(self) -> None:
        self._header = b""  # the start of a header not yet complete
        self._left = 0  # payload bytes of the current frame still to come
        self._fin = True
        self._opcode = 0
        self._fragmented = False  # a data message's final frame has not come yet
        self.messages = 0
        self.holding = False
        self.held = bytearray()

    @property
    def at_rest(self) -> bool:
        return not self._header and not self._left and not self._fragmented

    def feed(self, data: bytes) -> int:
        """Take in ``data`` (the next bytes of the stream); how many of them (a prefix) to
        pass on to the reader. Without ``holding`` that is all of them."""
        if self.holding and self.at_rest:
            self.held += data
            return 0
        end = len(data)
        pos = 0
        while pos < end:
            left = self._left
            if left:
                if left > end - pos:
                    self._left = left - (end - pos)
                    return end
                pos += left
                self._left = 0
            elif self._header:  # a header that began in an earlier piece
                before = len(self._header)
                joined = self._header + data[pos:pos + 14]  # (a header is 14 bytes at most)
                after = self._head(joined, 0)
                if after is None:
                    self._header = joined
                    return end
                self._header = b""
                pos += after - before
                if self._left:
                    continue
            else:
                after = self._head(data, pos)
                if after is None:
                    self._header = bytes(data[pos:])
                    return end
                pos = after
                if self._left:
                    continue
            self._ended()
            if self.holding and self.at_rest:
                self.held += data[pos:]
                return pos
        return end

    def _head(self, data: bytes, pos: int) -> int | None:
        """Read the header at ``pos``; the position after it, or None when it is not all
        here yet."""
        if len(data) - pos < 2:
            return None
        first = data[pos]
        second = data[pos + 1]
        size = second & 0x7F
        start = pos + 2
        if size == 126:
            start += 2
        elif size == 127:
            start += 8
        if second & 0x80:
            start += 4
        if start > len(data):
            return None
        if size == 126:
            size = int.from_bytes(data[pos + 2:pos + 4], "big")
        elif size == 127:
            size = int.from_bytes(data[pos + 2:pos + 10], "big")
            if size >> 63:
                raise HeaderError("a frame length with its most significant bit set")
        self._fin = bool(first & 0x80)
        self._opcode = first & 0x0F
        self._left = size
        return start

    def _ended(self) -> None:
        """The current frame ended."""
        if self._opcode >= _CONTROL:
            self.messages += 1
        elif self._fin:
            self.messages += 1
            self._fragmented = False
        else:
            self._fragmented = True

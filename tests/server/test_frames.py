"""``server.protocol.frames.FrameCursor``: where a client's WebSocket stream is, frame by frame,
however the bytes are cut into pieces; and where it stops when told to hold."""

from __future__ import annotations

import random

import pytest

from server.protocol.frames import FrameCursor, HeaderError

TEXT, CONTINUATION, CLOSE, PING, PONG = 0x1, 0x0, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    first = (0x80 if fin else 0) | opcode
    bit = 0x80 if mask else 0
    size = len(payload)
    if size < 126:
        head = bytes((first, bit | size))
    elif size < 1 << 16:
        head = bytes((first, bit | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((first, bit | 127)) + size.to_bytes(8, "big")
    return head + (b"\x01\x02\x03\x04" if mask else b"") + payload


@pytest.mark.parametrize(("frames", "messages"), [
    ([frame(TEXT, b"")], 1),
    ([frame(TEXT, b"x" * 125)], 1),
    ([frame(TEXT, b"x" * 126)], 1),
    ([frame(TEXT, b"x" * 65_535)], 1),
    ([frame(TEXT, b"x" * 65_536)], 1),
    ([frame(TEXT, b"ab", fin=False), frame(CONTINUATION, b"cd")], 1),
    ([frame(TEXT, b"ab", fin=False), frame(PING, b"p"), frame(CONTINUATION, b"cd")], 2),
    ([frame(PING, b""), frame(PONG, b"q"), frame(CLOSE, b"\x03\xe8")], 3),
    ([frame(TEXT, b"x", mask=False), frame(TEXT, b"y")], 2),
])
def test_messages_are_counted_as_a_reader_returns_them(frames: list[bytes],
                                                       messages: int) -> None:
    stream = b"".join(frames)
    for piece in (1, 2, 3, 7, 64, len(stream)):
        cursor = FrameCursor()
        for start in range(0, len(stream), piece):
            chunk = stream[start:start + piece]
            assert cursor.feed(chunk) == len(chunk)
        assert (cursor.messages, cursor.at_rest) == (messages, True)


def test_a_fragmented_message_is_not_a_resting_point() -> None:
    cursor = FrameCursor()
    cursor.feed(frame(TEXT, b"ab", fin=False))
    assert not cursor.at_rest and cursor.messages == 0
    cursor.feed(frame(PING, b""))
    assert not cursor.at_rest and cursor.messages == 1
    cursor.feed(frame(CONTINUATION, b"cd"))
    assert cursor.at_rest and cursor.messages == 2


def test_a_length_with_its_top_bit_set_is_refused() -> None:
    with pytest.raises(HeaderError):
        FrameCursor().feed(bytes((0x81, 0xFF)) + (1 << 63).to_bytes(8, "big") + b"mask")


def random_stream(rng: random.Random) -> tuple[bytes, dict[int, int]]:
    """Frames of every kind; the stream offsets that are resting points, each with the
    messages before it."""
    parts: list[bytes] = []
    rests = {0: 0}
    messages = 0
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.2:
            parts.append(frame(PING, rng.randbytes(rng.randint(0, 5))))
            messages += 1
        elif kind < 0.35:
            parts.append(frame(TEXT, rng.randbytes(rng.randint(0, 200)), fin=False))
            parts.append(frame(PING, b"x"))
            parts.append(frame(CONTINUATION, rng.randbytes(rng.randint(0, 3000))))
            messages += 2
        else:
            parts.append(frame(TEXT, rng.randbytes(rng.choice([0, 5, 125, 126, 300, 70_000]))))
            messages += 1
        rests[sum(map(len, parts))] = messages
    return b"".join(parts), rests


@pytest.mark.parametrize("seed", range(40))
def test_holding_stops_at_the_first_resting_point_and_keeps_the_rest(seed: int) -> None:
    rng = random.Random(seed)
    stream, rests = random_stream(rng)
    cut = rng.randint(0, len(stream))
    cursor = FrameCursor()
    passed = 0
    position = 0
    while position < len(stream):
        if position == cut:
            cursor.holding = True
        end = min(len(stream), position + rng.randint(1, 4000))
        if position < cut < end:
            end = cut
        passed += cursor.feed(stream[position:end])
        position = end
    if cut == len(stream):
        cursor.holding = True
    # Everything up to the first resting point at or after the cut is passed on, the rest
    # held; and the count of messages is that of the bytes passed on.
    stop = min(r for r in rests if r >= cut)
    assert passed == stop
    assert bytes(cursor.held) == stream[stop:]
    assert cursor.at_rest
    assert cursor.messages == rests[stop]

"""Reading the settled-games log: JSON Lines or CSV lines back into records, checked.

The records and their writers are the plugin's :mod:`rating_plugin.logformat` (the store
exports the log with them; the fields and both formats are described there, and the names
are re-exported here). This module reads what the store exported, what
:mod:`rating_plugin.analysis.synth` generated or what came from elsewhere, for calibration
and replay. Pure: reading works on lines of text, so any file, pipe or socket can carry them.

A bad line raises :class:`LogFormatError`, whose message starts with the source and line
number (``"games.jsonl:12: winner_before: must be a number, got 'abc'"``): bytes that are not
UTF-8 (:func:`decode_lines`), a line longer than :data:`MAX_LINE_LENGTH`, JSON that does not
parse or nests deeper than Python's parser goes, and any number whose magnitude exceeds
:data:`MAX_MAGNITUDE` (2^53: every such integer is exact as a float) are all named that way.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal, NoReturn, cast

from rating_plugin.errors import RatingError
from rating_plugin.logformat import (
    CSV_COLUMNS,
    OPTIONAL_FIELDS,
    GameRecord,
    Kind,
    LogRecord,
    PodiumEntry,
    PodiumRecord,
    csv_header,
    csv_row,
    json_line,
)

__all__ = [
    "CSV_COLUMNS",
    "MAX_LINE_LENGTH",
    "MAX_MAGNITUDE",
    "GameRecord",
    "LogFormatError",
    "LogRecord",
    "PodiumEntry",
    "PodiumRecord",
    "csv_header",
    "csv_row",
    "decode_lines",
    "format_of",
    "json_line",
    "parse_record",
    "read_csv",
    "read_jsonl",
    "read_lines",
    "scan_results",
]

#: A longer line is refused (a record is a few hundred characters; ids are at most 128).
MAX_LINE_LENGTH: Final = 16_384
#: A number of larger magnitude is refused: every integer up to it is exact as a float, and
#: no rating, time (Unix seconds) or count comes near it.
MAX_MAGNITUDE: Final = 2**53


class LogFormatError(RatingError):
    """A line of a game log could not be read. ``source`` and ``line`` say where."""

    code = "log_format"

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(f"{source}:{line}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


_INT_COLUMNS: Final = frozenset(
    {"seq", "cube", "match_length", *(name for name, kind in OPTIONAL_FIELDS if kind == "int")}
)
_TEXT_COLUMNS: Final = frozenset(
    {"kind", "game_id", "reason", "winner", "loser", "tournament_id", "places"}
)


# -- reading ------------------------------------------------------------------------------------


class _Bad(Exception):
    """A problem with one field; the reader adds the source and line number."""


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _describe_number(value: float) -> str:
    """A number for a message; an integer too long to print (Python refuses to write more
    than 4300 digits) by its length."""
    if type(value) is int and abs(value) > 10**30:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    return _describe(value)


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if type(value) is not str or not value:
        if value is None:
            raise _Bad(f"{name}: missing")
        raise _Bad(f"{name}: must be a non-empty string, got {_describe(value)}")
    if len(value) > 128 or not value.isprintable():
        raise _Bad(f"{name}: must be at most 128 printable characters, got {_describe(value)}")
    return value


def _opt_number(data: dict[str, Any], name: str) -> float | None:
    value = data.get(name)
    if type(value) is int or type(value) is float:
        if -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:  # false for nan, too
            return value
        raise _Bad(f"{name}: must be a finite number of magnitude at most 2^53, got "
                   f"{_describe_number(value)}")
    if value is None:
        return None
    raise _Bad(f"{name}: must be a number, got {_describe(value)}")


def _number(data: dict[str, Any], name: str) -> float:
    value = _opt_number(data, name)
    if value is None:
        raise _Bad(f"{name}: missing")
    return value


def _opt_whole(data: dict[str, Any], name: str, low: int) -> int | None:
    value = data.get(name)
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int:
        if value < low:
            raise _Bad(f"{name}: must be at least {low}, got {_describe_number(value)}")
        if value > MAX_MAGNITUDE:
            raise _Bad(f"{name}: must be at most 2^53, got {_describe_number(value)}")
        return value
    if value is None:
        return None
    raise _Bad(f"{name}: must be a whole number, got {_describe(value)}")


def _whole(data: dict[str, Any], name: str, low: int) -> int:
    value = _opt_whole(data, name, low)
    if value is None:
        raise _Bad(f"{name}: missing")
    return value


_CUBES: Final = frozenset({1, 2, 4, 8, 16, 32, 64})


def _game(data: dict[str, Any], kind: Kind) -> GameRecord:
    seq = _whole(data, "seq", 1)
    cube = _whole(data, "cube", 1)
    if cube not in _CUBES:
        raise _Bad(f"cube: must be one of 1, 2, 4, 8, 16, 32, 64, got {cube}")
    match_length: int | None
    if kind == "fibs":
        match_length = _whole(data, "match_length", 1)
    else:
        match_length = _opt_whole(data, "match_length", 1)
        if match_length not in (None, 1):
            raise _Bad(f"match_length: must be absent or 1 on table42, got {match_length}")
        match_length = None
    winner, loser = _text(data, "winner"), _text(data, "loser")
    if winner == loser:
        raise _Bad(f"loser: {winner!r} is on both sides of the game")
    reason = data.get("reason", "normal")
    if type(reason) is not str:
        raise _Bad(f"reason: must be a string, got {_describe(reason)}")
    optional: dict[str, Any] = {}
    for name, field_kind in OPTIONAL_FIELDS:
        value = data.get(name)
        # The common cases inline (this runs for every game of a replay); the rest explained.
        if value is None or (
            type(value) is int and (0 <= value <= MAX_MAGNITUDE or (
                field_kind == "num" and -MAX_MAGNITUDE <= value < 0))
        ) or (type(value) is float and field_kind == "num"
              and -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE):
            optional[name] = value
        elif field_kind == "int":
            optional[name] = _opt_whole(data, name, 0)
        else:
            optional[name] = _opt_number(data, name)
    return GameRecord(
        kind,
        seq,
        _text(data, "game_id"),
        reason,
        _number(data, "finished_at"),
        cube,
        match_length,
        winner,
        loser,
        _number(data, "winner_before"),
        _number(data, "loser_before"),
        **optional,
    )


def _podium(data: dict[str, Any]) -> PodiumRecord:
    places_raw = data.get("places")
    if not isinstance(places_raw, list) or not 1 <= len(places_raw) <= 3:
        raise _Bad(f"places: must be a list of 1 to 3 places, got {_describe(places_raw)}")
    places = []
    for i, raw in enumerate(places_raw, 1):
        if not isinstance(raw, dict):
            raise _Bad(f"places[{i}]: must be an object, got {_describe(raw)}")
        try:
            places.append(
                PodiumEntry(
                    _text(raw, "player"),
                    _whole(raw, "prize", 0),
                    _opt_number(raw, "before"),
                    _opt_number(raw, "after"),
                )
            )
        except _Bad as error:
            raise _Bad(f"places[{i}].{error}") from None
    return PodiumRecord(
        _whole(data, "seq", 1),
        _text(data, "tournament_id"),
        _number(data, "awarded_at"),
        tuple(places),
    )


def parse_record(data: object) -> LogRecord:
    """A record from its JSON object; raises :class:`LogFormatError` (line 0) when bad."""
    try:
        return _parse(data)
    except _Bad as error:
        raise LogFormatError("record", 0, str(error)) from None


def _parse(data: object) -> LogRecord:
    if not isinstance(data, dict):
        raise _Bad(f"must be a JSON object, got {_describe(data)}")
    kind = data.get("kind")
    if kind == "table42" or kind == "fibs":
        return _game(data, kind)
    if kind == "podium":
        return _podium(data)
    raise _Bad(f"kind: must be table42, fibs or podium, got {_describe(kind)}")


def _json(text: str, what: str = "not valid JSON") -> object:
    """``text`` parsed as JSON; :class:`_Bad` when it is not (including an integer longer
    than Python converts and nesting deeper than its parser recurses)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _Bad(f"{what}: {error.msg} (column {error.colno})") from None
    except ValueError:  # an integer of more than 4300 digits
        raise _Bad(f"{what}: a number too long to read") from None
    except RecursionError:
        raise _Bad(f"{what}: nested too deeply") from None


class _Order:
    """Checks that each ladder's ``seq`` goes up: replay needs the applied order."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: dict[str, int] = {}

    def check(self, record: LogRecord) -> None:
        ladder = record.ladder
        previous = self.last.get(ladder, 0)
        if record.seq <= previous:
            self.fail(record, previous)
        self.last[ladder] = record.seq

    @staticmethod
    def fail(record: LogRecord, previous: int) -> NoReturn:
        raise _Bad(
            f"seq: {record.seq} comes after {previous} on {record.ladder}: the log is not in "
            "applied order (sort it by seq, one ladder at a time)"
        )


def read_jsonl(lines: Iterable[str], source: str = "<log>") -> Iterator[LogRecord]:
    """Records from JSON Lines, one at a time (blank lines are skipped). Raises
    :class:`LogFormatError` naming ``source`` and the line number at the first bad line,
    including a ``seq`` that does not go up within its ladder."""
    order = _Order()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            if len(line) > MAX_LINE_LENGTH:
                raise _Bad(f"line longer than {MAX_LINE_LENGTH} characters")
            data = _json(line)
            record = _parse(data)
            order.check(record)
        except _Bad as error:
            raise LogFormatError(source, number, str(error)) from None
        yield record


def _cell(name: str, text: str) -> object:
    if text == "":
        return None
    if name in _TEXT_COLUMNS:
        if name == "places":
            return _json(text, "places: not valid JSON")
        return text
    try:
        return int(text) if name in _INT_COLUMNS else float(text)
    except ValueError:  # not a number, or an integer of more than 4300 digits
        kind = "a whole number" if name in _INT_COLUMNS else "a number"
        raise _Bad(f"{name}: must be {kind}, got {_describe(text)}") from None


def read_csv(lines: Iterable[str], source: str = "<log>") -> Iterator[LogRecord]:
    """Records from CSV with the :data:`CSV_COLUMNS` header (any column order; unknown
    columns are refused). Errors as :func:`read_jsonl`, with the file's line number."""
    reader = csv.reader(iter(lines))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        raise LogFormatError(source, 1, f"not valid CSV: {error}") from None
    unknown = [name for name in header if name not in CSV_COLUMNS]
    if unknown or "kind" not in header:
        problem = f"unknown column {unknown[0]!r}" if unknown else "no 'kind' column"
        raise LogFormatError(source, 1, f"header: {problem} (expected {', '.join(CSV_COLUMNS)})")
    order = _Order()
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise LogFormatError(source, reader.line_num, f"not valid CSV: {error}") from None
        if not row:
            continue
        try:
            if len(row) != len(header):
                raise _Bad(f"{len(row)} cells, the header has {len(header)}")
            data = {name: _cell(name, text) for name, text in zip(header, row, strict=True)}
            data = {name: value for name, value in data.items() if value is not None}
            record = _parse(data)
            order.check(record)
        except _Bad as error:
            raise LogFormatError(source, reader.line_num, str(error)) from None
        yield record


#: What calibration reads from a game: winner, loser, their ratings before it, the match
#: length (1 on Table42) and, on FIBS, the logged experiences (None when absent).
GameResult = tuple[str, str, float, float, int, int | None, int | None]


def _is_number(value: object) -> bool:
    return (type(value) is int or type(value) is float) and \
        -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE  # false for nan and inf


def scan_results(
    lines: Iterable[str], source: str = "<log>", *, ladder: Kind = "table42"
) -> Iterator[GameResult]:
    """The :data:`GameResult` of every game of ``ladder`` in a JSON Lines log, for
    calibration: a fast path that checks only the fields it reads (kind, seq order, players,
    ratings, match length, experiences) on the games it returns, and every field of any
    other record. Errors as :func:`read_jsonl`."""
    last: dict[str, int] = {}
    is_fibs = ladder == "fibs"
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            if len(line) > MAX_LINE_LENGTH:
                raise _Bad(f"line longer than {MAX_LINE_LENGTH} characters")
            data = _json(line)
            if type(data) is dict and data.get("kind") == ladder:
                seq = data.get("seq")
                winner, loser = data.get("winner"), data.get("loser")
                w_before, l_before = data.get("winner_before"), data.get("loser_before")
                length = data.get("match_length", 1)
                w_exp, l_exp = data.get("winner_experience"), data.get("loser_experience")
                if (
                    type(seq) is int and seq > last.get(ladder, 0)
                    and type(winner) is str and type(loser) is str
                    and 0 < len(winner) <= 128 and 0 < len(loser) <= 128 and winner != loser
                    and _is_number(w_before) and _is_number(l_before)
                    and type(length) is int and (length >= 1 if is_fibs else length == 1)
                    and (w_exp is None or (type(w_exp) is int and w_exp >= 0))
                    and (l_exp is None or (type(l_exp) is int and l_exp >= 0))
                ):
                    last[ladder] = seq
                    yield winner, loser, cast(float, w_before), cast(float, l_before), length, \
                        w_exp, l_exp
                    continue
            record = _parse(data)  # anything else is checked in full (and named if bad)
            previous = last.get(record.ladder, 0)
            if record.seq <= previous:
                _Order.fail(record, previous)
            last[record.ladder] = record.seq
        except _Bad as error:
            raise LogFormatError(source, number, str(error)) from None
        if isinstance(record, GameRecord) and record.ladder == ladder:
            yield (record.winner, record.loser, record.winner_before, record.loser_before,
                   record.match_length or 1, record.winner_experience, record.loser_experience)


def decode_lines(raw: Iterable[bytes], source: str = "<log>") -> Iterator[str]:
    """Lines of bytes (each with its line end, as a binary file yields them) as text.
    Raises :class:`LogFormatError` naming ``source`` and the line at the first line that is
    not UTF-8, or longer than :data:`MAX_LINE_LENGTH` characters could be (give it chunks
    of at most ``4 * MAX_LINE_LENGTH + 2`` bytes, so one huge line is never held whole)."""
    limit = 4 * MAX_LINE_LENGTH
    for number, chunk in enumerate(raw, 1):
        if len(chunk) > limit and not chunk.endswith(b"\n"):
            raise LogFormatError(source, number, f"line longer than {MAX_LINE_LENGTH} characters")
        try:
            yield chunk.decode("utf-8")
        except UnicodeDecodeError as error:
            raise LogFormatError(
                source, number,
                f"not UTF-8 text: byte 0x{chunk[error.start]:02x} at byte {error.start + 1} "
                "of the line",
            ) from None


def read_lines(
    lines: Iterable[str], source: str = "<log>", *, fmt: Literal["jsonl", "csv"] = "jsonl"
) -> Iterator[LogRecord]:
    """Records from JSON Lines (``fmt="jsonl"``) or CSV (``fmt="csv"``)."""
    return read_csv(lines, source) if fmt == "csv" else read_jsonl(lines, source)


def format_of(path: str) -> Literal["jsonl", "csv"]:
    """The format a file name implies: ``.csv`` is CSV, anything else JSON Lines."""
    return "csv" if path.lower().endswith(".csv") else "jsonl"

"""The game log formats: round trips, and bad lines named by their line number."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rating_plugin.analysis import gamelog
from rating_plugin.analysis.gamelog import LogFormatError, read_csv, read_jsonl
from rating_plugin.analysis.synth import SynthConfig, generate

GOOD = {
    "kind": "table42", "seq": 1, "game_id": "g1", "reason": "normal", "finished_at": 1.7e9,
    "cube": 2, "winner": "ann", "loser": "bob", "winner_before": 1500, "loser_before": 1500,
}


def records() -> list[gamelog.LogRecord]:
    table = list(generate(SynthConfig(games=300, players=20, podium_every=100, seed=5)))
    fibs = list(generate(SynthConfig(games=100, players=20, ladder="fibs", seed=5)))
    return table + fibs


def test_jsonl_round_trip_keeps_every_field_and_bit() -> None:
    original = records()
    lines = [gamelog.json_line(record) for record in original]
    assert all(line.endswith("\n") and "\n" not in line[:-1] for line in lines)
    assert list(read_jsonl(lines)) == original


def test_csv_round_trip() -> None:
    original = records()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(gamelog.csv_header())
    for record in original:
        writer.writerow(gamelog.csv_row(record))
    out.seek(0)
    assert list(read_csv(out)) == original


def line(**changes: object) -> str:
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not None})


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "games.jsonl:3: not valid JSON: Expecting property name enclosed in "
                      "double quotes (column 2)"),
        ("[1, 2]", "games.jsonl:3: must be a JSON object, got [1, 2]"),
        (line(kind="chess"), "games.jsonl:3: kind: must be table42, fibs or podium, got 'chess'"),
        (line(winner=None), "games.jsonl:3: winner: missing"),
        (line(winner_before="abc"), "games.jsonl:3: winner_before: must be a number, got 'abc'"),
        (line(cube=3), "games.jsonl:3: cube: must be one of 1, 2, 4, 8, 16, 32, 64, got 3"),
        (line(loser="ann"), "games.jsonl:3: loser: 'ann' is on both sides of the game"),
        (line(seq=1), "games.jsonl:3: seq: 1 comes after 2 on table42: the log is not in "
                      "applied order (sort it by seq, one ladder at a time)"),
        (line(kind="fibs", seq=1), "games.jsonl:3: match_length: missing"),
        (line(winner_k=1.5), "games.jsonl:3: winner_k: must be a whole number, got 1.5"),
        (json.dumps({"kind": "podium", "seq": 3, "tournament_id": "t", "awarded_at": 1,
                     "places": [{"player": "a", "prize": -5}]}),
         "games.jsonl:3: places[1].prize: must be at least 0, got -5"),
    ],
)
def test_a_bad_jsonl_line_is_named_with_its_number(bad: str, message: str) -> None:
    lines = [line(seq=1), line(seq=2), bad, line(seq=9)]
    reader = read_jsonl(lines, "games.jsonl")
    with pytest.raises(LogFormatError) as caught:
        list(reader)
    assert str(caught.value) == message
    assert caught.value.line == 3
    assert caught.value.code == "log_format"


def test_blank_lines_are_skipped_but_counted() -> None:
    with pytest.raises(LogFormatError, match=r"^g:4: cube: must be one of"):
        list(read_jsonl([line(seq=1), "\n", "   \n", line(seq=2, cube=5)], "g"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind,seq,colour\n", "g.csv:1: header: unknown column 'colour'"),
        ("seq,game_id\n", "g.csv:1: header: no 'kind' column"),
        ("kind,seq,game_id\ntable42,x,g1\n", "g.csv:2: seq: must be a whole number, got 'x'"),
        ("kind,seq\ntable42,1,extra\n", "g.csv:2: 3 cells, the header has 2"),
    ],
)
def test_a_bad_csv_row_is_named_with_its_line_number(text: str, message: str) -> None:
    with pytest.raises(LogFormatError) as caught:
        list(read_csv(io.StringIO(text), "g.csv"))
    assert str(caught.value).startswith(message)


def test_a_quoted_newline_in_csv_counts_its_physical_lines() -> None:
    header = ",".join(gamelog.CSV_COLUMNS)
    good = gamelog.csv_row(next(iter(records())))
    text = header + "\n" + ",".join(good) + '\ntable42,2,"g\n2",normal\n'
    with pytest.raises(LogFormatError, match=r"^g.csv:4: "):
        list(read_csv(io.StringIO(text), "g.csv"))


def test_a_line_too_long_is_refused() -> None:
    with pytest.raises(LogFormatError, match=r"^g:1: line longer than 16384 characters"):
        list(read_jsonl([line(game_id="x" * 20_000)], "g"))


def test_the_calibration_fast_path_reads_what_the_full_reader_reads() -> None:
    lines = [gamelog.json_line(record) for record in records()]
    for ladder in ("table42", "fibs"):
        full = [
            (r.winner, r.loser, r.winner_before, r.loser_before, r.match_length or 1,
             r.winner_experience, r.loser_experience)
            for r in read_jsonl(lines)
            if isinstance(r, gamelog.GameRecord) and r.ladder == ladder
        ]
        assert list(gamelog.scan_results(lines, ladder=ladder)) == full


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (line(seq=2, winner_before=None), "g:2: winner_before: missing"),
        (line(seq=1), "g:2: seq: 1 comes after 1 on table42"),
        (line(seq=2, loser="ann"), "g:2: loser: 'ann' is on both sides of the game"),
    ],
)
def test_the_fast_path_names_bad_lines_as_the_full_reader_does(bad: str, message: str) -> None:
    with pytest.raises(LogFormatError) as caught:
        list(gamelog.scan_results([line(seq=1), bad], "g"))
    assert str(caught.value).startswith(message)

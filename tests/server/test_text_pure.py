"""Text cleaning and operator escaping without sockets (server/protocol/text.py): one table
of cases per rule."""

from __future__ import annotations

import json
import unicodedata

import pytest

from server.protocol.text import INVISIBLE, clean_text, printable

FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # man ZWJ woman ZWJ girl
ENGLAND = "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"


@pytest.mark.parametrize(("raw", "clean"), [
    # kept as it is
    ("hello", "hello"),
    ("émoji 🎲 и кириллица, 中文, עברית", "émoji 🎲 и кириллица, 中文, עברית"),
    ("\u2764\ufe0f variation selectors stay", "\u2764\ufe0f variation selectors stay"),
    ("e\u0301 combining accents stay", "e\u0301 combining accents stay"),
    # whitespace: every run becomes one space, none at the ends
    ("  padded \t", "padded"),
    ("line\nbreak\r\nand\ttab", "line break and tab"),
    ("a\u00a0b\u3000c\u2003d", "a b c d"),  # no-break, ideographic, em spaces (Zs)
    ("line\u2028separator\u2029paragraph", "line separator paragraph"),  # Zl, Zp
    ("next\u0085line", "next line"),  # NEL: a C1 control that is whitespace
    ("unit\x1fseparator", "unit separator"),
    # controls (Cc) removed
    ("bell\x07 and nul\x00", "bell and nul"),
    ("\x1b[31mred", "[31mred"),
    ("csi\u009b2Jgone\u009f", "csi2Jgone"),
    # format characters (Cf) removed: zero width, joiners, BOM, soft hyphen, bidi controls
    ("zero\u200bwidth", "zerowidth"),
    ("word\u2060joiner\ufeffbom\u00adsoft", "wordjoinerbomsoft"),
    ("\u202eevil\u202c", "evil"),
    ("\u2066iso\u2069 \u200emark\u200f \u061carabic", "iso mark arabic"),
    ("non\u200cjoiner", "nonjoiner"),  # ZWNJ too: Persian and Indic words join up
    ("tag\U000E0041\U000E0042\U000E007Fs", "tags"),  # the tag characters (U+E0000 block)
    # emoji built with ZWJ or tags fall apart into their parts, still readable
    (FAMILY, "\U0001F468\U0001F469\U0001F467"),
    (ENGLAND, "\U0001F3F4"),
    # private use (Co), unassigned (Cn), lone surrogates (Cs) removed
    ("private\ue000use\U000F0000", "privateuse"),
    ("unassigned\u0378\U0010FFFF", "unassigned"),
    ("lone\ud800surrogate", "lonesurrogate"),
    # letters and marks that draw nothing removed
    ("hangul\u3164filler\u115f\u1160\uffa0", "hangulfiller"),
    ("cgj\u034f braille\u2800blank", "cgj brailleblank"),
])
def test_clean_text(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


@pytest.mark.parametrize("raw", [
    "", " " * 10, "\t\n\r", "\u200b\u200c\u200d\u2060\ufeff", "\U000E0041\U000E007F",
    "\u2028\u2029\u0085", "\u202a\u202b\u202d \x7f", "\u202e\u200e \x00\n", "\ue000\U000F0000",
    "\u3164\u2800\u034f", "\u0301\u0302", "\ufe0f", " \u200b \u200d ",
])
def test_nothing_visible_is_empty(raw: str) -> None:
    assert clean_text(raw) == ""


def test_every_removed_category_is_removed() -> None:
    """One character of each category the rules remove, and none of what they keep."""
    samples = {"Cc": "\x01", "Cf": "\u200b", "Co": "\ue000", "Cn": "\u0378", "Cs": "\udfff",
               "Zl": "\u2028", "Zp": "\u2029"}
    for category, ch in samples.items():
        assert unicodedata.category(ch) == category
        assert clean_text(f"a{ch}b") in ("ab", "a b"), category
    assert all(clean_text(f"a{ch}b") == "ab" for ch in INVISIBLE)


def test_cleaning_twice_changes_nothing() -> None:
    raw = " \u202ehe\u200bllo\u2028 \U0001F468\u200d\U0001F469  w\u00a0o\x07rld\u3164 "
    once = clean_text(raw)
    assert once == "hello \U0001F468\U0001F469 w orld" and clean_text(once) == once


@pytest.mark.parametrize(("text", "shown"), [
    ("plain text, é 🎲 中", "plain text, é 🎲 中"),
    ("\u202eevil", "\\u202eevil"),
    ("nel\u0085csi\u009bls\u2028", "nel\\u0085csi\\u009bls\\u2028"),
    ("esc\x1b[2J", "esc\\u001b[2J"),
    ("tag\U000E0041", "tag\\udb40\\udc41"),
    ("nbsp\u00a0", "nbsp\\u00a0"),
])
def test_printable_escapes_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown


def test_printable_json_stays_the_same_json() -> None:
    row = {"text": "a\u202eb\u0085c\U000E0041\u2028", "name": "é"}
    line = printable(json.dumps(row, ensure_ascii=False))
    assert line.isprintable() and json.loads(line) == row

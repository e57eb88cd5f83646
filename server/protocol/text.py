"""Text people write for others to read, cleaned one way everywhere (pure, stdlib only).

Chat messages, report reasons, tournament names and display names go through
:func:`clean_text` before anything else looks at them (PROTOCOL.md §16, "Text"):

- **whitespace** (``str.isspace``: spaces of every width, tabs, newlines, U+0085, the line
  and paragraph separators U+2028/U+2029, the C0 separators U+001C..U+001F): each run becomes
  one space, and none is left at either end;
- **removed**: controls (Unicode category Cc, C0 and C1: U+009B, U+001B ...), format
  characters (Cf: zero-width space U+200B, joiners U+200C/U+200D, word joiner U+2060, byte
  order mark U+FEFF, soft hyphen U+00AD, the bidirectional marks, embeddings, overrides and
  isolates such as U+202E, the tag characters U+E0001..U+E007F), private use (Co), unassigned
  code points (Cn), lone surrogates (Cs), and the few letters and marks that draw nothing
  (:data:`INVISIBLE`: Hangul fillers, the combining grapheme joiner, the Braille blank ...);
- **nothing to see**: a text left with only combining marks (M*) and spaces is empty.

Emoji joined by U+200D (ZWJ sequences such as the family 👨‍👩‍👧) fall apart into their
parts (👨👩👧), and a flag written with tag characters (England's) into its black flag:
the text stays readable and no invisible character gets through. Variation selectors
(U+FE0E/U+FE0F, the emoji or text look of the character before them) are kept.

:func:`printable` is for the other direction: what an operator's terminal prints of stored
text, with every character that is not printable written as an escape.
"""

from __future__ import annotations

import unicodedata

__all__ = ["INVISIBLE", "REMOVED_CATEGORIES", "clean_text", "printable"]

REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})
"""Categories removed from a text (those characters that are whitespace become a space)."""

INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164"
                      "\uffa0")
"""Letters and marks of other categories that draw nothing (Unicode's default-ignorable
Hangul fillers, the combining grapheme joiner, Mongolian free variation selectors, the Khmer
inherent vowels) and the Braille blank: removed too."""

_VISIBLE_GROUPS = frozenset("LNPS")
"""The first letter of the categories that draw something on their own."""


def _kept(ch: str) -> bool:
    return unicodedata.category(ch) not in REMOVED_CATEGORIES and ch not in INVISIBLE


def clean_text(raw: str) -> str:
    """``raw`` cleaned (the module's rules): whitespace runs made one space and trimmed, the
    removed characters gone. ``""`` when nothing visible is left; the caller refuses that
    (``bad_field``) and checks the length of the rest."""
    if raw.isascii() and raw.isprintable():  # the common case: only spaces to collapse
        return " ".join(raw.split())
    words: list[str] = []
    word: list[str] = []
    for ch in raw:
        if ch.isspace():
            if word:
                words.append("".join(word))
                word = []
        elif _kept(ch):
            word.append(ch)
    if word:
        words.append("".join(word))
    text = " ".join(words)
    if not any(unicodedata.category(ch)[0] in _VISIBLE_GROUPS for ch in text):
        return ""
    return text


def printable(text: str) -> str:
    """``text`` with every character that is not printable (``str.isprintable``; a plain
    space is) written as a JSON-style escape: ``\\u202e``, ``\\u0085``; beyond the first
    plane as its surrogate pair (``\\udb40\\udc01``), so a JSON text stays JSON."""
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
            continue
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)

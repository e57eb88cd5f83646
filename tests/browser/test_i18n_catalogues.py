"""The page's message catalogues (server/static/i18n/*.json) against the code that uses them,
without a browser: every key the JavaScript names is in every catalogue, the catalogues have the
same keys, the same placeholders and the plural forms their language has, and no visible text is
written into the JavaScript itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "server" / "static"
LANGS = ("en", "ro", "ru")
# Intl.PluralRules categories of each language for cardinal numbers.
PLURALS = {"en": {"one", "other"}, "ro": {"one", "few", "other"},
           "ru": {"one", "few", "many", "other"}}
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def catalogue(lang: str) -> dict[str, str | dict[str, str]]:
    data: dict[str, str | dict[str, str]] = json.loads(
        (STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    return data


def sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((STATIC / "js").glob("*.js"))}


def keys_used() -> set[str]:
    """Every string literal in the JavaScript shaped like a key of a catalogue's areas
    ("area.name" with an area the English catalogue has)."""
    areas = {key.split(".")[0] for key in catalogue("en")}
    used: set[str] = set()
    for text in sources().values():
        for literal in STRING.findall(text):
            m = re.fullmatch(r"([a-z][a-z0-9]*)\.[a-z0-9_]+", literal)
            if m and m.group(1) in areas:
                used.add(literal)
    return used


def forms(value: str | dict[str, str]) -> list[str]:
    return list(value.values()) if isinstance(value, dict) else [value]


def test_every_key_the_page_uses_is_in_every_catalogue() -> None:
    used = keys_used()
    assert len(used) > 300
    for lang in LANGS:
        missing = sorted(used - set(catalogue(lang)))
        assert missing == [], f"{lang}.json lacks {missing}"


def test_the_catalogues_have_the_same_keys_and_placeholders() -> None:
    en = catalogue("en")
    for lang in ("ro", "ru"):
        other = catalogue(lang)
        assert sorted(set(en) ^ set(other)) == [], lang
        for key, value in other.items():
            wanted = {p for form in forms(en[key]) for p in PLACEHOLDER.findall(form)}
            for form in forms(value):
                assert set(PLACEHOLDER.findall(form)) <= wanted | {"n"}, (lang, key, form)
            assert all(form.strip() for form in forms(value)), (lang, key)


@pytest.mark.parametrize("lang", LANGS)
def test_plural_entries_use_the_languages_forms(lang: str) -> None:
    for key, value in catalogue(lang).items():
        if isinstance(value, dict):
            assert "other" in value and set(value) <= PLURALS[lang], (lang, key, set(value))


# What a literal may be without being visible text: keys, class names, selectors, event and
# element names, attribute values, ids, URLs.
NOT_TEXT = re.compile(r"^[\w.#:\-/\[\]=*>+~\"' ,()@^$%|]*$")
VISIBLE_CALL = re.compile(
    r"""\bh\(\s*"[a-z0-9]+"\s*,\s*(?:\{[^{}]*\}|null)\s*,\s*["`]([^"`]*[A-Za-z][^"`]*)["`]""")
LABEL_SET = re.compile(
    r"""["'](?:aria-label|placeholder|title|alt)["']?\s*[:,]\s*["`]([^"`]+)["`]""")
TEXT_SET = re.compile(r"""(?:textContent|title)\s*=\s*["`]([^"`]*[A-Za-z]{3}[^"`]*)["`]""")


def test_no_visible_text_is_written_into_the_javascript() -> None:
    """Text put into an element (``h(tag, attrs, "…")``, ``textContent = "…"``) or into a
    label attribute comes from t(): a literal with words there is a string missing from the
    catalogues."""
    found = []
    for name, text in sources().items():
        for pattern in (VISIBLE_CALL, TEXT_SET):
            for m in pattern.finditer(text):
                literal = m.group(1)
                words = re.search(r"[A-Za-z]{2,}", literal.replace("${", " ${"))
                if words and not literal.startswith("${"):
                    found.append(f"{name}: {literal!r}")
        for m in LABEL_SET.finditer(text):
            found.append(f"{name}: {m.group(1)!r}")
        for m in re.finditer(r'"aria-label":\s*"([^"]+)"', text):
            found.append(f"{name}: {m.group(1)!r}")
    assert sorted(set(found)) == [], found


def test_the_shell_has_no_text_the_page_does_not_replace() -> None:
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    main = sources()["main.js"]
    assert 'class="skip"' in html and 't("shell.skip")' in main


@pytest.mark.parametrize("lang", LANGS)
def test_every_text_with_a_count_has_plural_forms(lang: str) -> None:
    """``{n}`` is kept for counts: a text with it is an object of the language's plural forms
    (all of them), never one string ("1 points"); a number that is not a count (a round, a
    match length, a step) has a placeholder of its own name."""
    for key, value in catalogue(lang).items():
        if any("{n}" in form for form in forms(value)):
            assert isinstance(value, dict), f"{lang}.json {key}: a count without plural forms"
            assert set(value) == PLURALS[lang], (lang, key, sorted(value))


COUNT_CALL = re.compile(r"""\bt\(\s*"([a-z0-9_.]+)"\s*,\s*\{[^{}]*\bn:""")


def test_every_count_the_page_passes_chooses_a_plural_form() -> None:
    """Each ``t(key, {n: …})`` of the JavaScript names a plural entry, so the count picks the
    form."""
    en = catalogue("en")
    passed = {m.group(1) for text in sources().values() for m in COUNT_CALL.finditer(text)}
    assert len(passed) > 20
    single = sorted(k for k in passed if not isinstance(en.get(k), dict))
    assert single == [], f"counts passed to texts without plural forms: {single}"

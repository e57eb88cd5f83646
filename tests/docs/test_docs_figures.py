"""The measured figures the docs quote come from BENCHMARKS.md: every error rate (mEMG) and
every figure of the computer players' speed and strength paragraph of docs/client.md."""

from __future__ import annotations

import re

from doc_blocks import ROOT, doc_files

BENCHMARKS = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
_NUMBER = r"\d[\d,]*(?:\.\d+)?"


def _in_benchmarks(figure: str) -> bool:
    """``figure`` (a number, or a range ``a–b``) appears in BENCHMARKS.md, each end of a range
    on its own."""
    return all(re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", BENCHMARKS)
               for n in re.split(r"[–-]", figure))


def test_every_error_rate_in_the_docs_is_a_benchmark_figure() -> None:
    for path in doc_files():
        for m in re.finditer(rf"({_NUMBER}(?:[–-]{_NUMBER})?) mEMG", path.read_text("utf-8")):
            assert _in_benchmarks(m[1]), f"{path.name}: {m[0]} is not in BENCHMARKS.md"


def test_the_bots_speed_and_strength_figures_are_benchmark_figures() -> None:
    text = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    paragraph = text[text.index("**Speed and strength**"):text.index("## Playing the computer")]
    figures = re.findall(rf"({_NUMBER}(?:[–-]{_NUMBER})?) ?(?:ms|s of CPU|%|mEMG)", paragraph)
    assert len(figures) >= 10
    missing = [f for f in figures if not _in_benchmarks(f)]
    assert not missing, f"docs/client.md quotes {missing}, not in BENCHMARKS.md"

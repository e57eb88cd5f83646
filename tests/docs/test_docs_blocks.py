"""Every fenced block of README.md and docs/*.md: sh, console and python blocks run against
a real server (conftest.py), one working folder per file, in the file's order; JSON examples
parse; every fence names its language; a block not run says why (doc_blocks.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import LANGUAGES, PARSED, ROOT, RUN, Block, blocks, doc_files, script
from doc_server import DocServer

HERE = Path(__file__).resolve().parent
BLOCK_TIMEOUT = 90.0
FILES = doc_files()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _run(block: Block, server: DocServer, folder: Path) -> str | None:
    """Run ``block`` in ``folder``; None when it exits 0, else what it printed."""
    source = script(block, server.port, server.store)
    if block.lang == "python":
        file = folder / f"block_{block.line}.py"
        file.write_text(source)
        argv = [sys.executable, str(file)]
    else:
        file = folder / f"block_{block.line}.sh"
        file.write_text((HERE / "preamble.sh").read_text() + source)
        argv = ["bash", str(file)]
    env = {**server.env, "DOC_PYTHON": sys.executable, "DOC_HELPERS": str(HERE)}
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BLOCK_TIMEOUT)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        out, code = b"(timed out)", -1
    finally:
        # Whatever the block left running (a command sent to the background) ends with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if code == 0:
        return None
    return f"exit status {code}\n--- ran:\n{source}--- printed:\n{out.decode(errors='replace')}"


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_the_blocks_of_a_doc_run(path: Path, doc_server: DocServer, tmp_path: Path) -> None:
    failures = [f"{block.where} ({block.lang}): {failure}"
                for block in blocks(path)
                if block.lang in RUN and block.not_run is None
                and (failure := _run(block, doc_server, tmp_path)) is not None]
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_block_names_a_known_language_and_json_parses(path: Path) -> None:
    for block in blocks(path):
        assert block.lang in LANGUAGES, f"{block.where}: ```{block.lang} (one of {LANGUAGES})"
        assert block.not_run is None or block.not_run.strip(), \
            f"{block.where}: <!-- not run: --> gives no reason"
        if block.lang in PARSED and block.not_run is None:
            docs = [block.text] if block.lang == "json" else block.text.splitlines()
            for doc in docs:
                try:
                    json.loads(doc)
                except ValueError as exc:
                    pytest.fail(f"{block.where}: {exc}")


def test_a_marker_is_only_ever_before_a_fence() -> None:
    for path in FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            if "<!-- not run" in line:
                assert lines[i + 1].lstrip().startswith(("```", "~~~")), \
                    f"{_name(path)}:{i + 1}: a not-run marker must be on the line before a fence"

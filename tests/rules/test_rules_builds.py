"""The rules and table tests in the other build: the table core compiled with mypyc (setup.py;
the modules of ``server.builds.COMPILED``) and the pure-Python ``.py`` files must behave the
same. This run uses one of them; this test runs ``tests/rules`` and ``tests/tables`` again in a
subprocess with the other, on a copy of the sources:

- compiled here: the copy leaves the ``.so`` files out, so the ``.py`` module runs;
- pure here: the copy is compiled first (``setup.py build_ext --inplace``), skipped when
  there is no C compiler or mypyc (or ``TABLE42_NO_MYPYC=1``).

In the other build it runs those tests but the comparison with the slow
reference generator (``test_rules_reference.py``): instead, the other build's answers over
``build_outputs``'s corpus (the reference test's positions) must equal this build's, which
this run checks against the reference.

That full run happens when the stored answers (``build_answers.json``) are stale: the rules,
the table core, the protocol or these tests changed since both builds last gave them
(``build_outputs.sources_digest``), or with ``TABLE42_OTHER_BUILD=1``. Otherwise both builds
were run in full on these very sources when the answers were stored, and this build's
answers must equal the stored ones (``test_this_build_gives_the_stored_answers``).
``python3 tests/rules/build_outputs.py --store`` runs it in full and stores the answers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import build_outputs
import pytest

import server.rules.moves
from server.builds import COMPILED as SOURCES
from server.builds import module_name

ROOT = Path(__file__).resolve().parents[2]
COMPILED = Path(server.rules.moves.__file__).suffix in (".so", ".pyd")
PROBE = ("import importlib; print(' '.join(importlib.import_module(n).__file__ for n in "
         f"{[module_name(s) for s in SOURCES]!r}))")


def _copy_sources(dest: Path) -> None:
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "*.c", "build")
    for name in ("server", "rating_plugin"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for folder in ("rules", "tables"):
        shutil.copytree(ROOT / "tests" / folder, dest / "tests" / folder, ignore=ignore)
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy2(ROOT / name, dest / name)


def _compiler_found() -> bool:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(cc.split()[0]) is not None


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _finish(proc: subprocess.Popen[str], timeout: float) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return out


STORE_HINT = ("run `python3 tests/rules/build_outputs.py --store` (both builds in full, then "
              "the answers stored) and commit tests/rules/build_answers.json")


def _stored_answers_fresh() -> bool:
    return build_outputs.stored().get("sources") == build_outputs.sources_digest()


def test_the_stored_answers_are_for_these_sources() -> None:
    """A change to the rules, the table core, the protocol or the tests the other build runs
    makes the stored answers stale: they must be stored again (the full run below runs on
    every change until they are)."""
    assert build_outputs.stored(), f"no stored answers: {STORE_HINT}"
    assert _stored_answers_fresh(), (
        f"the sources changed since the answers were stored: {STORE_HINT}")


def test_this_build_gives_the_stored_answers() -> None:
    """Every answer of this build over the corpus is the one both builds gave when the answers
    were stored (on these sources: the test above)."""
    record = build_outputs.stored()
    if not _stored_answers_fresh():
        pytest.skip("the stored answers are stale: the full comparison runs instead")
    each = build_outputs.digests()
    assert str(len(each)) == record["positions"]
    assert build_outputs.answers_digest(each) == record["answers"], (
        "this build answers otherwise than both builds did on these sources: run "
        "TABLE42_OTHER_BUILD=1 python3 -m pytest tests/rules/test_rules_builds.py to see where")


@pytest.mark.timeout(900)
def test_rules_tests_pass_in_the_other_build(tmp_path: Path) -> None:
    if _stored_answers_fresh() and os.environ.get(build_outputs.OTHER_BUILD) != "1":
        pytest.skip("both builds gave the stored answers on these sources "
                    "(test_this_build_gives_the_stored_answers); TABLE42_OTHER_BUILD=1 runs it")
    _copy_sources(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TABLE42_NO_MYPYC"}
    env["PYTHONPATH"] = str(tmp_path)
    if COMPILED:
        env["TABLE42_NO_MYPYC"] = "1"
    else:
        if os.environ.get("TABLE42_NO_MYPYC", "").strip() not in ("", "0"):
            pytest.skip("TABLE42_NO_MYPYC is set: no compiled build to compare with")
        if not _compiler_found():
            pytest.skip("no C compiler: the compiled build cannot be made here")
        pytest.importorskip("mypyc.build")
        _run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], tmp_path, env, 600)
    where = _run([sys.executable, "-c", PROBE], tmp_path, env, 60).split()
    assert len(where) == len(SOURCES)
    for path in where:  # the other build really runs, for every module
        assert path.startswith(str(tmp_path)) and path.endswith(".py") == COMPILED, where
    # Both at once, while this process works out its own answers.
    tests = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/rules", "tests/tables", "--ignore", "tests/rules/test_rules_builds.py",
         "--ignore", "tests/rules/test_rules_reference.py"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = subprocess.Popen(
        [sys.executable, str(Path("tests") / "rules" / "build_outputs.py")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        mine = build_outputs.digests()
        theirs = json.loads(_finish(answers, 600))
        assert " passed" in _finish(tests, 800)
    finally:
        for proc in (tests, answers):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert len(theirs) == len(mine)
    differ = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
    corpus = list(build_outputs.corpus())
    assert not differ, [corpus[i] for i in differ[:5]]


@pytest.mark.timeout(300)
def test_a_stale_compiled_module_is_not_loaded(tmp_path: Path) -> None:
    """A ``moves.py`` changed since the extension was built runs as the ``.py`` (the stamp
    ``moves.build`` no longer matches), not as the old compiled code."""
    if not COMPILED or not (ROOT / "server" / "rules" / "moves.build").exists():
        pytest.skip("no stamped compiled build here")
    shutil.copytree(ROOT / "server", tmp_path / "server",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rating_plugin", tmp_path / "rating_plugin",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for shared in ROOT.glob("*__mypyc*"):  # mypyc's runtime for a group of modules
        shutil.copy2(shared, tmp_path / shared.name)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    probe = "import server.rules as r, server.rules.moves as m; print(r.MOVES_BUILD, m.__file__)"
    fresh = _run([sys.executable, "-c", probe], tmp_path, env, 60).split()
    assert fresh[0] == "compiled" and not fresh[1].endswith(".py")
    with (tmp_path / "server" / "rules" / "moves.py").open("a", encoding="utf-8") as f:
        f.write("\n# changed after the build\n")
    stale = _run([sys.executable, "-c", probe], tmp_path, env, 60).strip().split(maxsplit=1)
    assert stale[0] == "pure" and stale[1].endswith("(stale build) " + str(
        tmp_path / "server" / "rules" / "moves.py")), stale


@pytest.mark.timeout(300)
def test_the_compiled_core_loads_from_outside_the_checkout(tmp_path: Path) -> None:
    """The group's shared runtime (``<hash>__mypyc``) sits at the top of the checkout; a
    script run from elsewhere, with only the packages' folder mapped (as an editable install
    does) and not the top itself on the path, still loads the compiled modules."""
    if not COMPILED or not (ROOT / "server" / "rules" / "moves.build").exists():
        pytest.skip("no stamped compiled build here")
    for name in ("server", "rating_plugin"):
        shutil.copytree(ROOT / name, tmp_path / "top" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for shared in ROOT.glob("*__mypyc*"):
        shutil.copy2(shared, tmp_path / "top" / shared.name)
    (tmp_path / "elsewhere").mkdir()
    # A finder for the two packages only, as pip's editable finder maps them.
    probe = (
        "import importlib.util, sys; from importlib.machinery import PathFinder\n"
        "class Packages:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        top = {str(tmp_path / 'top')!r}\n"
        "        if name in ('server', 'rating_plugin'):\n"
        "            return PathFinder.find_spec(name, [top])\n"
        "        return None\n"
        "sys.meta_path.append(Packages())\n"
        "import server.builds as b, server.tables.machine as m\n"
        "print(sorted(set(b.BUILDS.values())), m.__file__)\n"
    )
    out = _run([sys.executable, "-c", probe], tmp_path / "elsewhere", dict(os.environ), 60)
    assert out.startswith("['compiled'] ") and not out.strip().endswith(".py"), out

"""What the move generator answers over a fixed corpus, as one digest per position and roll.

Two builds of ``server/rules/moves.py`` (the mypyc-compiled extension and the ``.py``) must
answer the same: ``tests/rules/test_rules_builds.py`` runs :func:`main` in the other build
and compares its digests with this build's, position by position. This build is checked
against the slow reference (``test_rules_reference.py``), so equal answers carry that check
over to the other build.

The corpus: :data:`RANDOM_POSITIONS` positions of the shapes ``test_rules_reference``'s
strategy draws (checkers anywhere, on the bar, borne off, stacks that block dice, few
checkers left), each with a seeded roll, and every position and roll met in
:data:`GAME_POSITIONS` steps of seeded random games. Per position and roll it records every
answer of the module: ``legal_plays`` (steps, order), ``legal_results``, ``legal_outcomes``,
``play_texts`` (text and the map back), ``format_play``, and ``parse_play`` of each text.

``python build_outputs.py`` prints the digests as JSON.

The answers are also stored (``build_answers.json``, committed): the digest of the sources
they depend on (:func:`sources_digest`) and one digest of every answer over the corpus,
written only once both builds were run in full and gave those answers. While the sources are
unchanged, a run compares its own build's answers with the stored ones instead of making
the other build (``test_rules_builds.py``); a change to the sources makes the stored answers
stale, the full comparison runs again and ``python3 tests/rules/build_outputs.py --store``
(which runs it, then stores) must be run and its file committed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from server.builds import COMPILED
from server.rules import Position, Side, format_play, legal_plays, legal_results, parse_play
from server.rules.moves import legal_outcomes, play_texts

RANDOM_POSITIONS = 3000
GAME_POSITIONS = 2000
Roll = tuple[int, int]


def random_position(rng: random.Random) -> Position:
    """A legal position drawn as ``test_rules_reference.positions`` draws one."""
    board = [0] * 24
    bars = [0, 0]
    for side in (0, 1):
        bars[side] = rng.choice([0, 0, 0, 0, 1, 1, 2, 3])
        zone = rng.choice([24, 24, 12, 6])
        stack = rng.choice([1, 1, 2])
        free = min(15 - bars[side], rng.choice([15, 15, 15, 4, 2]))
        points = [rng.randint(1, zone) for _ in range(rng.randint(0, free // stack))]
        for point in points:
            index = point - 1 if side == 0 else 24 - point
            if (board[index] < 0) if side == 0 else (board[index] > 0):
                continue
            board[index] += stack if side == 0 else -stack
    zero = 15 - sum(n for n in board if n > 0) - bars[0]
    one = 15 + sum(n for n in board if n < 0) - bars[1]
    return Position(tuple(board), (bars[0], bars[1]), (zero, one), Side(rng.randint(0, 1)))


def corpus() -> Iterator[tuple[Position, Roll]]:
    """The random positions, then the games' positions: the very positions and rolls of
    ``test_rules_reference.test_positions_from_random_games_match_reference`` (its seed)."""
    rng = random.Random(1)
    for _ in range(RANDOM_POSITIONS):
        yield random_position(rng), (rng.randint(1, 6), rng.randint(1, 6))
    rng = random.Random(20240607)
    met = 0
    while met < GAME_POSITIONS:
        position = Position.initial(Side(rng.randint(0, 1)))
        while position.winner is None and met < GAME_POSITIONS:
            roll = (rng.randint(1, 6), rng.randint(1, 6))
            yield position, roll
            met += 1
            play = rng.choice(list(legal_plays(position, roll)))
            position = position.apply(play)


def answers(position: Position, roll: Roll) -> str:
    """Everything the module answers for ``position`` and ``roll``, as text."""
    plays = list(legal_plays(position, roll))
    texts, by_text = play_texts(position, *roll)
    return repr((
        [[tuple(step) for step in play] for play in plays],
        sorted((repr(after), [tuple(step) for step in play])
               for after, play in legal_results(position, roll).items()),
        [(raw.hex(), mask) for raw, mask in legal_outcomes(position, roll)],
        texts,
        sorted((text, [tuple(step) for step in play]) for text, play in by_text.items()),
        [format_play(play, position) for play in plays],
        [[tuple(step) for step in parse_play(text, position, roll)] for text in by_text],
    ))


def digests() -> list[str]:
    return [hashlib.sha256(answers(position, roll).encode()).hexdigest()
            for position, roll in corpus()]


ROOT = Path(__file__).resolve().parents[2]
STORED = Path(__file__).with_name("build_answers.json")
OTHER_BUILD = "TABLE42_OTHER_BUILD"
"""Set to 1: ``test_rules_builds.py`` makes the other build and runs it in full even while
the stored answers are for these sources."""
SOURCE_FOLDERS = ("server/rules", "server/tables", "server/protocol", "tests/rules",
                  "tests/tables")
SOURCE_FILES = ("setup.py", "server/builds.py")
NOT_SOURCES = ("tests/rules/test_rules_builds.py",)


def sources() -> list[str]:
    """The files the answers and the other build's run depend on, from the repository root:
    the compiled modules, the rules, the table core, the protocol, the tests the other build
    runs and the build itself."""
    found = {*COMPILED, *SOURCE_FILES}
    for folder in SOURCE_FOLDERS:
        found.update(path.relative_to(ROOT).as_posix() for path in (ROOT / folder).rglob("*.py"))
    return sorted(found - set(NOT_SOURCES))


def sources_digest() -> str:
    digest = hashlib.sha256()
    for name in sources():
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def answers_digest(each: list[str]) -> str:
    """One digest of the corpus's answers (:func:`digests`)."""
    return hashlib.sha256("\n".join(each).encode()).hexdigest()


def stored() -> dict[str, str]:
    """The stored answers: ``sources`` (:func:`sources_digest`), ``answers``
    (:func:`answers_digest`); empty when none are stored."""
    if not STORED.exists():
        return {}
    loaded = json.loads(STORED.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return {str(key): str(value) for key, value in loaded.items()}


def store() -> int:
    """Run the other build in full and this build against the reference; store the answers
    when both pass."""
    env = dict(os.environ, **{OTHER_BUILD: "1"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "tests/rules/test_rules_builds.py::test_rules_tests_pass_in_the_other_build",
         "tests/rules/test_rules_reference.py", "-rs"], cwd=ROOT, env=env, check=False,
        capture_output=True, text=True)
    print(done.stdout[-3000:] + done.stderr[-3000:])
    if done.returncode != 0 or "skipped" in done.stdout:
        print("not stored: the full comparison failed or did not run", file=sys.stderr)
        return 1
    record = {"sources": sources_digest(), "answers": answers_digest(digests()),
              "positions": str(RANDOM_POSITIONS + GAME_POSITIONS)}
    STORED.write_text(json.dumps(record, indent=2) + "\n", "utf-8")
    print(f"stored {STORED.relative_to(ROOT)}")
    return 0


def main() -> None:
    if sys.argv[1:] == ["--store"]:
        raise SystemExit(store())
    print(json.dumps(digests()))


if __name__ == "__main__":
    main()

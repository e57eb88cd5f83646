"""The game-playing server tests again, with every test client on the full-state event form.

The suite's clients speak protocol 2 (change-only table events, the client library keeping
the state); ``TABLE42_TEST_PROTOCOL=1`` switches them to protocol 1 (PROTOCOL.md §5.1,
``server_helpers.TEST_PROTOCOL``). This test runs the modules that play games, sync, resume
and reconnect in a subprocess with that switch, so the README's ``python3 -m pytest -q``
covers both forms. The other server modules do not depend on the event form (HTTP, bad
input, pure code) or test both forms themselves (``test_lean_events.py``).

Skipped when this run already is the protocol-1 run (the whole suite by hand:
``TABLE42_TEST_PROTOCOL=1 python3 -m pytest -q tests/server``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "test_games.py",
    "test_nodes_and_shutdown.py",
    "test_hardening_outage.py",
    "test_hardening_ratings.py",
    "test_client_library.py",
    "test_lobby.py",
    "test_matchmaking_live.py",
)


@pytest.mark.timeout(600)
def test_game_tests_pass_on_the_full_state_form() -> None:
    if os.environ.get("TABLE42_TEST_PROTOCOL", "2").strip() == "1":
        pytest.skip("this run is the protocol-1 run")
    env = dict(os.environ, TABLE42_TEST_PROTOCOL="1")
    args = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
            *(str(Path("tests/server") / name) for name in MODULES)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=580, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout, done.stdout[-1000:]

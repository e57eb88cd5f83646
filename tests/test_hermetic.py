"""The suite never reads the user's home folder, ``REDIS_URL`` or settings: run under a
``HOME`` that holds a stopped store (what ``python -m server`` leaves once stopped), the tests
that run commands with no store of their own still see none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from server.config import OPTIONS
from tests.hermetic import ROOT


def test_the_suite_has_a_home_of_its_own() -> None:
    home = Path(os.environ["HOME"])
    assert home.name.startswith("table42-tests-home-") and Path.home() == home
    assert Path(os.environ["XDG_DATA_HOME"]).is_relative_to(home)
    assert "REDIS_URL" not in os.environ
    assert not [o.env for o in OPTIONS if o.env in os.environ]


def test_a_stopped_store_in_the_users_home_is_not_read(tmp_path: Path) -> None:
    user_home = tmp_path / "home"
    store = user_home / ".local" / "share" / "table42"
    (store / "appendonlydir").mkdir(parents=True)
    (store / "appendonlydir" / "appendonly.aof.1.base.rdb").write_bytes(b"REDIS0011")
    env = {k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"}
    env.update(HOME=str(user_home), REDIS_URL="redis://127.0.0.1:1/0",
               TABLE42_KEY_PREFIX="user:", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "tests/test_hermetic.py::test_the_suite_has_a_home_of_its_own",
         "tests/calibration/test_cli_bad_input.py::test_export_settings_errors_are_one_line_and_exit_2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert sorted(p.name for p in store.iterdir()) == ["appendonlydir"]

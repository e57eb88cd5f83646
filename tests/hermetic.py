"""The suite's own home folder: no test reads the user's home, data folder or settings.

:func:`isolate` (run once by ``tests/conftest.py`` when the suite starts) points ``HOME`` and
``XDG_DATA_HOME`` at a folder of the run's own and takes ``REDIS_URL`` and every server
setting (``TABLE42_*``) out of the environment, so a process a test starts (``python -m
server`` without ``REDIS_URL``, an admin command, ``python -m rating_plugin export``) finds
only what the test gave it. :func:`bare_env` is the environment of a command run with nothing
else.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from server.config import OPTIONS

ROOT = Path(__file__).resolve().parents[1]


def isolate() -> str | None:
    """Give the run a home folder of its own and no server setting from the environment;
    returns the ``REDIS_URL`` the run was started with (the test Redis), taken out."""
    home = tempfile.mkdtemp(prefix="table42-tests-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    os.environ["HOME"] = home
    os.environ["XDG_DATA_HOME"] = os.path.join(home, ".local", "share")
    given = os.environ.get("REDIS_URL")
    for option in OPTIONS:
        os.environ.pop(option.env, None)
    return given


def bare_env(**extra: str) -> dict[str, str]:
    """The environment of a command run with nothing but the repository on its path and the
    suite's home folder (``HOME`` unset would fall back to the user's, from the password
    file)."""
    return {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"],
            "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"], **extra}

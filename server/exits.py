"""How the command-line entries end: one line on stderr saying what happened and what to do,
and an exit status from one table (docs/operations.md, "Exit statuses").

An expected failure (a busy port, an unknown table, a host that does not answer, a bad file,
nothing to do, Ctrl-C) is raised as :class:`CommandFailed` or is one of the exceptions
:func:`run_command` knows; a traceback is left for a bug. No I/O library is imported here
(``server.bot.review`` and ``server.bot.train`` are pure modules).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import NoReturn
from urllib.parse import urlsplit

EXIT_OK = 0
EXIT_FAILED = 1
"""It could not be done: the port is in use, Redis or the server cannot be reached, the table
or the key does not exist."""
EXIT_USAGE = 2
"""Bad input: a flag, a setting, a file that cannot be read, nothing to do."""
EXIT_STORE_FAILED = 3
"""``python -m server``: the embedded redis-server kept dying (``server/store_supervisor.py``)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT) ended a command that was not done (128 + the signal's number, as shells
report it)."""


class CommandFailed(Exception):
    """An expected failure: its message is the line printed, ``status`` the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``prog: error: ... (see
    --help)``) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def store_unreachable(url: str, exc: BaseException) -> CommandFailed:
    """The failure of a command whose Redis did not answer (``url`` shown without its
    password)."""
    return CommandFailed(f"cannot reach Redis at {shown_url(url)}: {exc} (is it running? is "
                         "REDIS_URL / --redis-url right?)")


def shown_url(url: str) -> str:
    """``url`` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")).geturl()


def say(prog: str, message: str, status: int) -> int:
    """Print ``prog: message`` on stderr as one line; returns ``status``."""
    line = " ".join(message.split())
    print(f"{prog}: {line}", file=sys.stderr, flush=True)
    return status


def run_command(prog: str, body: Callable[[], int]) -> int:
    """Run a command's body: :class:`CommandFailed` and Ctrl-C become one line and their
    status."""
    try:
        return body()
    except CommandFailed as exc:
        return say(prog, str(exc), exc.status)
    except KeyboardInterrupt:
        return say(prog, "interrupted (Ctrl-C)", EXIT_INTERRUPTED)


def leave_interrupts_to_parent() -> None:
    """A worker process's first step: Ctrl-C reaches every process of the terminal's group;
    the parent stops its workers itself, so a worker does not stop (and print a traceback)
    on its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

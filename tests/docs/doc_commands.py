"""The two commands of the docs that the docs' test does not run as written (preamble.sh).

``install ARGS``: ARGS of ``pip install`` must be ``-e .`` or ``-e .[EXTRA,...]`` with extras
that pyproject.toml declares; nothing is installed.
``serve ARGS``: ``python -m server ARGS`` on a free port (``--port`` replaced, ``--host
0.0.0.0`` kept on 127.0.0.1), in its own data folder unless REDIS_URL or ``--data-dir`` names
a store; waits for ``/healthz``, stops it with SIGTERM, exits with its status.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0


def install(args: list[str]) -> int:
    spec = re.fullmatch(r"\.(?:\[([a-z,]+)\])?", args[1]) if args[:1] == ["-e"] and len(
        args) == 2 else None
    if spec is None:
        print(f"pip install {' '.join(args)}: not this checkout's editable install",
              file=sys.stderr)
        return 1
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    unknown = [e for e in (spec[1] or "").split(",") if e and e not in declared]
    if unknown:
        print(f"pip install: no extra {unknown} in pyproject.toml", file=sys.stderr)
        return 1
    print(f"pip install -e {args[1]}: not run (the suite runs in the installed checkout)",
          file=sys.stderr)
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(args: list[str]) -> int:
    port = free_port()
    argv = list(args)
    for i, arg in enumerate(argv[:-1]):
        if arg == "--port":
            argv[i + 1] = str(port)
        if arg == "--host" and argv[i + 1] == "0.0.0.0":
            argv[i + 1] = "127.0.0.1"
    env = {**os.environ, "TABLE42_PORT": str(port)}
    with tempfile.TemporaryDirectory(prefix="t42doc-") as data:
        if not env.get("REDIS_URL") and "--data-dir" not in argv:
            env["TABLE42_DATA_DIR"] = data
        proc = subprocess.Popen([sys.executable, "-m", "server", *argv], env=env,
                                stdin=subprocess.DEVNULL)
        try:
            if not answers(proc, port):
                print(f"python -m server {' '.join(args)}: never answered /healthz",
                      file=sys.stderr)
                return 1
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    print(f"python -m server {' '.join(args)}: answered /healthz on port {port}, stopped "
          f"(status {code})", file=sys.stderr)
    return code


def answers(proc: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``proc`` answers ``/healthz`` on ``port`` before it exits or START_TIMEOUT ends."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)  # polling for the server's socket: it answers when it is up
    return False


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    sys.exit({"install": install, "serve": serve}[command](rest))

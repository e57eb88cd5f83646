"""The analysis commands: help, the PNG plot, clear one-line errors (exit 2), light imports."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from rating_plugin.cli import main
from tests.hermetic import bare_env

ROOT = Path(__file__).resolve().parents[2]
PROG = "python -m rating_plugin"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rating_plugin", *argv], capture_output=True, text=True,
        env=bare_env(), timeout=60, check=False,
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "games.jsonl"
    assert main(["synth", "--games", "4000", "--players", "60", "--podium-every", "500",
                 "--late-share", "0.05", "--out", str(path), "--no-progress"]) == 0
    return path


@pytest.mark.parametrize("command", ["export", "synth", "calibrate", "replay"])
def test_each_command_explains_itself(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {PROG} {command}") or f" {command} " in out.splitlines()[0]
    assert "examples:" in out
    assert "%%" not in out  # argparse formats only what names %(prog)s



def is_png(path: Path) -> tuple[int, int]:
    """Checks the PNG signature, every chunk's CRC and the IEND chunk; returns the size."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, size, names = 8, (0, 0), []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        name, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert zlib.crc32(name + body) == crc, name
        if name == b"IHDR":
            size = struct.unpack(">II", body[:8])
        names.append(name)
        at += 12 + length
    assert names[0] == b"IHDR" and names[-1] == b"IEND" and b"IDAT" in names
    return size


def test_calibrate_prints_the_fit_the_bins_the_scores_and_draws_a_png(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "calibration.png"
    assert main(["calibrate", str(log), "--plot", str(png), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "Table42 calibration: 4000 games; current divisor 1200"
    assert lines[1].startswith("fitted divisor: ") and "(95% interval " in lines[1]
    assert "favourite leads by" in out and "log-loss" in out and "Brier" in out
    assert out.rstrip().endswith(f"plot written to {png}")
    width, height = is_png(png)
    assert width > 100 and height > 100
    assert "still settling" in err  # 4000 games among 60 players: early games settle


def test_calibrate_json(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(log), "--json", "--min-games", "20", "--no-progress"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games"] + data["left_out"] == 4000
    assert data["fit"]["low"] < data["fit"]["divisor"] < data["fit"]["high"]
    assert {"expected", "actual", "actual_low", "actual_high", "games"} <= set(data["bins"][0])


def test_replay_compares_the_leaderboards(log: Path, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.csv"
    assert main(["replay", str(log), "--version", "1.0.5", "--check", "--out", str(ratings),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "check: every logged number reproduced" in out
    assert "what-if:            divisor 400, K 32, cube coefficient" in out
    assert "half are within +/- (points)" in out and "Spearman" in out
    rows = ratings.read_text().splitlines()
    assert rows[0] == "player,rating,rank,what_if_rating,what_if_rank"
    assert len(rows) == 61


def test_csv_logs_work_like_jsonl(log: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    csv_log = tmp_path / "games.csv"
    assert main(["synth", "--games", "4000", "--players", "60", "--podium-every", "500",
                 "--late-share", "0.05", "--out", str(csv_log), "--no-progress"]) == 0
    assert main(["calibrate", str(log), "--json", "--no-progress"]) == 0
    from_jsonl = json.loads(capsys.readouterr().out)
    assert main(["calibrate", str(csv_log), "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out) == from_jsonl


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('{"kind": "table42"}\n',
         "games.jsonl:1: seq: missing"),
        ('\n{"kind": "podium", "seq": 1, "tournament_id": "t", "awarded_at": 1, "places": []}\n',
         "games.jsonl:2: places: must be a list of 1 to 3 places, got []"),
        ("garbage\n", "games.jsonl:1: not valid JSON: Expecting value (column 1)"),
    ],
)
@pytest.mark.parametrize("command", ["calibrate", "replay"])
def test_a_bad_log_is_one_line_naming_the_line_and_exit_2(
    command: str, content: str, error: str, tmp_path: Path
) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(content)
    done = run(command, str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"{PROG} {command}: error: {path.parent}/{error}\n"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["calibrate", "/no/such/file.jsonl"], "/no/such/file.jsonl: No such file or directory"),
        (["calibrate"], "give a LOG file (- for stdin) or --redis-url to read the store"),
        (["replay", "x.jsonl", "--redis-url", "redis://127.0.0.1:1/0"],
         "give a LOG file or --redis-url, not both"),
        (["calibrate", "--redis-url", "redis://127.0.0.1:1/0"], "redis: Error "),
        (["synth", "--games", "-3"], "argument --games: must be at least 0, got -3 (see --help)"),
        (["synth", "--games", "10", "--heavy-share", "2"],
         "argument --heavy-share: must be between 0 and 1, got '2' (see --help)"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], error: str) -> None:
    done = run(*argv)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{PROG} {argv[0]}: error: {error}")
    assert done.stderr.count("\n") == 1


def test_the_plot_without_matplotlib_says_how_to_install_it(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(SystemExit) as caught:
        main(["calibrate", str(log), "--plot", str(tmp_path / "x.png"), "--no-progress"],
             prog=PROG)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"{PROG} calibrate: error: --plot needs matplotlib, which is not installed: "
                   "pip install -e '.[analysis]' (or pip install matplotlib)\n")
    assert not (tmp_path / "x.png").exists()


def heavy_modules_after(imports: str) -> list[str]:
    """The modules of the ``analysis`` extra, redis and the analysis package that a fresh
    interpreter holds after ``import <imports>``."""
    code = (
        f"import sys, {imports}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('numpy', 'redis', 'tqdm', 'matplotlib') or m.startswith('rating_plugin.analysis')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=bare_env(), timeout=60, check=True)
    heavy: list[str] = json.loads(done.stdout.replace("'", '"'))
    return heavy


def test_importing_the_package_and_the_calculator_stays_light() -> None:
    assert heavy_modules_after("rating_plugin, rating_plugin.cli") == []


def test_the_store_does_not_import_the_analysis_tools() -> None:
    assert [m for m in heavy_modules_after("rating_plugin.store")
            if not m.startswith("redis")] == []


@pytest.mark.parametrize(("missing", "argv"), [
    ("numpy", ["calibrate", "LOG", "--no-progress"]),
    ("tqdm", ["synth", "--games", "10"]),
])
def test_a_missing_analysis_module_says_how_to_install_it(
    missing: str, argv: list[str], log: Path,
) -> None:
    """Without the ``analysis`` extra a command names the missing module in one line and
    exits 2 (tqdm draws the progress bar, shown on a terminal only: stderr claims to be one)."""
    argv = [str(log) if arg == "LOG" else arg for arg in argv]
    code = (
        "import io, sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "class Terminal(io.StringIO):\n"
        "    def isatty(self) -> bool:\n"
        "        return True\n"
        "sys.stderr = Terminal()\n"
        "from rating_plugin.cli import main\n"
        "try:\n"
        f"    main({argv!r}, prog={PROG!r})\n"
        "except SystemExit as done:\n"
        "    print(done.code)\n"
        "print(sys.stderr.getvalue(), end='')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=bare_env(), timeout=60, check=True)
    assert done.stdout == (
        f"2\n{PROG} {argv[0]}: error: {argv[0]} needs {missing}, which is not installed: "
        "pip install -e '.[analysis]'\n"
    )


def test_a_log_without_games_of_the_ladder_says_so_and_exits_1(tmp_path: Path) -> None:
    """Only a podium award: no game to fit. One heading and the warning, no table of NaNs,
    no plot, and exit 1 (the answer cannot be given)."""
    path = tmp_path / "podium.jsonl"
    path.write_text(json.dumps({
        "kind": "podium", "seq": 1, "tournament_id": "t1", "awarded_at": 1.0,
        "places": [{"player": "a", "prize": 50, "before": 1500, "after": 1550}],
    }) + "\n")
    png = tmp_path / "plot.png"
    done = run("calibrate", str(path), "--no-progress", "--plot", str(png))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == ["Table42 calibration: 0 games; current divisor 1200"]
    assert "nan" not in done.stdout and "warning: no table42 games" in done.stderr
    assert "no plot written" in done.stderr and not png.exists()
    as_json = run("calibrate", str(path), "--no-progress", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["games"] == 0

"""The analysis commands' shell: ``export``, ``synth``, ``calibrate`` and ``replay``.

Reads and writes files (or stdin/stdout), talks to Redis through
:class:`~rating_plugin.store.RatingStore`, shows a progress bar (tqdm, on a terminal only)
and prints reports; the work itself is done by the pure modules
:mod:`~rating_plugin.analysis.gamelog`, :mod:`~rating_plugin.analysis.calibration`,
:mod:`~rating_plugin.analysis.replay` and :mod:`~rating_plugin.analysis.synth`.
:mod:`rating_plugin.cli` imports this module only when one of these commands runs, so
``import rating_plugin`` and the calculator stay light (no numpy, redis or tqdm).

Every failure a user can cause raises :class:`CommandError` with a one-line message; the CLI
prints it and exits with its status (2 for bad input, 1 when ``replay --check`` finds a
number it cannot reproduce).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import math
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, Literal

from rating_plugin.analysis import gamelog
from rating_plugin.analysis.gamelog import LogRecord
from rating_plugin.errors import RatingError
from rating_plugin.rounding import round_half_away

if TYPE_CHECKING:  # at run time the store (and redis) load only for --redis-url
    from rating_plugin.store import RatingStore

__all__ = ["CommandError", "run"]

PROGRESS_EVERY = 10_000


class CommandError(Exception):
    """A command failed in a way the user can fix; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def run(args: argparse.Namespace) -> int:
    """Run the analysis command named by ``args.tool``; returns the exit status."""
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "export": _export,
        "synth": _synth,
        "calibrate": _calibrate,
        "replay": _replay,
    }
    try:
        return commands[args.tool](args)
    except BrokenPipeError:
        # The reader went away (``... | head``): stop quietly, as the shell's tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except RatingError as error:
        raise CommandError(str(error)) from None
    except OSError as error:
        name = getattr(error, "filename", None)
        where = f"{name}: " if name else ""
        raise CommandError(f"{where}{error.strerror or error}") from None


# -- progress -----------------------------------------------------------------------------------


class _Progress:
    """A tqdm bar on stderr when it is a terminal (and not switched off), updated every
    ``PROGRESS_EVERY`` records so it costs nothing per record."""

    def __init__(self, enabled: bool, total: int | None, unit: str, desc: str) -> None:
        self._bar: Any = None
        self._pending = 0
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=unit, desc=desc, unit_scale=True, file=sys.stderr)

    def tick(self) -> None:
        if self._bar is None:
            return
        self._pending += 1
        if self._pending >= PROGRESS_EVERY:
            self._bar.update(self._pending)
            self._pending = 0

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(self._pending)
            self._bar.close()


@contextlib.contextmanager
def _progress(args: argparse.Namespace, total: int | None, desc: str) -> Iterator[_Progress]:
    bar = _Progress(not args.no_progress, total, "rec", desc)
    try:
        yield bar
    finally:
        bar.close()


# -- input and output ---------------------------------------------------------------------------


@contextlib.contextmanager
def _output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle


def _format(path: str, given: str | None) -> Literal["jsonl", "csv"]:
    if given == "csv" or (given is None and gamelog.format_of(path) == "csv"):
        return "csv"
    return "jsonl"


@contextlib.contextmanager
def _open_log(path: str) -> Iterator[tuple[Iterator[str], str]]:
    """The log's lines as text (stdin for ``-``) and the name its errors give. Read as bytes
    and decoded line by line, so bytes that are not UTF-8 are named by line, and read at
    most a line's worth at a time, so a huge line is refused without being held whole."""
    chunk = 4 * gamelog.MAX_LINE_LENGTH + 2
    if path == "-":
        stdin = sys.stdin.buffer
        yield gamelog.decode_lines(iter(lambda: stdin.readline(chunk), b""), "<stdin>"), \
            "<stdin>"
        return
    with open(path, "rb") as handle:
        yield gamelog.decode_lines(iter(lambda: handle.readline(chunk), b""), path), path


def _file_records(path: str, fmt: str | None) -> Iterator[LogRecord]:
    with _open_log(path) as (handle, source):
        yield from gamelog.read_lines(handle, source, fmt=_format(path, fmt))


def _store(url: str, prefix: str) -> RatingStore:
    import redis.asyncio as aioredis

    from rating_plugin.store import RatingStore

    try:
        client = aioredis.Redis.from_url(url)
    except ValueError as error:  # not a redis://, rediss:// or unix:// URL
        raise CommandError(f"--redis-url: {error}") from None
    return RatingStore(client, prefix=prefix)


async def _check_store(store: RatingStore, url: str) -> None:
    """Refuse a prefix under which no settlement was ever applied: a mistyped ``--prefix``
    would otherwise read as an empty store (and an empty export "prove" nothing)."""
    if await store.holds_settlements():
        return
    found = await store.prefixes_in_use()
    hint = (
        "stores found under " + ", ".join(repr(prefix) for prefix in found)
        if found else "no rated store found under any prefix"
    )
    raise CommandError(
        f"no rated store under prefix {store.keys.prefix!r} at {url} (no settled game on "
        f"either ladder); {hint}"
    )


async def _redis_records(
    store: RatingStore, ladders: tuple[str, ...]
) -> AsyncIterator[LogRecord]:
    from rating_plugin.store import log_record

    for ladder in ladders:
        async for item in store.applied(ladder):
            yield log_record(item)


def _each_record(args: argparse.Namespace, ladders: tuple[str, ...],
                 take: Callable[[LogRecord], None]) -> None:
    """Feed every record of the chosen source to ``take``, with a progress bar."""
    if args.log is not None and args.redis_url is not None:
        raise CommandError("give a LOG file or --redis-url, not both")
    if args.log is None and args.redis_url is None:
        raise CommandError("give a LOG file (- for stdin) or --redis-url to read the store")
    if args.log is not None:
        with _progress(args, None, "reading") as bar:
            for record in _file_records(args.log, args.format):
                take(record)
                bar.tick()
        return

    async def from_redis() -> None:
        store = _store(args.redis_url, args.prefix)
        try:
            await _check_store(store, args.redis_url)
            with _progress(args, None, "reading") as bar:
                async for record in _redis_records(store, ladders):
                    take(record)
                    bar.tick()
        finally:
            await store.redis.aclose()

    _run_redis(from_redis())


def _run_redis(work: Any) -> Any:
    from redis.exceptions import RedisError

    try:
        return asyncio.run(work)
    except RedisError as error:
        raise CommandError(f"redis: {error}") from None


# -- export -------------------------------------------------------------------------------------


def _export(args: argparse.Namespace) -> int:
    ladders = ("table42", "fibs") if args.ladder == "all" else (args.ladder,)
    fmt = _format(args.out, args.format)

    from rating_plugin.locate import SERVER_PREFIX, StoreNotRunning, locate

    try:
        found = locate(args.redis_url, args.data_dir)
    except StoreNotRunning as error:
        raise CommandError(str(error)) from None
    prefix = args.prefix if args.prefix is not None else (
        SERVER_PREFIX if found.is_embedded else "")

    async def work() -> int:
        store = _store(found.url, prefix)
        try:
            await _check_store(store, found.url)
            with _output(args.out) as out:
                return int(await store.export_log(out, ladders=ladders, fmt=fmt,
                                                  batch=args.batch))
        finally:
            await store.redis.aclose()

    written = _run_redis(work())
    print(f"exported {written} records ({', '.join(ladders)})", file=sys.stderr)
    return 0


# -- synth --------------------------------------------------------------------------------------


def _synth(args: argparse.Namespace) -> int:
    from rating_plugin.analysis.replay import Rules
    from rating_plugin.analysis.synth import SynthConfig, generate

    config = SynthConfig(
        games=args.games,
        players=args.players,
        ladder=args.ladder,
        divisor=args.divisor if args.divisor is not None else (
            2000.0 if args.ladder == "fibs" else 1200.0
        ),
        skill_sd=args.skill_sd,
        heavy_share=args.heavy_share,
        heavy_weight=args.heavy_weight,
        days=args.days,
        late_share=args.late_share,
        late_seconds=args.late_seconds,
        podium_every=args.podium_every,
        ratings=args.ratings,
        seed=args.seed,
        rules=Rules.current(late_grace=args.late_grace),
    )
    fmt = _format(args.out, args.format)
    with _output(args.out) as out, _progress(args, args.games, "generating") as bar:
        if fmt == "csv":
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(gamelog.csv_header())
            for record in generate(config):
                writer.writerow(gamelog.csv_row(record))
                bar.tick()
        else:
            write = out.write
            for record in generate(config):
                write(gamelog.json_line(record))
                bar.tick()
    return 0


# -- calibrate ----------------------------------------------------------------------------------


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _divisor(value: float) -> str:
    return "infinite" if math.isinf(value) else f"{value:.0f}"


def _calibrate(args: argparse.Namespace) -> int:
    from rating_plugin.analysis.calibration import Calibrator, report

    if args.plot is not None:
        _check_matplotlib()
    calibrator = Calibrator(args.ladder, min_games=args.min_games)
    if args.log is not None and args.redis_url is None and _format(args.log, args.format) == \
            "jsonl":
        # The fast path: only the fields the fit needs are read from each game.
        add = calibrator.add_result
        with _open_log(args.log) as (handle, source), _progress(args, None, "reading") as bar:
            for game in gamelog.scan_results(handle, source, ladder=args.ladder):
                add(*game)
                bar.tick()
    else:
        _each_record(args, (args.ladder,), calibrator.add)
    result = report(calibrator, current=args.divisor, bin_width=args.bin_width,
                    bin_count=args.bins)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.plot is not None and result.games:
        from rating_plugin.analysis.plot import calibration_plot

        calibration_plot(result, args.plot)
    elif args.plot is not None:
        print(f"no plot written to {args.plot}: no games", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0 if result.games else 1
    unit = "scale (difference x sqrt(n))" if args.ladder == "fibs" else "divisor"
    name = "FIBS" if args.ladder == "fibs" else "Table42"
    fit = result.fit
    left_out = f", {result.left_out} left out (--min-games)" if result.left_out else ""
    heading = (f"{name} calibration: {result.games} games{left_out}; current {unit} "
               f"{_divisor(result.current.divisor)}")
    if not result.games:
        # Nothing was fitted: no table of empty bins and undefined scores.
        print(heading)
        return 1
    lines = [
        heading,
        f"fitted {unit}: {_divisor(fit.divisor)} (95% interval {_divisor(fit.low)} to "
        f"{_divisor(fit.high)})",
        "",
        f"{'favourite leads by':<20}{'games':>9}{'expected':>10}{'fitted':>9}{'actual':>9}"
        "  (95% interval)",
    ]
    for b in result.bins:
        span = f"{b.low:g}+" if math.isinf(b.high) else f"{b.low:g} to <{b.high:g}"
        mark = " *" if b.is_thin else ""
        lines.append(
            f"{span:<20}{b.games:>9}{_percent(b.expected):>10}{_percent(b.fitted):>9}"
            f"{_percent(b.actual):>9}  ({_percent(b.actual_low)} to "
            f"{_percent(b.actual_high)}){mark}"
        )
    lines += [
        "",
        f"{'':<22}{'log-loss':>10}{'Brier':>9}",
        f"{'current ' + _divisor(result.current.divisor):<22}{result.current.log_loss:>10.4f}"
        f"{result.current.brier:>9.4f}",
        f"{'fitted ' + _divisor(result.fitted.divisor):<22}{result.fitted.log_loss:>10.4f}"
        f"{result.fitted.brier:>9.4f}",
    ]
    if args.plot is not None and result.games:
        lines.append(f"\nplot written to {args.plot}")
    print("\n".join(lines))
    return 0


def _check_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        raise CommandError(
            "--plot needs matplotlib, which is not installed: pip install -e '.[analysis]' "
            "(or pip install matplotlib)"
        ) from None


# -- replay -------------------------------------------------------------------------------------


def _rules(args: argparse.Namespace) -> tuple[Any, Any]:
    from rating_plugin.analysis.replay import Rules
    from rating_plugin.table42 import CubeRule

    baseline = Rules.current(late_grace=args.late_grace)
    overrides: dict[str, Any] = {"late_grace": args.late_grace}
    if args.divisor is not None:
        overrides["divisor"] = args.divisor
    if args.k is not None:
        overrides["k"] = args.k
    if args.heavy_k is not None:
        overrides["heavy_k"] = args.heavy_k
    if args.heavy_games is not None:
        overrides["heavy_games"] = None if args.heavy_games == 0 else args.heavy_games
    if args.cube_rule is not None:
        overrides["cube_rule"] = CubeRule(args.cube_rule)
    if args.window_days is not None:
        overrides["window_seconds"] = round_half_away(args.window_days * 86400)
    if args.no_podium:
        overrides["podium"] = False
    if args.fibs_scale is not None:
        overrides["fibs_scale"] = args.fibs_scale
    what_if = Rules.from_version(args.version, **overrides)
    return baseline, what_if


def _replay(args: argparse.Namespace) -> int:
    from rating_plugin.analysis.replay import Replayer, compare, mismatch

    baseline_rules, what_if_rules = _rules(args)
    baseline = Replayer(baseline_rules)
    what_if = Replayer(what_if_rules)
    counts = {"table42": 0, "fibs": 0, "podium": 0}
    problems: list[str] = []
    mismatches = [0]

    def take(record: LogRecord) -> None:
        done = baseline.apply(record)
        what_if.apply(record)
        counts["podium" if isinstance(record, gamelog.PodiumRecord) else record.ladder] += 1
        if args.check:
            problem = mismatch(record, done)
            if problem is not None:
                mismatches[0] += 1
                if len(problems) < 5:
                    problems.append(problem)

    _each_record(args, ("table42", "fibs") if args.ladder == "all" else (args.ladder,), take)
    ladder = args.ladder if args.ladder != "all" else (
        "fibs" if counts["fibs"] and not counts["table42"] else "table42"
    )
    result = compare(baseline, what_if, ladder=ladder, active_days=args.active_days,
                     top=args.top)
    if args.out is not None:
        with _output(args.out) as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(["player", "rating", "rank", "what_if_rating", "what_if_rank"])
            for m in result.movers:
                writer.writerow([m.player, m.rating, m.rank, m.what_if_rating, m.what_if_rank])
    if result.active and result.active < 30:
        print(f"warning: only {result.active} active players: the spread figures are rough",
              file=sys.stderr)
    if args.json:
        data = {
            "records": counts,
            "baseline_rules": baseline_rules.describe(),
            "what_if_rules": what_if_rules.describe(),
            "check": None if not args.check else {"mismatches": mismatches[0],
                                                   "first": problems},
            "comparison": _comparison_dict(result),
        }
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(_replay_lines(args, counts, baseline_rules, what_if_rules, result,
                                      mismatches[0], problems)))
    if args.check and not sum(counts.values()):
        raise CommandError(
            "replay --check: the log holds no records, so nothing was checked", status=1
        )
    if args.check and mismatches[0]:
        raise CommandError(
            f"replay --check: {mismatches[0]} record(s) not reproduced; first: {problems[0]}",
            status=1,
        )
    return 0


def _comparison_dict(result: Any) -> dict[str, Any]:
    from dataclasses import asdict

    data = asdict(result)
    data.pop("movers")
    return data


def _replay_lines(args: argparse.Namespace, counts: dict[str, int], baseline: Any,
                  what_if: Any, result: Any, mismatches: int, problems: list[str]) -> list[str]:
    total = sum(counts.values())
    lines = [
        f"replayed {total} records (table42 {counts['table42']}, fibs {counts['fibs']}, "
        f"podium {counts['podium']}) in applied order, late_grace {args.late_grace:g} s",
        f"  baseline (current): {baseline.describe()}",
        f"  what-if:            {what_if.describe()}",
    ]
    if args.ladder == "fibs" or result.ladder == "fibs":
        lines.append(f"  FIBS scale {baseline.fibs_scale:g} -> {what_if.fibs_scale:g}")
    if args.check:
        lines.append(
            "  check: NOTHING checked (no records)" if not total
            else "  check: every logged number reproduced" if not mismatches
            else f"  check: {mismatches} record(s) NOT reproduced, first: {problems[0]}"
        )
    b, w = result.baseline, result.what_if
    lines += [
        "",
        f"{result.ladder} leaderboard: {result.players} players, {result.active} active "
        f"(played in the last {args.active_days:g} days)",
        f"  {'active players':<34}{'baseline':>10}{'what-if':>10}",
        f"  {'half are within +/- (points)':<34}{b.half_within:>10.1f}{w.half_within:>10.1f}",
        f"  {'middle half spans (IQR)':<34}{b.iqr:>10.1f}{w.iqr:>10.1f}",
        f"  {'standard deviation':<34}{b.sd:>10.1f}{w.sd:>10.1f}",
        f"  {'median':<34}{b.median:>10.1f}{w.median:>10.1f}",
        f"  {'lowest':<34}{b.low:>10.1f}{w.low:>10.1f}",
        f"  {'highest':<34}{b.high:>10.1f}{w.high:>10.1f}",
        "",
        f"rank changed for {result.changed_rank} of {result.players} players (mean "
        f"{result.mean_rank_change:.1f} places), Spearman rank correlation "
        f"{result.rank_correlation:.4f}",
    ]

    def rows(title: str, movers: tuple[Any, ...]) -> None:
        if not movers:
            return
        lines.extend(["", title,
                      f"  {'player':<20}{'rank':>6}{'rating':>10}{'what-if':>10}{'rank':>6}"
                      f"{'moved':>7}"])
        for m in movers:
            lines.append(
                f"  {m.player[:20]:<20}{m.rank:>6}{m.rating:>10.6g}{m.what_if_rating:>10.6g}"
                f"{m.what_if_rank:>6}{m.moved:>+7}"
            )

    rows(f"top {len(result.top)} (baseline order)", result.top)
    rows("biggest risers", result.risers)
    rows("biggest fallers", result.fallers)
    return lines

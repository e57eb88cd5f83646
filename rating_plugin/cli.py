"""Command-line rating calculator: ``python -m rating_plugin`` or ``table42-rating``.

One subcommand per rating system (``table42``, ``fibs``, ``elo``) computes one result: the
expected score, the rating change and the new rating; ``stakes`` shows what both players of a
pairing win or lose before they play. ``--json`` prints the same as a JSON object. Bad input
prints one line on stderr and exits with status 2.

The analysis commands work on the log of settled games: ``export`` writes it from the store,
``synth`` draws a synthetic one, ``calibrate`` fits the curve's divisor to it and ``replay``
recomputes every rating under other rules. Their work lives in
:mod:`rating_plugin.analysis.commands`, imported only when one of them runs; a module of the
``analysis`` extra that is not installed (numpy, tqdm, matplotlib) is named in a one-line
error that says how to install it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from rating_plugin import elo, fibs, stakes, table42
from rating_plugin.errors import RatingError
from rating_plugin.stakes import PlayerStake, StakePreview

__all__ = ["CalculatorInputError", "calculate", "main"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
"""Ctrl-C ended a command before it was done (128 + SIGINT, as shells report it)."""

DESCRIPTION = """\
Rating calculator for backgammon and chess-style games.

Give your rating, your opponent's rating and the result; it prints your expected score (your
chance to win, 0 to 1), how many points you win or lose, and your new rating.

rating systems:
  table42   Table42 Elo, ranked single games: integer ratings from 1500, the doubling cube
            scales the change (x1 at cube 1 up to x2 at cube 64), K is 32, or 16 after 50+
            ranked games in the last 7 days. Formula versions: 1.3.1 (current), 1.2.0,
            1.0.5, pre-1.0.5.
  fibs      FIBS rating, n-point matches: longer matches move ratings more; new players
            (experience under 400 match points) move up to 5 times faster.
  elo       classic Elo as in chess, with draws: pick K yourself or a preset (FIDE rules).
  stakes    before a game: what each player wins or loses, under any of the systems.

analysis of the settled games (docs/calibration.md):
  export    write the store's settled games, in applied order, as JSON Lines or CSV.
  synth     generate a synthetic game log with known true skill.
  calibrate fit the curve's divisor to the games: does the formula match the dice?
  replay    recompute every rating under other rules: how would the leaderboard differ?

Run "%(prog)s SYSTEM --help" for the options of each system."""

EPILOG = """\
examples:
  %(prog)s table42 1500 1800 --result win
  %(prog)s table42 1500 1800 --result loss --cube 4 --recent-games 60
  %(prog)s table42 1500 1800 --result win --version 1.2.0
  %(prog)s fibs 1500 1620.5 --result win --length 5 --experience 150
  %(prog)s elo 1500 1600 --result win --k 32
  %(prog)s elo 2350 2100 --result draw --preset fide --games 120
  %(prog)s stakes table42 1500 1800 --cube 2
  %(prog)s table42 1500 1800 --result win --json
  %(prog)s synth --games 100000 --out games.jsonl
  %(prog)s calibrate games.jsonl --plot calibration.png
  %(prog)s replay games.jsonl --version 1.2.0
  %(prog)s export --redis-url redis://127.0.0.1:6379/0 --prefix t42: --out games.jsonl"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class CalculatorInputError(ValueError):
    """:func:`calculate` was given arguments the command line would refuse (the message is
    the command line's own)."""


class _RaisingParser(_Parser):
    """The same parser for :func:`calculate`: an error raises instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise CalculatorInputError(message)


# -- argument types ---------------------------------------------------------------------------


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 30 else text[:27] + "...")


def _rating(text: str) -> float:
    try:
        value: float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {_quoted(text)}") from None
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise argparse.ArgumentTypeError(f"must be a finite number, got {_quoted(text)}")
    return value


def _whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {_quoted(text)}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "whole number"
    return parse


def _positive(text: str) -> float:
    value = _rating(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {_quoted(text)}")
    return value


def _fraction(text: str) -> float:
    value = _rating(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {_quoted(text)}")
    return value


def _non_negative(text: str) -> float:
    value = _rating(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {_quoted(text)}")
    return value


def _cube(text: str) -> int:
    value = _whole(1)(text)
    if value not in table42.CUBE_VALUES:
        allowed = ", ".join(map(str, table42.CUBE_VALUES))
        raise argparse.ArgumentTypeError(f"must be one of {allowed}, got {_quoted(text)}")
    return value


# -- formatting -------------------------------------------------------------------------------


def _number(value: float) -> str:
    """Integers as they are, anything else with 2 decimals."""
    if isinstance(value, int):
        return str(value)
    return f"{value:.2f}"


def _signed(value: float) -> str:
    text = _number(value)
    return text if text.startswith("-") else f"+{text}"


def _percent(chance: float) -> str:
    return f"{chance * 100:.1f}%"


# -- subcommands ------------------------------------------------------------------------------


def _add_common(parser: argparse.ArgumentParser, *, draws: bool) -> None:
    parser.add_argument("rating", type=_rating, metavar="RATING", help="your current rating")
    parser.add_argument(
        "opponent", type=_rating, metavar="OPPONENT", help="your opponent's current rating"
    )
    results = ["win", "draw", "loss"] if draws else ["win", "loss"]
    parser.add_argument(
        "--result",
        required=True,
        choices=results,
        help="how the game ended for you: " + ", ".join(results),
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object instead")


def _add_table42_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cube",
        type=_cube,
        default=1,
        metavar="N",
        help="the doubling cube when the game ended: 1, 2, 4, 8, 16, 32 or 64 (default 1)",
    )
    mine = parser.add_mutually_exclusive_group()
    mine.add_argument(
        "--k",
        type=_whole(1),
        metavar="K",
        help="your K factor (default 32, or from --recent-games)",
    )
    mine.add_argument(
        "--recent-games",
        type=_whole(0),
        metavar="N",
        help="your ranked games in the 7 days before this one; 50 or more makes K 16",
    )
    theirs = parser.add_mutually_exclusive_group()
    theirs.add_argument(
        "--opponent-k",
        type=_whole(1),
        metavar="K",
        help="your opponent's K factor (default 32, or from --opponent-recent-games)",
    )
    theirs.add_argument(
        "--opponent-recent-games",
        type=_whole(0),
        metavar="N",
        help="your opponent's ranked games in the 7 days before this one",
    )
    parser.add_argument(
        "--version",
        choices=list(table42.VERSIONS),
        default=table42.CURRENT_VERSION.name,
        help="formula version: 1.3.1 (current, divisor 1200), 1.2.0 (divisor 800), 1.0.5 "
        "(divisor 400), pre-1.0.5 (divisor 400, the cube multiplies the change)",
    )


def _add_fibs_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--length",
        type=_whole(1),
        default=1,
        metavar="N",
        help="the match length in points (default 1)",
    )
    parser.add_argument(
        "--experience",
        type=_whole(0),
        default=fibs.ESTABLISHED_EXPERIENCE,
        metavar="N",
        help="your experience: the total length of your finished rated matches; below 400 "
        "your change is multiplied by up to 5 (default 400, multiplier 1)",
    )
    parser.add_argument(
        "--opponent-experience",
        type=_whole(0),
        default=fibs.ESTABLISHED_EXPERIENCE,
        metavar="N",
        help="your opponent's experience (default 400)",
    )


def _add_elo_k(parser: argparse.ArgumentParser, *, fide: bool) -> None:
    presets = ", ".join(f"{name} ({k})" for name, k in elo.K_PRESETS.items())
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--k", type=_positive, metavar="K", help="your K factor (default 32)")
    choices = [*elo.K_PRESETS, "fide"] if fide else list(elo.K_PRESETS)
    preset_help = f"a K preset: {presets}"
    if fide:
        preset_help += (
            "; fide applies FIDE's rules (K 40 for your first 30 games and for juniors under "
            "2300, 10 once you reached 2400, 20 otherwise; differences over 400 count as 400)"
        )
    group.add_argument("--preset", choices=choices, help=preset_help)


def _table42_ks(args: argparse.Namespace) -> tuple[int, int]:
    version = args.version

    def k_of(k: int | None, games: int | None) -> int:
        if k is not None:
            return k
        if games is not None:
            return table42.k_factor(games, version=version)
        return table42.DEFAULT_K

    return k_of(args.k, args.recent_games), k_of(args.opponent_k, args.opponent_recent_games)


def _run_table42(args: argparse.Namespace) -> tuple[dict[str, object], list[str]]:
    k, opponent_k = _table42_ks(args)
    won = args.result == "win"
    if won:
        result = table42.change(
            args.rating,
            args.opponent,
            cube=args.cube,
            winner_k=k,
            loser_k=opponent_k,
            version=args.version,
        )
        mine, theirs, expected = result.winner, result.loser, result.winner_expected
    else:
        result = table42.change(
            args.opponent,
            args.rating,
            cube=args.cube,
            winner_k=opponent_k,
            loser_k=k,
            version=args.version,
        )
        mine, theirs, expected = result.loser, result.winner, result.loser_expected
    data: dict[str, object] = {
        "system": "table42",
        "version": args.version,
        "result": args.result,
        "rating": args.rating,
        "opponent": args.opponent,
        "cube": args.cube,
        "coefficient": result.coefficient,
        "k": k,
        "opponent_k": opponent_k,
        "expected_score": expected,
        "change": mine,
        "new_rating": args.rating + mine,
        "opponent_change": theirs,
        "opponent_new_rating": args.opponent + theirs,
    }
    verb = "wins against" if won else "loses to"
    lines = [
        f"Table42 Elo {args.version}: {_number(args.rating)} {verb} {_number(args.opponent)} "
        f"at cube {args.cube} (coefficient {result.coefficient:.2f})",
        f"  expected score  {expected:.4f}  ({_percent(expected)} to win)",
        f"  change          {_signed(mine)}  (K {k})",
        f"  new rating      {_number(args.rating + mine)}",
        f"  opponent        {_signed(theirs)} -> {_number(args.opponent + theirs)}  "
        f"(K {opponent_k})",
    ]
    return data, lines


def _run_fibs(args: argparse.Namespace) -> tuple[dict[str, object], list[str]]:
    won = args.result == "win"
    if won:
        result = fibs.change(
            args.rating,
            args.opponent,
            match_length=args.length,
            winner_experience=args.experience,
            loser_experience=args.opponent_experience,
        )
        mine, theirs = result.winner, result.loser
        multiplier, opponent_multiplier = result.winner_multiplier, result.loser_multiplier
        expected = result.winner_probability
    else:
        result = fibs.change(
            args.opponent,
            args.rating,
            match_length=args.length,
            winner_experience=args.opponent_experience,
            loser_experience=args.experience,
        )
        mine, theirs = result.loser, result.winner
        multiplier, opponent_multiplier = result.loser_multiplier, result.winner_multiplier
        expected = 1 - result.winner_probability
    data: dict[str, object] = {
        "system": "fibs",
        "result": args.result,
        "rating": args.rating,
        "opponent": args.opponent,
        "match_length": args.length,
        "experience": args.experience,
        "opponent_experience": args.opponent_experience,
        "multiplier": multiplier,
        "opponent_multiplier": opponent_multiplier,
        "expected_score": expected,
        "change": mine,
        "new_rating": args.rating + mine,
        "opponent_change": theirs,
        "opponent_new_rating": args.opponent + theirs,
    }
    verb = "wins against" if won else "loses to"
    lines = [
        f"FIBS rating: {args.rating:.2f} {verb} {args.opponent:.2f} in a match to {args.length}",
        f"  expected score  {expected:.4f}  ({_percent(expected)} to win)",
        f"  change          {_signed(float(mine))}  (multiplier {multiplier:g})",
        f"  new rating      {args.rating + mine:.2f}",
        f"  opponent        {_signed(float(theirs))} -> {args.opponent + theirs:.2f}  "
        f"(multiplier {opponent_multiplier:g})",
    ]
    return data, lines


_SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def _run_elo(args: argparse.Namespace) -> tuple[dict[str, object], list[str]]:
    score = _SCORES[args.result]
    if args.preset == "fide":
        if args.games is None:
            args.parser.error("--games is required with --preset fide (your rated games so far)")
        update = elo.fide_update(
            args.rating,
            args.opponent,
            score,
            rated_games=args.games,
            is_junior=args.junior,
            has_reached_2400=args.reached_2400,
        )
        rule = f"FIDE rules, K {update.k:g}"
    else:
        if args.games is not None or args.junior or args.reached_2400:
            args.parser.error("--games, --junior and --reached-2400 go with --preset fide")
        k = elo.K_PRESETS[args.preset] if args.preset else (args.k or elo.K_PRESETS["amateur"])
        update = elo.update(args.rating, args.opponent, score, k)
        rule = f"K {update.k:g}"
    data: dict[str, object] = {
        "system": "elo",
        "result": args.result,
        "score": score,
        "rating": args.rating,
        "opponent": args.opponent,
        "k": update.k,
        "preset": args.preset,
        "expected_score": update.expected_score,
        "change": update.change,
        "new_rating": update.new_rating,
    }
    verb = {"win": "beats", "draw": "draws with", "loss": "loses to"}[args.result]
    lines = [
        f"Classic Elo ({rule}): {_number(args.rating)} {verb} {_number(args.opponent)}",
        f"  expected score  {update.expected_score:.4f}",
        f"  change          {_signed(update.change)}",
        f"  new rating      {update.new_rating:.2f}",
    ]
    return data, lines


def _stake_lines(preview: StakePreview, title: str) -> list[str]:
    has_draw = preview.player.draw is not None
    header = f"  {'':<9}{'rating':>9}{'expected':>10}{'win':>9}"
    header += f"{'draw':>9}" if has_draw else ""
    header += f"{'loss':>9}"

    def row(name: str, stake: PlayerStake) -> str:
        line = f"  {name:<9}{_number(stake.rating):>9}{stake.expected_score:>10.4f}"
        line += f"{_signed(stake.win):>9}"
        if stake.draw is not None:
            line += f"{_signed(stake.draw):>9}"
        return line + f"{_signed(stake.loss):>9}"

    return [title, header, row("you", preview.player), row("opponent", preview.opponent)]


def _run_stakes(args: argparse.Namespace) -> tuple[dict[str, object], list[str]]:
    preview: StakePreview
    if args.system == "table42":
        k, opponent_k = _table42_ks(args)
        preview = stakes.table42_stakes(
            args.rating,
            args.opponent,
            cube=args.cube,
            k=k,
            opponent_k=opponent_k,
            version=args.version,
        )
        title = (
            f"Table42 Elo {args.version} stakes at cube {args.cube} "
            f"(coefficient {preview.coefficient:.2f}), K {k} / {opponent_k}"
        )
    elif args.system == "fibs":
        preview = stakes.fibs_stakes(
            args.rating,
            args.opponent,
            match_length=args.length,
            experience=args.experience,
            opponent_experience=args.opponent_experience,
        )
        title = (
            f"FIBS stakes in a match to {args.length}, multipliers "
            f"{preview.player.multiplier:g} / {preview.opponent.multiplier:g}"
        )
    else:
        k = elo.K_PRESETS[args.preset] if args.preset else (args.k or elo.K_PRESETS["amateur"])
        opponent_k = args.opponent_k if args.opponent_k is not None else k
        preview = stakes.elo_stakes(
            args.rating,
            args.opponent,
            k=k,
            opponent_k=opponent_k,
            max_difference=args.max_difference,
        )
        title = f"Classic Elo stakes, K {k:g} / {opponent_k:g}"
        if args.max_difference is not None:
            title += f", differences capped at {args.max_difference:g}"
    return preview.to_dict(), _stake_lines(preview, title)


# -- parser -----------------------------------------------------------------------------------


def build_parser(
    prog: str | None = None, *, parser_class: type[_Parser] = _Parser
) -> argparse.ArgumentParser:
    """The calculator's argument parser (``prog`` names the program in help and errors)."""
    formatter = argparse.RawDescriptionHelpFormatter
    parser = parser_class(
        prog=prog, description=DESCRIPTION, epilog=EPILOG, formatter_class=formatter
    )
    systems = parser.add_subparsers(
        title="subcommands", dest="command", metavar="SYSTEM", required=True
    )

    t42 = systems.add_parser(
        "table42",
        help="Table42 Elo: one ranked single game",
        description="Table42 Elo for one ranked single game. The change is rounded half away\n"
        "from zero; each player has their own K.",
        epilog="examples:\n  %(prog)s 1500 1800 --result win\n"
        "  %(prog)s 1500 1800 --result loss --cube 4 --recent-games 60\n"
        "  %(prog)s 1500 1500 --result win --k 16 --opponent-k 32",
        formatter_class=formatter,
    )
    _add_common(t42, draws=False)
    _add_table42_options(t42)
    t42.set_defaults(run=_run_table42, parser=t42)

    fibs_parser = systems.add_parser(
        "fibs",
        help="FIBS rating: one n-point match",
        description="FIBS rating for one n-point match. Ratings keep their decimals.",
        epilog="examples:\n  %(prog)s 1500 1600 --result win --length 5\n"
        "  %(prog)s 1500 1500 --result win --length 1 --experience 150",
        formatter_class=formatter,
    )
    _add_common(fibs_parser, draws=False)
    _add_fibs_options(fibs_parser)
    fibs_parser.set_defaults(run=_run_fibs, parser=fibs_parser)

    elo_parser = systems.add_parser(
        "elo",
        help="classic Elo: one game, draws allowed",
        description="Classic (chess) Elo for one game; nothing is rounded.",
        epilog="examples:\n  %(prog)s 1500 1600 --result win --k 32\n"
        "  %(prog)s 1500 1600 --result draw --preset standard\n"
        "  %(prog)s 2450 2000 --result loss --preset fide --games 300",
        formatter_class=formatter,
    )
    _add_common(elo_parser, draws=True)
    _add_elo_k(elo_parser, fide=True)
    elo_parser.add_argument(
        "--games", type=_whole(0), metavar="N", help="with --preset fide: your rated games so far"
    )
    elo_parser.add_argument(
        "--junior", action="store_true", help="with --preset fide: you are a junior (under 18)"
    )
    elo_parser.add_argument(
        "--reached-2400",
        action="store_true",
        help="with --preset fide: your rating has reached 2400 before",
    )
    elo_parser.set_defaults(run=_run_elo, parser=elo_parser)

    stakes_parser = systems.add_parser(
        "stakes",
        help="what each player wins or loses before a game",
        description="Before a game: what each player of a pairing wins or loses.\n"
        'Run "%(prog)s SYSTEM --help" for the options of each system.',
        epilog="examples:\n  %(prog)s table42 1500 1800\n"
        "  %(prog)s table42 1500 1800 --cube 4 --k 16\n"
        "  %(prog)s fibs 1500 1600 --length 7 --experience 40\n"
        "  %(prog)s elo 1500 1600 --k 20",
        formatter_class=formatter,
    )
    kinds = stakes_parser.add_subparsers(
        title="systems", dest="system", metavar="SYSTEM", required=True
    )
    for name, add_options, summary in (
        ("table42", _add_table42_options, "Table42 Elo stakes of a single game"),
        ("fibs", _add_fibs_options, "FIBS stakes of an n-point match"),
        ("elo", None, "classic Elo stakes (win, draw, loss)"),
    ):
        sub = kinds.add_parser(name, help=summary, description=summary)
        sub.add_argument("rating", type=_rating, metavar="RATING", help="your current rating")
        sub.add_argument(
            "opponent", type=_rating, metavar="OPPONENT", help="your opponent's current rating"
        )
        sub.add_argument("--json", action="store_true", help="print a JSON object instead")
        if add_options is not None:
            add_options(sub)
        else:
            _add_elo_k(sub, fide=False)
            sub.add_argument(
                "--opponent-k",
                type=_positive,
                metavar="K",
                help="your opponent's K (default: yours)",
            )
            sub.add_argument(
                "--max-difference",
                type=_positive,
                metavar="POINTS",
                help="count a larger rating difference as this many points (FIDE: 400)",
            )
        sub.set_defaults(run=_run_stakes, parser=sub)
    _add_analysis(systems, formatter)
    return parser


@functools.cache
def _calculator_parser() -> argparse.ArgumentParser:
    """Built once: parsing does not change a parser, and building one costs a millisecond."""
    return build_parser("calculator", parser_class=_RaisingParser)


def calculate(argv: Sequence[str]) -> dict[str, object]:
    """What ``--json`` would print for ``argv`` (without ``--json``), as a dict: the HTTP
    calculator's answer is the command line's, by construction. Bad arguments raise
    :class:`CalculatorInputError` (nothing is printed, nothing exits)."""
    args = _calculator_parser().parse_args(list(argv))
    run: Callable[[argparse.Namespace], tuple[dict[str, object], list[str]]] = args.run
    try:
        data, _ = run(args)
    except RatingError as error:
        raise CalculatorInputError(str(error)) from error
    return data
_DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
_GRACE_HELP = (
    "the store's late_grace in seconds (default 86400, the store's default): how much "
    "older than a player's newest game a settlement may be and still count its 7-day window "
    "exactly; the replay trims windows by the same rule"
)


def _add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "log", nargs="?", metavar="LOG",
        help="the game log: a JSON Lines file (.jsonl; - for stdin) or CSV (.csv), as "
        "export or synth write it",
    )
    parser.add_argument(
        "--redis-url", metavar="URL",
        help=f"read the settled games straight from the store instead (e.g. {_DEFAULT_REDIS})",
    )
    parser.add_argument("--prefix", default="", help="the store's key prefix (default none)")
    parser.add_argument(
        "--format", choices=["jsonl", "csv"], help="the log's format (default: from the name)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_analysis(systems: Any, formatter: type[argparse.HelpFormatter]) -> None:
    export = systems.add_parser(
        "export",
        help="write the store's settled games as JSON Lines or CSV",
        description="Write the settled games of the store, each ladder in applied order\n"
        "(Table42 with its podium awards, then FIBS), with pre-game ratings, K, cube,\n"
        "experience and result. Streamed: memory stays that of one batch.",
        epilog="examples:\n"
        "  %(prog)s --redis-url redis://127.0.0.1:6379/0 --prefix t42: --out games.jsonl\n"
        "  %(prog)s --prefix t42: --ladder fibs --out fibs.csv",
        formatter_class=formatter,
    )
    export.add_argument("--redis-url", metavar="URL",
                        help="the store's Redis (default: the running embedded store of "
                        f"--data-dir when there is one, else {_DEFAULT_REDIS})")
    export.add_argument("--data-dir", metavar="DIR",
                        help="the data folder of python -m server's embedded store (default "
                        "$TABLE42_DATA_DIR, else ~/.local/share/table42)")
    export.add_argument("--prefix", default=None,
                        help="the store's key prefix (default none; t42:, the server's, "
                        "for the embedded store)")
    export.add_argument("--ladder", choices=["table42", "fibs", "all"], default="all",
                        help="which ladder (default all)")
    export.add_argument("--out", default="-", metavar="PATH",
                        help="output file (default stdout); .csv writes CSV")
    export.add_argument("--format", choices=["jsonl", "csv"],
                        help="jsonl or csv (default: from --out)")
    export.add_argument("--batch", type=_whole(1), default=1000, metavar="N",
                        help="records per round trip (1..10000, default 1000)")
    export.set_defaults(tool="export", parser=export)

    synth = systems.add_parser(
        "synth",
        help="generate a synthetic game log with known true skill",
        description="Generate a game log with known true skill: winners drawn from the curve\n"
        "with the given divisor, cubes, heavy-week players, late settlements and podiums.\n"
        "Pre-game ratings are those the live rules give (--ratings replayed) or the true\n"
        "skills (--ratings skill: perfectly settled ratings, so calibrate recovers the\n"
        "divisor).",
        epilog="examples:\n  %(prog)s --games 100000 --divisor 800 --out games.jsonl\n"
        "  %(prog)s --games 20000 --ladder fibs --ratings skill --out fibs.jsonl",
        formatter_class=formatter,
    )
    synth.add_argument("--games", type=_whole(0), required=True, metavar="N",
                       help="how many games (up to 100,000,000)")
    synth.add_argument("--players", type=_whole(2), default=200, metavar="N",
                       help="how many players (default 200)")
    synth.add_argument("--ladder", choices=["table42", "fibs"], default="table42",
                       help="table42 single games or fibs matches (default table42)")
    synth.add_argument("--divisor", type=_positive, metavar="D",
                       help="the true curve's divisor (default 1200; FIBS: the scale, 2000)")
    synth.add_argument("--skill-sd", type=_non_negative, default=150.0, metavar="POINTS",
                       help="spread of true skills around 1500 (default 150)")
    synth.add_argument("--heavy-share", type=_fraction, default=0.05, metavar="F",
                       help="share of heavy-week players (default 0.05)")
    synth.add_argument("--heavy-weight", type=_positive, default=20.0, metavar="X",
                       help="how many times more often they play (default 20)")
    synth.add_argument("--days", type=_positive, default=30.0, metavar="DAYS",
                       help="span of the finish times (default 30)")
    synth.add_argument("--late-share", type=_fraction, default=0.0, metavar="F",
                       help="share of games settled late (default 0)")
    synth.add_argument("--late-seconds", type=_non_negative, default=3600.0, metavar="S",
                       help="how late at most, in seconds (default 3600)")
    synth.add_argument("--podium-every", type=_whole(0), default=0, metavar="N",
                       help="a podium award (+50/+25/+15) after every N games (default none)")
    synth.add_argument("--ratings", choices=["replayed", "skill"], default="replayed",
                       help="pre-game ratings: replayed by the live rules (default) or the "
                       "true skills")
    synth.add_argument("--late-grace", type=_non_negative, default=86400.0, metavar="S",
                       help=_GRACE_HELP)
    synth.add_argument("--seed", type=_whole(0), default=1, metavar="N",
                       help="random seed (default 1)")
    synth.add_argument("--out", default="-", metavar="PATH",
                       help="output file (default stdout); .csv writes CSV")
    synth.add_argument("--format", choices=["jsonl", "csv"],
                       help="jsonl or csv (default: from --out)")
    synth.add_argument("--no-progress", action="store_true", help="no progress bar")
    synth.set_defaults(tool="synth", parser=synth)

    calibrate = systems.add_parser(
        "calibrate",
        help="fit the curve's divisor to the settled games",
        description="Fit the divisor of the win-chance curve to the settled games by maximum\n"
        "likelihood, with a 95% interval (FIBS: the scale on difference x sqrt(n)); print\n"
        "expected and actual win rates by rating difference, and log-loss and Brier score\n"
        "under the current and the fitted divisor. Warns when the data cannot support the\n"
        "answer.",
        epilog="examples:\n  %(prog)s games.jsonl\n"
        "  %(prog)s games.jsonl --min-games 20 --plot calibration.png\n"
        "  %(prog)s --redis-url redis://127.0.0.1:6379/0 --prefix t42: --ladder fibs --json",
        formatter_class=formatter,
    )
    _add_source(calibrate)
    calibrate.add_argument("--ladder", choices=["table42", "fibs"], default="table42",
                           help="which ladder's games (default table42)")
    calibrate.add_argument("--divisor", type=_positive, metavar="D",
                           help="the divisor in use (default 1200; FIBS: the scale, 2000)")
    calibrate.add_argument("--min-games", type=_whole(0), default=0, metavar="N",
                           help="leave out games where a player had fewer than N earlier "
                           "games (FIBS: less experience)")
    calibrate.add_argument("--bin-width", type=_positive, default=50.0, metavar="POINTS",
                           help="width of the rating-difference bins (default 50)")
    calibrate.add_argument("--bins", type=_whole(1), default=12, metavar="N",
                           help="number of bins; the last takes every larger lead (default 12)")
    calibrate.add_argument("--plot", metavar="PNG",
                           help="draw the calibration plot to this PNG (needs matplotlib: "
                           "pip install -e '.[analysis]')")
    calibrate.add_argument("--json", action="store_true", help="print a JSON object instead")
    calibrate.set_defaults(tool="calibrate", parser=calibrate)

    replay = systems.add_parser(
        "replay",
        help="recompute every rating under other rules",
        description="Recompute every rating from the game log under the current rules and\n"
        "under other ones (a preset and/or parameters), without touching the store, and\n"
        "show how the leaderboard would differ: rank changes and the spread of ratings.\n"
        "--check verifies that the current rules reproduce every logged number.",
        epilog="examples:\n  %(prog)s games.jsonl --version 1.2.0\n"
        "  %(prog)s games.jsonl --divisor 800 --heavy-games 0\n"
        "  %(prog)s --redis-url redis://127.0.0.1:6379/0 --check",
        formatter_class=formatter,
    )
    _add_source(replay)
    replay.add_argument("--ladder", choices=["table42", "fibs", "all"], default="table42",
                        help="which leaderboard to compare (default table42); with "
                        "--redis-url also which ladders to read (all: both, comparing "
                        "Table42)")
    replay.add_argument("--version", choices=["1.3.1", "1.2.0", "1.0.5", "pre-1.0.5"],
                        default="1.3.1", help="the what-if Table42 preset (default 1.3.1)")
    replay.add_argument("--divisor", type=_positive, metavar="D", help="what-if divisor")
    replay.add_argument("--k", type=_whole(1), metavar="K", help="what-if K (default 32)")
    replay.add_argument("--heavy-k", type=_whole(1), metavar="K",
                        help="what-if K after a heavy week (default 16)")
    replay.add_argument("--heavy-games", type=_whole(0), metavar="N",
                        help="what-if heavy-week threshold (default 50; 0: no heavy-week rule)")
    replay.add_argument("--cube-rule", choices=["coefficient", "multiply"],
                        help="what-if cube rule: 1 + log2(cube)/6, or the cube itself")
    replay.add_argument("--window-days", type=_positive, metavar="DAYS",
                        help="what-if heavy-week window (default 7)")
    replay.add_argument("--no-podium", action="store_true", help="what-if: no podium prizes")
    replay.add_argument("--fibs-scale", type=_positive, metavar="S",
                        help="what-if FIBS scale (default 2000)")
    replay.add_argument("--late-grace", type=_non_negative, default=86400.0, metavar="S",
                        help=_GRACE_HELP)
    replay.add_argument("--check", action="store_true",
                        help="fail (exit 1) unless the current rules reproduce every logged "
                        "rating, K, window count and experience")
    replay.add_argument("--active-days", type=_positive, default=30.0, metavar="DAYS",
                        help="active players played in the log's last DAYS days (default 30)")
    replay.add_argument("--top", type=_whole(0), default=10, metavar="N",
                        help="rows of the top, risers and fallers tables (default 10)")
    replay.add_argument("--out", metavar="CSV",
                        help="write every player's rating and rank under both rules")
    replay.add_argument("--json", action="store_true", help="print a JSON object instead")
    replay.set_defaults(tool="replay", parser=replay)


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run the calculator on ``argv`` (default ``sys.argv[1:]``) and return 0.

    Prints the result on stdout (text, or JSON with ``--json``). Bad input prints one line
    on stderr and raises ``SystemExit(2)``, as argparse does; ``--help`` raises
    ``SystemExit(0)``.
    """
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if getattr(args, "tool", None) is not None:
        return _run_tool(args)
    run: Callable[[argparse.Namespace], tuple[dict[str, object], list[str]]] = args.run
    try:
        data, lines = run(args)
    except RatingError as error:  # the engine's own checks, should the parser miss one
        args.parser.error(str(error))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(lines))
    return 0


#: The modules of the ``analysis`` extra (pyproject.toml) the analysis commands import.
_ANALYSIS_EXTRA = frozenset({"numpy", "tqdm", "matplotlib"})


def _run_tool(args: argparse.Namespace) -> int:
    """Run an analysis command (imported only now: it needs the ``analysis`` extra, and
    redis for the store)."""
    try:
        from rating_plugin.analysis import commands

        try:
            return commands.run(args)
        except commands.CommandError as error:
            print(f"{args.parser.prog}: error: {error}", file=sys.stderr)
            raise SystemExit(error.status) from None
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if missing not in _ANALYSIS_EXTRA:
            raise
        print(f"{args.parser.prog}: error: {args.tool} needs {missing}, which is not installed: "
              "pip install -e '.[analysis]'", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

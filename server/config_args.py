"""The server's command line: one flag per setting (:mod:`server.config` declares them), the
short ``--help`` of ``python -m server`` (``--help-all`` for every setting) and the flags of
the commands beside the server (:data:`STORE_SETTINGS`)."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from server.config import BY_NAME, OPTIONS, Option, Settings, shown
from server.exits import Parser

#: The settings the commands beside the server take: where the store is and its key prefix.
STORE_SETTINGS = ("redis_url", "data_dir", "key_prefix")


def add_arguments(parser: argparse.ArgumentParser,
                  names: Sequence[str] | None = None) -> None:
    """Add one flag per setting (``names``, else all), in one argument group per settings
    group; every flag defaults to None (meaning "not given": the variable or default
    applies)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in OPTIONS if names is None else [BY_NAME[n] for n in names]:
        title = option.declaration.group
        if title not in groups:
            groups[title] = parser.add_argument_group(title)
        groups[title].add_argument(
            option.flag, dest=option.name, default=None, metavar=option.metavar,
            help=option.help,
        )


def settings_from_args(args: argparse.Namespace,
                       environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment (the process's own when None), overridden by the flags
    :func:`add_arguments` added to ``args``'s parser and that were given."""
    overrides: dict[str, Any] = {}
    for option in OPTIONS:
        raw = getattr(args, option.name, None)
        if raw is not None:
            overrides[option.name] = option.parse(raw, option.flag)
    return Settings.from_env(environ, **overrides)


#: The settings ``python -m server --help`` shows; ``--help-all`` shows every one.
COMMON_SETTINGS = ("host", "port", "redis_url", "data_dir", "key_prefix", "trusted_proxies",
                   "workers", "log_level", "json_logs")
#: The server's sub-commands, each with its line in ``--help``.
COMMANDS = (("runner-key create|rotate|list|revoke NAME",
             "tournament runner keys (python -m server runner-key --help)"),)
PROG = "python -m server"
DESCRIPTION = ("Table42 backgammon lobby and match server. Every setting is a flag and an "
               "environment variable (TABLE42_<NAME>, REDIS_URL); flags win.")


class _ShortHelp(argparse.Action):
    """``-h``/``--help``: the common settings, one line per group of the others, the
    sub-commands; ``--help-all`` is argparse's own help of every setting."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(short_help(), end="")
        parser.exit()


def short_help(width: int = 100) -> str:
    """The text of ``python -m server --help``: one screen."""
    def entry(left: str, text: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=f"  {left:<24} ",
                             subsequent_indent=" " * 27)

    lines = [f"usage: {PROG} [--SETTING VALUE ...] | {PROG} COMMAND ...", "",
             *textwrap.wrap(DESCRIPTION, width), "", "commands:"]
    for command, text in COMMANDS:
        lines += [f"  {command}", *entry("", text)]
    lines += ["", "common settings:"]
    for name in COMMON_SETTINGS:
        option = BY_NAME[name]
        d = option.declaration
        lines += entry(f"{option.flag} {option.metavar}",
                       f"{d.help} (default {d.shown_default or shown(option.default)})")
    lines += ["", f"every other setting, one line per group ({PROG} --help-all lists all "
              f"{len(OPTIONS)}):"]
    groups: dict[str, list[Option]] = {}
    for option in OPTIONS:
        if option.name not in COMMON_SETTINGS:
            groups.setdefault(option.declaration.group, []).append(option)
    for title, options in groups.items():
        line = f"  {title} ({len(options)}): {options[0].flag}"
        for option in options[1:]:
            if len(line) + len(option.flag) + 7 > width:
                line += ", ..."
                break
            line += ", " + option.flag
        lines.append(line)
    lines += ["", "options:", *entry("-h, --help", "this help"),
              *entry("--help-all", "every setting with its bounds, default and variable")]
    return "\n".join(lines) + "\n"


def settings_from(argv: Sequence[str] | None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """The server's settings: the environment (the process's own when None), overridden by flags
    in ``argv`` (``sys.argv`` when None). ``--help`` prints :func:`short_help`,
    ``--help-all`` every setting."""
    parser = Parser(
        prog=PROG, usage="%(prog)s [--SETTING VALUE ...] | %(prog)s COMMAND ...",
        description=DESCRIPTION, add_help=False,
        epilog="commands:\n" + "\n".join(f"  {PROG} {c}: {t}" for c, t in COMMANDS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-h", "--help", action=_ShortHelp, help="the common settings only")
    parser.add_argument("--help-all", action="help", help="this help")
    add_arguments(parser)
    return settings_from_args(parser.parse_args(argv), environ)

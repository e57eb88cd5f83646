"""What ``python -m server.admin suspicious`` finds (pure: values in, values and text out).

Two signs of rating farming that the pair limit alone does not stop:

- **Lopsided pairs**: two accounts that played at least ``min_games`` rated games with each
  other in the window, one of them winning at least ``min_share`` of them
  (:func:`lopsided_pairs`, from the settled games).
- **Shared addresses**: network addresses (an IPv6 /64, as the same-address rule compares)
  from which two or more accounts connected within the window (:func:`shared_addresses`,
  from each account's addresses over time).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "AddressGroup",
    "Game",
    "PairReport",
    "format_report",
    "lopsided_pairs",
    "report_dict",
    "shared_addresses",
]


@dataclass(frozen=True, slots=True)
class Game:
    """A settled rated game: who won, who lost, on which ladder, when (Unix seconds)."""

    winner: str
    loser: str
    ladder: str
    finished_at: float


@dataclass(slots=True)
class PairReport:
    """Two accounts' rated games in the window: ``winner`` is the side that won more."""

    winner: str
    loser: str
    games: int = 0
    wins: int = 0
    ladders: set[str] = field(default_factory=set)
    last_game: float = 0.0

    @property
    def losses(self) -> int:
        return self.games - self.wins

    @property
    def share(self) -> float:
        return self.wins / self.games if self.games else 0.0


@dataclass(frozen=True, slots=True)
class AddressGroup:
    """A network address and the accounts seen from it: ``(player, last seen)``, newest
    first."""

    address: str
    accounts: tuple[tuple[str, float], ...]


def lopsided_pairs(games: Iterable[Game], *, min_games: int,
                   min_share: float) -> list[PairReport]:
    """Pairs with at least ``min_games`` games where one side won at least ``min_share``
    (0..1) of them; most games first, then the higher share, then by name."""
    pairs: dict[tuple[str, str], PairReport] = {}
    for game in games:
        a, b = sorted((game.winner, game.loser))
        report = pairs.get((a, b))
        if report is None:
            report = pairs[(a, b)] = PairReport(a, b)
        report.games += 1
        report.wins += game.winner == a
        report.ladders.add(game.ladder)
        report.last_game = max(report.last_game, game.finished_at)
    found = []
    for report in pairs.values():
        if report.wins < report.losses:  # the side that won more goes first
            report.winner, report.loser = report.loser, report.winner
            report.wins = report.games - report.wins
        if report.games >= min_games and report.share >= min_share:
            found.append(report)
    return sorted(found, key=lambda r: (-r.games, -r.share, r.winner, r.loser))


def shared_addresses(seen: Mapping[str, Mapping[str, float]], *,
                     since: float) -> list[AddressGroup]:
    """Addresses two or more accounts were seen from at or after ``since``: ``seen`` maps
    each account to its addresses and when it was last seen from each (Unix seconds).
    Most accounts first, then by address."""
    by_address: dict[str, list[tuple[str, float]]] = {}
    for player, addresses in seen.items():
        for address, at in addresses.items():
            if at >= since:
                by_address.setdefault(address, []).append((player, at))
    groups = [
        AddressGroup(address, tuple(sorted(accounts, key=lambda pa: (-pa[1], pa[0]))))
        for address, accounts in by_address.items() if len(accounts) >= 2
    ]
    return sorted(groups, key=lambda g: (-len(g.accounts), g.address))


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(at))


def report_dict(pairs: list[PairReport], groups: list[AddressGroup],
                settings: Mapping[str, Any]) -> dict[str, Any]:
    """The report as ``--json`` prints it."""
    return {
        "settings": dict(settings),
        "pairs": [
            {"winner": p.winner, "loser": p.loser, "games": p.games, "wins": p.wins,
             "losses": p.losses, "share": round(p.share, 4), "ladders": sorted(p.ladders),
             "last_game": p.last_game}
            for p in pairs
        ],
        "shared_addresses": [
            {"address": g.address,
             "accounts": [{"player": p, "last_seen": at} for p, at in g.accounts]}
            for g in groups
        ],
    }


def format_report(pairs: list[PairReport], groups: list[AddressGroup],
                  settings: Mapping[str, Any]) -> str:
    """The report as a readable table."""
    lines = [
        f"Lopsided pairs: at least {settings['min_games']} rated games in the last "
        f"{settings['days']:g} days, one side winning at least {settings['min_share']:.0%}",
    ]
    if pairs:
        lines.append(f"  {'winner':<20} {'loser':<20} {'games':>5} {'won':>5} {'share':>6}  "
                     f"{'ladders':<13} last game (UTC)")
        for p in pairs:
            lines.append(f"  {p.winner:<20} {p.loser:<20} {p.games:>5} {p.wins:>5} "
                         f"{p.share:>6.0%}  {','.join(sorted(p.ladders)):<13} "
                         f"{_when(p.last_game)}")
    else:
        lines.append("  none")
    lines += ["", f"Accounts sharing an address in the last {settings['address_days']:g} days "
              "(IPv6: the /64)"]
    if groups:
        lines.append(f"  {'address':<24} accounts (last seen, UTC)")
        for g in groups:
            accounts = ", ".join(f"{p} ({_when(at)})" for p, at in g.accounts)
            lines.append(f"  {g.address:<24} {accounts}")
    else:
        lines.append("  none")
    return "\n".join(lines)


def settings_dict(**values: Any) -> dict[str, Any]:
    """The thresholds a report was made with (for its heading and ``--json``)."""
    return asdict(_Settings(**values))


@dataclass(frozen=True, slots=True)
class _Settings:
    days: float
    min_games: int
    min_share: float
    address_days: float

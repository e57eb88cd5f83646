"""The chat reports kept for the operators (PROTOCOL.md §16, docs/operations.md "Table chat").

Every key is tagged ``{reports}`` and changed by one script at a time:

- ``{reports}:open``: the open reports, a sorted set of ``<table>/<msg>/<reporter>`` (one
  report per reporter and message) scored by the report's number (oldest first);
- ``{reports}:items``: each open report (JSON) by the same key;
- ``{reports}:stats``: ``last`` (the last number given) and ``refused`` (reports refused
  because ``reports_kept`` were open: a full list keeps its oldest open reports);
- ``{reports}:filed:<player>``: the reports a player filed in the current ``reports_window``
  (at most ``reports_per_player``), expiring with it;
- ``{reports}:chat``: the list earlier versions kept, adopted by the first script that runs.

``report_add.lua`` files one, ``report_page.lua`` reads the oldest, ``report_resolve.lua``
closes some (``python -m server.admin reports`` and ``resolve``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis.asyncio as aioredis

from server.config import Settings
from server.store.keys import Keys
from server.store.scripts import load_script


class Outcome(StrEnum):
    KEPT = "kept"
    AGAIN = "again"  # this reporter reported this message before: nothing changed
    LIMITED = "limited"  # the reporter filed reports_per_player in this window
    FULL = "full"  # reports_kept reports are open: refused and counted


@dataclass(frozen=True, slots=True)
class Filed:
    """What filing a report did: ``number`` (KEPT, AGAIN) the report's number, ``wait``
    (LIMITED) the seconds until the reporter's window ends, ``refused`` (FULL) the reports
    refused so far."""

    outcome: Outcome
    number: int = 0
    wait: float = 0.0
    refused: int = 0


@dataclass(frozen=True, slots=True)
class ReportPage:
    """The oldest open reports (each with its ``id``, the number ``resolve`` takes), how many
    are open and how many were refused because the list was full."""

    open: int
    refused: int
    reports: list[dict[str, Any]] = field(default_factory=list)


def report_key(table: str, msg: str, reporter: str) -> str:
    """The key of ``reporter``'s report of the message ``msg`` of ``table`` (the same in
    lua/report_legacy.lua)."""
    return f"{table}/{msg}/{reporter}"


class ChatReports:
    """File, read and close the chat reports in Redis."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, settings: Settings) -> None:
        self.redis = redis
        self.keys = keys
        self.settings = settings
        self._add = redis.register_script(load_script("report_add.lua"))
        self._page = redis.register_script(load_script("report_page.lua"))
        self._resolve = redis.register_script(load_script("report_resolve.lua"))

    def _keys(self) -> list[str]:
        keys = self.keys
        return [keys.reports_open, keys.reports_items, keys.reports_stats, keys.chat_reports]

    async def add(self, report: dict[str, Any]) -> Filed:
        """File ``report`` (``table``, ``msg``, ``reporter`` and what the operators read):
        kept unless its reporter reported that message already, filed ``reports_per_player``
        in this window, or ``reports_kept`` reports are open (one script call)."""
        settings = self.settings
        reporter = str(report["reporter"])
        keys = self.keys
        code, n = await self._add(
            keys=[keys.reports_open, keys.reports_items, keys.reports_stats,
                  keys.reports_filed(reporter), keys.chat_reports],
            args=[report_key(str(report["table"]), str(report["msg"]), reporter),
                  json.dumps(report, separators=(",", ":"), ensure_ascii=False),
                  settings.reports_per_player, max(1, int(settings.reports_window * 1000)),
                  settings.reports_kept])
        code, n = int(code), int(n)
        if code == 1:
            return Filed(Outcome.KEPT, number=n)
        if code == 0:
            return Filed(Outcome.AGAIN, number=n)
        if code == -1:
            return Filed(Outcome.LIMITED, wait=n / 1000)
        return Filed(Outcome.FULL, refused=n)

    async def page(self, limit: int = 100) -> ReportPage:
        """The oldest ``limit`` open reports, oldest first."""
        reply = await self._page(keys=self._keys(), args=[max(1, limit)])
        reports = [{"id": int(reply[i]), **json.loads(reply[i + 1])}
                   for i in range(2, len(reply), 2)]
        return ReportPage(int(reply[0]), int(reply[1]), reports)

    async def resolve(self, numbers: Sequence[int]) -> list[int]:
        """Close the open reports ``numbers``; the numbers that were not open."""
        missing = await self._resolve(keys=self._keys(), args=list(numbers))
        return [int(n) for n in missing]

"""The public read API over HTTP: leaderboards, profiles, rating history, the calculator,
stake previews and the OpenAPI document. No route needs a token; none returns a password
hash, a token or a key.

==========================================  =================================================
``GET /api/leaderboard/{ladder}``           a page of ``table42``, ``fibs`` or ``boosted``,
                                            with a player's own place (one round trip)
``GET /api/players/{player}``               a profile (one round trip)
``GET /api/players/{player}/history``       rating changes, newest first (for a graph)
``GET /api/calculator/{system}``            ``python -m rating_plugin <system> ... --json``
``GET /api/stakes?player=&opponent=&pool=``  what two players stand to win or lose
``GET /api/stakes/{system}``                ``python -m rating_plugin stakes ... --json``
``GET /api/levels``                         the computer's levels, weakest first, with their
                                            measured error rates (built once, cacheable)
``GET /api/openapi.json``                   the OpenAPI 3.1 document of every endpoint
==========================================  =================================================

Parameters are checked by :mod:`server.net.public_params` (pure); the reads are the rating
store's and the account store's; this module only shapes the JSON. Errors are the JSON bodies
of :func:`server.net.http_api.error_response` (PROTOCOL.md §8, docs/http-api.md).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from aiohttp import web
from redis.asyncio.client import Pipeline

from rating_plugin import round_half_away, stakes
from rating_plugin.cli import CalculatorInputError, calculate
from rating_plugin.store import (
    HistoryEntry,
    LeaderboardPage,
    PlayerProfile,
    PlayerRating,
    Queued,
    RatingStore,
)
from server.bot.ladder import ALIASES, LADDER
from server.net.http_api import error_response
from server.net.public_params import (
    CALCULATOR_SYSTEMS,
    calculator_argv,
    check_player,
    parse_history,
    parse_leaderboard,
    parse_stakes,
    stakes_argv,
)
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.ids import GUEST_PREFIX, bot_name, is_bot_id
from server.protocol.messages import PlayComputer
from server.store.accounts import Accounts, Identity

Handler = Callable[[web.Request], Awaitable[web.Response]]
OPENAPI = "openapi.json"
OPENAPI_FRAGMENTS = ("openapi_tournaments.json",)
"""Fragments merged into the served document when present: ``{"paths", "components":
{"schemas"}}`` written by other parts of the server (tournaments)."""
LEVELS_MAX_AGE = 3600
"""Seconds a client or cache may keep ``GET /api/levels`` (it changes only with a release)."""


# -- pure shaping -----------------------------------------------------------------------------


def shown_rating(ladder: str, rating: float, *, is_new: bool = False) -> str:
    """A rating as players see it: ``"new"`` (FIBS, experience under 10), two decimals on
    FIBS (half away from zero), a whole number on Table42 and Boosted."""
    if ladder == "fibs":
        return "new" if is_new else f"{round_half_away(rating * 100) / 100:.2f}"
    return str(round_half_away(rating))


def _number(ladder: str, value: float) -> float | int:
    return float(value) if ladder == "fibs" else int(value)


def leaderboard_body(page: LeaderboardPage) -> dict[str, Any]:
    ladder = str(page.ladder)
    place = page.place
    return {
        "ladder": ladder,
        "offset": page.offset,
        "limit": page.limit,
        "total": page.total,
        "entries": [
            {"rank": e.rank, "player": e.player, "rating": _number(ladder, e.rating),
             "shown": shown_rating(ladder, e.rating)}
            for e in page.entries
        ],
        "player": None if place is None else {
            "player": place.player, "rank": place.rank,
            "rating": _number(ladder, place.rating),
            "shown": shown_rating(ladder, place.rating, is_new=place.is_new),
        },
    }


def _ladder_body(rating: PlayerRating, rank: int | None) -> dict[str, Any]:
    ladder = str(rating.ladder)
    body: dict[str, Any] = {
        "rating": _number(ladder, rating.rating),
        "shown": shown_rating(ladder, rating.rating, is_new=rating.is_new),
        "rank": rank,
        "games": rating.games,
        "wins": rating.wins,
        "losses": rating.losses,
    }
    if rating.experience is not None:
        body["experience"] = rating.experience
        body["is_new"] = rating.is_new
    return body


def profile_body(profile: PlayerProfile, account: Identity | None) -> dict[str, Any]:
    name = bot_name(profile.player) if account is None else account.name
    return {
        "player": profile.player,
        "name": name if name is not None else profile.player,
        "guest": profile.player.startswith(GUEST_PREFIX),
        "bot": is_bot_id(profile.player),
        "ladders": {
            "table42": _ladder_body(profile.table42, profile.table42_rank),
            "fibs": _ladder_body(profile.fibs, profile.fibs_rank),
            "boosted": {"points": profile.boosted_points, "rank": profile.boosted_rank},
        },
        "window": {"recent_games": profile.recent_games, "k": profile.k},
    }


def history_body(player: str, ladder: str, entries: list[HistoryEntry]) -> dict[str, Any]:
    return {
        "player": player,
        "ladder": ladder,
        "entries": [
            {"seq": e.seq, "at": e.at, "ref": e.ref, "reason": e.reason,
             "opponent": e.opponent, "won": e.won, "place": e.place,
             "rating_before": _number(ladder, e.rating_before),
             "rating_after": _number(ladder, e.rating_after),
             "change": _number(ladder, e.change)}
            for e in entries
        ],
    }


def stakes_body(pool_id: str, ladder: str, mine: PlayerProfile, theirs: PlayerProfile,
                match_length: int) -> dict[str, Any]:
    """The stake preview of matchmaking's ``match_found`` (PROTOCOL.md §11) for two stored
    players, plus ``pool`` and ``ladder`` (the route adds the pair limit's answer)."""
    if ladder == "fibs":
        preview = stakes.fibs_stakes(
            mine.fibs.rating, theirs.fibs.rating, match_length=match_length,
            experience=mine.fibs.experience or 0,
            opponent_experience=theirs.fibs.experience or 0,
        )
    else:
        preview = stakes.table42_stakes(
            mine.table42.rating, theirs.table42.rating, cube=1, k=mine.k, opponent_k=theirs.k
        )
    return {**preview.to_dict(), "pool": pool_id, "ladder": ladder}


def levels_body() -> dict[str, Any]:
    """The computer's levels (``GET /api/levels``), weakest first: ``random`` (no evaluator:
    no rate, no search), then the ladder's rungs (:data:`server.bot.ladder.LADDER`), each with
    its measured error rate (``memg``, mEMG per unforced checker play, and the 95% interval
    ``low`` to ``high``), GNU Backgammon's rating ``words`` for it, its ``search_depth`` and
    the older names it answers to; ``default``: the level ``play_computer`` plays without one."""
    aliases: dict[str, list[str]] = {}
    for old, new in ALIASES.items():
        aliases.setdefault(new, []).append(old)
    levels: list[dict[str, Any]] = [{
        "level": "random", "words": None, "memg": None, "low": None, "high": None,
        "search_depth": None, "aliases": [],
    }]
    levels.extend({
        "level": r.name, "words": r.words, "memg": r.memg, "low": r.low, "high": r.high,
        "search_depth": r.depth, "aliases": aliases.get(r.name, []),
    } for r in LADDER)
    return {"levels": levels, "default": str(PlayComputer().level),
            "unit": "mEMG per unforced checker play"}


def load_openapi(package: Traversable | None = None) -> dict[str, Any]:
    """``server/openapi.json`` with every fragment of :data:`OPENAPI_FRAGMENTS` that exists
    merged in (their paths, components of every kind and tags added; the main document wins
    on a clash).
    ``package`` is the directory to read them from (default: the installed package)."""
    if package is None:
        package = resources.files("server")
    document: dict[str, Any] = json.loads(package.joinpath(OPENAPI).read_text("utf-8"))
    for name in OPENAPI_FRAGMENTS:
        fragment = package.joinpath(name)
        if not fragment.is_file():
            continue
        extra = json.loads(fragment.read_text("utf-8"))
        for path, item in extra.get("paths", {}).items():
            document["paths"].setdefault(path, item)
        components = document.setdefault("components", {})
        for section, entries in extra.get("components", {}).items():  # schemas, responses ...
            merged = components.setdefault(section, {})
            for key, value in entries.items():
                merged.setdefault(key, value)
        for tag in extra.get("tags", []):
            if tag not in document.setdefault("tags", []):
                document["tags"].append(tag)
    return document


# -- the routes -------------------------------------------------------------------------------


class PublicRoutes:
    """The routes of the table above, on one app."""

    def __init__(self, ratings: RatingStore, accounts: Accounts,
                 clock: Callable[[], float] = time.time, *, pair_limit: int = 0,
                 pair_window: float = 86400.0) -> None:
        self.ratings = ratings
        self.accounts = accounts
        self.clock = clock
        self.pair_limit = pair_limit
        self.pair_window = pair_window
        self.openapi = load_openapi()
        self._levels = json.dumps(levels_body(), separators=(",", ":")).encode()
        self._levels_tag = hashlib.sha256(self._levels).hexdigest()[:20]

    def add_to(self, app: web.Application) -> None:
        app.router.add_get("/api/leaderboard/{ladder}", self.leaderboard)
        app.router.add_get("/api/players/{player}", self.profile)
        app.router.add_get("/api/players/{player}/history", self.history)
        # One route per system (not a {system} placeholder): the OpenAPI document then gives
        # each its own parameters, and an unknown system is the router's 404.
        for system in CALCULATOR_SYSTEMS:
            app.router.add_get(f"/api/calculator/{system}", self._calculator(system))
            app.router.add_get(f"/api/stakes/{system}", self._stakes_by_numbers(system))
        app.router.add_get("/api/stakes", self.stakes)
        app.router.add_get("/api/openapi.json", self.openapi_document)
        app.router.add_get("/api/levels", self.levels)

    async def leaderboard(self, request: web.Request) -> web.Response:
        try:
            query = parse_leaderboard(request.match_info["ladder"], request.query)
        except ProtocolError as exc:
            return error_response(exc)
        page = await self.ratings.leaderboard_page(
            query.ladder, offset=query.offset, limit=query.limit, player=query.player
        )
        return web.json_response(leaderboard_body(page))

    async def _profiles(
        self, players: tuple[str, ...]
    ) -> list[tuple[PlayerProfile, Identity | None]]:
        """Profiles and accounts of ``players``, all in one pipelined round trip."""
        at = self.clock()

        def fill(pipe: Pipeline) -> Queued[list[tuple[PlayerProfile, Identity | None]]]:
            parts = [(self.ratings.queue_profile(pipe, p, at),
                      self.accounts.queue_account(pipe, p)) for p in players]

            def parse(replies: Any) -> list[tuple[PlayerProfile, Identity | None]]:
                out, at_reply = [], 0
                for profile, account in parts:
                    mine = profile.parse(replies[at_reply:at_reply + profile.count])
                    at_reply += profile.count
                    out.append((mine, account.parse(replies[at_reply:at_reply + account.count])))
                    at_reply += account.count
                return out

            return Queued(sum(p.count + a.count for p, a in parts), parse)

        return await self.ratings.read(fill)

    @staticmethod
    def _unknown(field: str, player: str) -> web.Response:
        return error_response(ProtocolError(
            ErrorCode.NOT_FOUND, f"no player {player!r:.70}", field=field
        ))

    async def profile(self, request: web.Request) -> web.Response:
        try:
            player = check_player(request.match_info["player"])
        except ProtocolError as exc:
            return error_response(exc)
        [(profile, account)] = await self._profiles((player,))
        if account is None and not profile.is_known and bot_name(player) is None:
            return self._unknown("player", player)
        return web.json_response(profile_body(profile, account))

    async def history(self, request: web.Request) -> web.Response:
        try:
            query = parse_history(request.match_info["player"], request.query)
        except ProtocolError as exc:
            return error_response(exc)
        entries = await self.ratings.history(query.player, query.ladder, limit=query.limit)
        return web.json_response(history_body(query.player, query.ladder, entries))

    def _calculator(self, system: str) -> Handler:
        async def calculator(request: web.Request) -> web.Response:
            return self._calculate(lambda: calculator_argv(system, request.query))

        return calculator

    def _stakes_by_numbers(self, system: str) -> Handler:
        async def stakes_by_numbers(request: web.Request) -> web.Response:
            return self._calculate(lambda: stakes_argv(system, request.query))

        return stakes_by_numbers

    @staticmethod
    def _calculate(argv: Callable[[], list[str]]) -> web.Response:
        try:
            return web.json_response(calculate(argv()))
        except ProtocolError as exc:
            return error_response(exc)
        except CalculatorInputError as exc:
            return error_response(ProtocolError(ErrorCode.BAD_REQUEST, str(exc)))

    async def stakes(self, request: web.Request) -> web.Response:
        try:
            query = parse_stakes(request.query)
        except ProtocolError as exc:
            return error_response(exc)
        [(mine, my_account), (theirs, their_account)] = await self._profiles(
            (query.player, query.opponent)
        )
        for field, profile, account in (("player", mine, my_account),
                                        ("opponent", theirs, their_account)):
            if account is None and not profile.is_known:
                return self._unknown(field, profile.player)
        pool = query.pool
        body = stakes_body(pool.id, pool.ladder, mine, theirs, pool.match_length)
        games = 0
        if self.pair_limit > 0:
            games = await self.ratings.pair_games(query.player, query.opponent,
                                                  at=self.clock(), window=self.pair_window)
        limited = self.pair_limit > 0 and games >= self.pair_limit
        body.update({
            "rated": not limited, "unrated_reason": "pair_limit" if limited else None,
            "pair_games": games, "pair_limit": self.pair_limit or None,
        })
        return web.json_response(body)

    async def levels(self, request: web.Request) -> web.Response:
        """The same bytes every time, with an ``ETag``: a client that sends it back in
        ``If-None-Match`` gets 304 and no body."""
        headers = {"Cache-Control": f"public, max-age={LEVELS_MAX_AGE}",
                   "ETag": f'"{self._levels_tag}"'}
        if any(tag.value in (self._levels_tag, "*") for tag in request.if_none_match or ()):
            return web.Response(status=304, headers=headers)
        return web.Response(body=self._levels, content_type="application/json",
                            headers=headers)

    async def openapi_document(self, request: web.Request) -> web.Response:
        return web.json_response(self.openapi)


__all__ = [
    "PublicRoutes",
    "history_body",
    "leaderboard_body",
    "levels_body",
    "load_openapi",
    "profile_body",
    "shown_rating",
    "stakes_body",
]

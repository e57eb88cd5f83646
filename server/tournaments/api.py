"""HTTP routes of tournaments (runner keys, registration, tables, results, podium, bracket).

Runner routes take ``Authorization: Bearer t42rk_...`` (a runner key; a player's token is
never one: 401). A tournament belongs to the runner's **name**: any live key of that name acts
on it (so a rotated key keeps control), another runner's key gets 403 ``forbidden``. Reading a
public tournament (detail, seeding, results, bracket) needs no key; a private one is visible
to its runner only (404 to anyone else without a key, 403 to another runner).
``GET /api/tournaments?mine=1`` lists the runner's own (public and private);
``DELETE /api/tournaments/{id}`` cancels one.

Open registration: ``PUT /api/tournaments/{id}/registration`` (runner) opens a public
tournament to players (a cap, a deadline) or closes it again; a signed-in player
(``Authorization: Bearer <player token>``) joins with ``PUT /api/tournaments/{id}/entry`` and
leaves with ``DELETE`` there while it is open; ``GET /api/tournaments?player=<id>`` lists the
public tournaments a player is entered in that have not ended. Guests and computer players
are refused. Errors are the
JSON bodies of ``server/net/http_api.py``; docs/tournaments.md lists every route.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from redis.exceptions import RedisError

from server.net.http_api import error_response, json_body
from server.net.ws import bearer_token
from server.protocol.errors import UNAVAILABLE_MESSAGE, ErrorCode, ProtocolError, http_error_body
from server.protocol.ids import is_bot_id
from server.store.accounts import Identity
from server.tournaments import spec
from server.tournaments.bracket import Bracket, build
from server.tournaments.events import bracket_view, public_tournament, tournament_summary
from server.tournaments.runner_keys import Runner, RunnerKeys
from server.tournaments.service import Tournaments
from server.tournaments.store import (
    ALREADY,
    CANCEL_FINISHED,
    CANCEL_REMOVED,
    CANCEL_STOPPED,
    CLOSED,
    DEADLINE_PASSED,
    FULL,
    NO_SUCH,
    NOT_OPEN_TO_PLAYERS,
    REMOVED_ALREADY,
)

TOURNAMENT_ID = re.compile(r"tn[0-9a-f]{12}")
Handler = Callable[[web.Request], Awaitable[web.Response]]
#: Resolves a player's token to who it belongs to (None: unknown or expired).
ResolveToken = Callable[[str], Awaitable[Identity | None]]
#: Most tournaments ``?player=`` reads from a player's index.
MAX_ENTERED = 100


def _handled(fn: Handler) -> Handler:
    """``fn`` with its refusals answered as JSON errors (Redis away: 503 ``unavailable``)."""
    async def wrapper(request: web.Request) -> web.Response:
        try:
            return await fn(request)
        except ProtocolError as exc:
            return error_response(exc)
        except (RedisError, OSError):
            return error_response(ProtocolError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE))
    return wrapper


def _no_such(tid: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NO_SUCH_TOURNAMENT, f"no tournament {tid!r:.60}")


class TournamentRoutes:
    def __init__(self, service: Tournaments, runner_keys: RunnerKeys, max_match_length: int,
                 clock: Callable[[], float] = time.time,
                 resolve_token: ResolveToken | None = None) -> None:
        self.resolve_token = resolve_token
        self.service = service
        self.store = service.store
        self.runner_keys = runner_keys
        self.max_match_length = max_match_length
        self.clock = clock

    def add_to(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/api/tournaments", _handled(self.create))
        r.add_get("/api/tournaments", _handled(self.list))
        r.add_get("/api/tournaments/{id}", _handled(self.detail))
        r.add_delete("/api/tournaments/{id}", _handled(self.cancel))
        r.add_post("/api/tournaments/{id}/players", _handled(self.register))
        r.add_delete("/api/tournaments/{id}/players/{player}", _handled(self.unregister))
        r.add_put("/api/tournaments/{id}/registration", _handled(self.set_registration))
        r.add_put("/api/tournaments/{id}/entry", _handled(self.join))
        r.add_delete("/api/tournaments/{id}/entry", _handled(self.leave))
        r.add_get("/api/tournaments/{id}/seeding", _handled(self.seeding))
        r.add_post("/api/tournaments/{id}/tables", _handled(self.tables))
        r.add_get("/api/tournaments/{id}/results", _handled(self.results))
        r.add_post("/api/tournaments/{id}/podium", _handled(self.podium))
        r.add_post("/api/tournaments/{id}/bracket", _handled(self.start_bracket))
        r.add_get("/api/tournaments/{id}/bracket", _handled(self.bracket))

    # --- access ------------------------------------------------------------------------------

    async def _runner(self, request: web.Request) -> Runner | None:
        key = bearer_token(request.headers.get("Authorization"))
        return None if key is None else await self.runner_keys.resolve(key)

    async def _require_runner(self, request: web.Request) -> Runner:
        runner = await self._runner(request)
        if runner is None:
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "no valid runner key")
        return runner

    async def _player(self, request: web.Request) -> Identity:
        """The signed-in player of the request (a player's token): 401 without one, guests
        ``guest_not_allowed`` and computer players ``bot_not_allowed``."""
        token = bearer_token(request.headers.get("Authorization"))
        who = None if token is None or self.resolve_token is None \
            else await self.resolve_token(token)
        if who is None:
            raise ProtocolError(ErrorCode.UNAUTHORIZED, "no valid player token")
        if who.is_bot or is_bot_id(who.player):
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "computer players may not enter tournaments")
        if who.is_guest:
            raise ProtocolError(ErrorCode.GUEST_NOT_ALLOWED,
                                "guests may not enter tournaments: sign up first")
        return who

    async def _load(self, request: web.Request) -> dict[str, Any]:
        tid = request.match_info["id"]
        t = await self.store.get(tid) if TOURNAMENT_ID.fullmatch(tid) else None
        if t is None:
            raise _no_such(tid)
        return t

    async def _owner(self, t: dict[str, Any]) -> str | None:
        """The name of the runner who owns ``t`` (a record made before owners were named
        carries the id of the key that made it)."""
        owner = t.get("owner")
        return owner if owner else await self.runner_keys.owner_of(t["runner"])

    async def _check_owner(self, t: dict[str, Any], runner: Runner) -> None:
        if await self._owner(t) != runner.name:
            raise ProtocolError(ErrorCode.FORBIDDEN,
                                f"tournament {t['id']} belongs to another runner")

    async def _owned(self, request: web.Request) -> dict[str, Any]:
        """The tournament of the path, owned by the runner of the request's key."""
        runner = await self._require_runner(request)
        t = await self._load(request)
        await self._check_owner(t, runner)
        return t

    async def _visible(self, request: web.Request) -> dict[str, Any]:
        """The tournament of the path, if the caller may read it."""
        t = await self._load(request)
        if t["visibility"] == "public":
            return t
        runner = await self._runner(request)
        if runner is None:
            raise _no_such(t["id"])
        await self._check_owner(t, runner)
        return t

    # --- routes ------------------------------------------------------------------------------

    async def create(self, request: web.Request) -> web.Response:
        runner = await self._require_runner(request)
        body = await json_body(request)
        created = spec.parse_create(body, self.max_match_length)
        registration = spec.parse_registration(body.get("registration"), created.visibility,
                                               self.clock())
        t = await self.store.create(runner.name, runner.id, created, registration)
        return web.json_response({"tournament": public_tournament(t)}, status=201)

    async def list(self, request: web.Request) -> web.Response:
        offset, limit = spec.parse_page(request.query)
        player = spec.parse_player_filter(request.query)
        if player is not None:
            entered = await self.store.entered(player, MAX_ENTERED)
            found, total = entered[offset:offset + limit], len(entered)
        elif spec.parse_mine(request.query):
            runner = await self._require_runner(request)
            found, total = await self.store.list_of_runner(runner.name, offset, limit)
        else:
            found, total = await self.store.list_public(offset, limit)
        return web.json_response({
            "tournaments": [tournament_summary(t) for t in found], "total": total,
            "offset": offset, "limit": limit,
        })

    async def detail(self, request: web.Request) -> web.Response:
        t = await self._visible(request)
        return web.json_response({"tournament": public_tournament(t)})

    async def cancel(self, request: web.Request) -> web.Response:
        """Cancel: an open tournament is removed, a running bracket stopped (its tables
        closed, no podium). The same call again answers the same with ``applied`` false."""
        runner = await self._require_runner(request)
        tid = request.match_info["id"]
        if not TOURNAMENT_ID.fullmatch(tid):
            raise _no_such(tid)
        t = await self.store.get(tid)
        if t is not None:
            await self._check_owner(t, runner)
        code, tables = await self.store.cancel(tid, runner.name)
        if code == NO_SUCH:
            raise _no_such(tid)
        if code == CANCEL_FINISHED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {tid} is finished: nothing to cancel")
        if t is not None and code in (CANCEL_REMOVED, CANCEL_STOPPED):
            await self.service.cancelled(t, tables)
        removed = code in (CANCEL_REMOVED, REMOVED_ALREADY)
        return web.json_response({
            "tournament": tid, "status": "removed" if removed else "cancelled",
            "applied": code in (CANCEL_REMOVED, CANCEL_STOPPED), "tables": tables,
        })

    async def register(self, request: web.Request) -> web.Response:
        t = await self._owned(request)
        body = await json_body(request)
        player = spec.parse_player(body.get("player"))
        if is_bot_id(player):
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                f"{player!r} is a computer player; bots may not enter "
                                "tournaments", field="player")
        if not await self.store.account_exists(player):
            raise ProtocolError(ErrorCode.BAD_FIELD, f"no account {player!r}", field="player")
        outcome = await self.store.register(t["id"], player, spec.MAX_PLAYERS)
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"registration for tournament {t['id']} is closed")
        if outcome == FULL:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} has {spec.MAX_PLAYERS} players already")
        t = await self._load(request)
        return web.json_response({"tournament": public_tournament(t)},
                                 status=200 if outcome == ALREADY else 201)

    async def unregister(self, request: web.Request) -> web.Response:
        t = await self._owned(request)
        player = spec.parse_player(request.match_info["player"])
        outcome = await self.store.unregister(t["id"], player)
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"registration for tournament {t['id']} is closed")
        t = await self._load(request)
        return web.json_response({"tournament": public_tournament(t), "removed": outcome == 1})

    async def set_registration(self, request: web.Request) -> web.Response:
        """The runner opens the tournament to players (``mode`` open, a ``cap``, a
        ``deadline``) or closes it (only the runner registers then)."""
        t = await self._owned(request)
        body = await json_body(request)
        registration = spec.parse_registration(body, t["visibility"], self.clock())
        outcome = await self.store.set_registration(t["id"], registration)
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} is {t['status']}: registration is over")
        t = await self._load(request)
        return web.json_response({"tournament": public_tournament(t)})

    async def join(self, request: web.Request) -> web.Response:
        """The signed-in player enters an open tournament themselves (201; 200 when already
        in)."""
        who = await self._player(request)
        t = await self._load(request)
        if t["visibility"] != "public":
            raise _no_such(t["id"])
        outcome = await self.store.register(t["id"], who.player, spec.MAX_PLAYERS,
                                            self_join=True, now=self.clock())
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} has started: registration is closed")
        if outcome == NOT_OPEN_TO_PLAYERS:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} is not open to players: its runner "
                                "registers them")
        if outcome == DEADLINE_PASSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"registration for tournament {t['id']} ended")
        if outcome == FULL:
            raise ProtocolError(ErrorCode.CONFLICT, f"tournament {t['id']} is full "
                                f"({t['registration']['cap']} players)")
        t = await self._load(request)
        return web.json_response({"tournament": public_tournament(t), "entered": True},
                                 status=200 if outcome == ALREADY else 201)

    async def leave(self, request: web.Request) -> web.Response:
        """The signed-in player leaves a tournament before it starts (``removed`` false: was
        not in it)."""
        who = await self._player(request)
        t = await self._load(request)
        if t["visibility"] != "public":
            raise _no_such(t["id"])
        outcome = await self.store.unregister(t["id"], who.player)
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} has started: players may not leave")
        t = await self._load(request)
        return web.json_response({"tournament": public_tournament(t), "removed": outcome == 1})

    async def seeding(self, request: web.Request) -> web.Response:
        t = await self._visible(request)
        return web.json_response({"tournament": t["id"],
                                  "seeding": await self.service.seeding(t["players"])})

    async def tables(self, request: web.Request) -> web.Response:
        t = await self._owned(request)
        pairs = spec.parse_pairs(await json_body(request))
        if t["status"] != "open" or t["bracket"]:
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} is {t['status']}: no tables by hand")
        registered = set(t["players"])
        for a, b in pairs:
            for p in (a, b):
                if p not in registered:
                    raise ProtocolError(ErrorCode.BAD_FIELD,
                                        f"{p!r} is not registered in {t['id']}", field="pairs")
        opened: list[dict[str, Any]] = []
        for a, b in pairs:
            try:
                table = await self.service.open_table(t, a, b)
                opened.append({"players": [a, b], "table": table, "error": None})
            except ProtocolError as exc:
                opened.append({"players": [a, b], "table": None,
                               **http_error_body(exc)})
        return web.json_response({"tournament": t["id"], "tables": opened}, status=201)

    async def results(self, request: web.Request) -> web.Response:
        t = await self._visible(request)
        return web.json_response({"tournament": t["id"],
                                  "results": await self.store.results(t["id"])})

    async def podium(self, request: web.Request) -> web.Response:
        t = await self._owned(request)
        players = spec.parse_podium(await json_body(request))
        if t["status"] == "running":
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"the server runs tournament {t['id']}'s bracket and awards "
                                "its podium")
        if t["status"] == "cancelled":
            raise ProtocolError(ErrorCode.CONFLICT,
                                f"tournament {t['id']} was cancelled: no podium")
        registered = set(t["players"])
        for p in players:
            if p not in registered:
                raise ProtocolError(ErrorCode.BAD_FIELD, f"{p!r} is not registered in "
                                    f"{t['id']}", field="players")
        return web.json_response({"podium": await self.service.award(t, players)})

    async def start_bracket(self, request: web.Request) -> web.Response:
        t = await self._owned(request)
        no_show = spec.parse_no_show(await json_body(request))
        if t["status"] != "open":
            raise ProtocolError(ErrorCode.CONFLICT, f"tournament {t['id']} is {t['status']}")
        if len(t["players"]) < 2:
            raise ProtocolError(ErrorCode.CONFLICT, "a bracket needs at least 2 players")
        seeded = await self.service.seeding(t["players"])
        bracket = build([s["player"] for s in seeded], no_show_seconds=no_show,
                        now=self.clock())
        state = {"bracket": bracket.to_dict(), "announced": [], "reported": [],
                 "awarded": False}
        outcome = await self.store.start_bracket(t["id"], state)
        if outcome == NO_SUCH:
            raise _no_such(t["id"])
        if outcome == CLOSED:
            raise ProtocolError(ErrorCode.CONFLICT, f"tournament {t['id']} is not open")
        return web.json_response({"bracket": bracket_view(t["id"], "running", bracket)},
                                 status=201)

    async def bracket(self, request: web.Request) -> web.Response:
        t = await self._visible(request)
        state = await self.store.bracket(t["id"])
        if state is None:
            raise ProtocolError(ErrorCode.NO_SUCH_TOURNAMENT,
                                f"tournament {t['id']} has no bracket")
        bracket = Bracket.from_dict(state["bracket"])
        return web.json_response(bracket_view(t["id"], t["status"], bracket))

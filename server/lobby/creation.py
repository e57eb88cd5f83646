"""Tables made on this node: opening (by a player, by matchmaking, by a tournament) and the
creation limits.

A player opens a table with ``create_table`` (:meth:`TableCreation.create_table`: the
creation limits per player and per address, open tables per node and per address); matchmaking
and tournaments seat two players at a new table and start play
(:meth:`TableCreation.start_rated_game`). Each new table takes its first owner record
(:meth:`TableCreation.claim_new`) before anyone hears of it, and is put in the node's
:class:`~server.lobby.registry.TableRegistry`; the lobby index is ``listing.py``'s, what
follows a table's end ``lifecycle.py``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError

from server.lobby.lifecycle import TableLife
from server.lobby.listing import Listing
from server.lobby.pair_limit import PairLimit
from server.lobby.registry import TableRegistry
from server.lobby.table import Table, TableStatus
from server.lobby.table_deps import TableDeps
from server.protocol.errors import ErrorCode, ProtocolError, retry_later
from server.protocol.ids import GUEST_PREFIX, is_bot_id, network_key, new_table_id
from server.protocol.messages import CreateTable, TableMode
from server.protocol.node_messages import Actor
from server.protocol.visibility import Audience
from server.ratelimit import RateLimiter
from server.tables.machine import already_seated, check_new_table
from server.tables.ratings import RatedPlayer, RatingPlan, plan_rating


class TableCreation:
    """Opens tables on this node: given the parts a table uses (``deps``), the node's
    registry, the tables' lifecycle (``life``: it counts open tables per address), the lobby
    index and the pair limit."""

    def __init__(self, deps: TableDeps, *, registry: TableRegistry, life: TableLife,
                 listing: Listing, pair_limit: PairLimit) -> None:
        self.deps = deps
        self.settings = settings = deps.settings
        self.node_id = deps.node_id
        self.persistence = deps.persistence
        self.registry = registry
        self.life = life
        self.listing = listing
        self.pair_limit = pair_limit
        # Table creation limits (hardening): a rate per player and per address, and open
        # tables per address on this node (counted by ``life``).
        on = settings.limits
        self._create_limit = RateLimiter(settings.table_create_rate if on else 0.0,
                                         settings.table_create_burst)
        self._creating = 0  # create_table requests past their checks, not yet a table

    async def claim_new(self, table_id: str) -> None:
        """Take the first owner lease of a table made here; its writes are fenced with it."""
        epoch, _ = await self.persistence.claim(table_id, self.node_id, new=True)
        if not epoch:
            raise ProtocolError(ErrorCode.INTERNAL, "table id taken; retry")
        self.persistence.adopt(table_id, epoch)

    async def start_rated_game(
        self,
        first: str,
        second: str,
        *,
        match_length: int | None = None,
        names: tuple[str, str] | None = None,
        addresses: tuple[str, str] | None = None,
        mode: TableMode = TableMode.COMPETITIVE,
        announce: Callable[[str, RatingPlan], Awaitable[None]] | None = None,
        tournament_id: str | None = None,
        audience: Audience | None = None,
    ) -> str:
        """Seat ``first`` (side 0) and ``second`` (side 1) at a new Competitive table owned by
        this node and start play: a single game (Table42) when ``match_length`` is None, else a
        rated match to ``match_length`` points (FIBS). Both must hold no other seat.
        ``mode=TableMode.BOOSTED`` makes it a Boosted table instead (Boosted points, never
        Elo; guests welcome, they earn nothing); ``mode=TableMode.TOURNAMENT``
        with ``tournament_id`` a tournament table (never rated), ``audience`` who may see it
        (by default, as its ``mode`` has it: a private tournament gives its own).
        ``announce(table_id, plan)`` is awaited once both seats are held and the rating
        decided (``plan``, as ``game_start`` will carry it: a game the pair limit refuses is
        unrated with ``pair_limit``), before anyone is seated, so what it sends arrives
        before ``seated``.

        ``names`` default to the player ids; ``addresses`` default to the players' latest
        connection addresses (same address -> unrated); a guest id makes the game unrated
        (``game_start`` says why). Returns the table id; both players
        receive ``seated`` and ``game_start`` events on every socket they have.
        Raises ProtocolError: ``same_player``, ``bad_field`` (match_length),
        ``already_seated`` (``field`` names the player's slot: ``first``/``second``).
        """
        length = check_new_table(mode, match_length, tournament_id, (first, second),
                                 max_match_length=self.settings.max_match_length,
                                 by_player=False)
        persistence = self.persistence
        table_id = self.new_table_id()
        taken: list[str] = []
        for slot, player in (("first", first), ("second", second)):
            held = await persistence.take_seat(player, table_id)
            if held is not None:
                for p in taken:
                    await persistence.release_seat(p, table_id)
                raise already_seated(held, player=player, field=slot)
            taken.append(player)
        seats: list[tuple[Actor, set[str]]] = []
        for i, player in enumerate((first, second)):
            nodes, address = await persistence.presence(player)
            if addresses is not None:
                address = addresses[i]
            name = names[i] if names is not None else player
            # A guest id can only come from a guest token; such a game is never rated.
            is_guest = player.startswith(GUEST_PREFIX)
            actor = Actor(player, name, is_guest, address or f"unknown-{player}", self.node_id,
                          "")
            seats.append((actor, set(nodes)))
        # The table is known here and in Redis before anyone hears of it: a player who syncs
        # the moment ``announce`` reaches them waits for the seating (see started) instead of
        # being told there is no such table.
        registry = self.registry
        with registry.starting(table_id):
            try:
                await self.claim_new(table_id)
                registry.remember_owner(table_id, self.node_id)
                first_seat, second_seat = (actor for actor, _ in seats)
                pair = (RatedPlayer(first_seat.player, first_seat.is_guest, first_seat.address,
                                    is_bot_id(first_seat.player)),
                        RatedPlayer(second_seat.player, second_seat.is_guest,
                                    second_seat.address, is_bot_id(second_seat.player)))
                limited = await self.pair_limit.limited(table_id, mode, length, pair)
                plan = plan_rating(mode, length, pair, pair_limited=limited)
                if announce is not None:
                    await announce(table_id, plan)
            except BaseException:
                # Nobody will sit at this table: free both seats, so that neither player is
                # held "already seated" at a table that does not exist.
                registry.forget_owner(table_id)
                for player in (first, second):
                    with contextlib.suppress(RedisError, OSError):
                        await persistence.release_seat(player, table_id)
                with contextlib.suppress(RedisError, OSError):
                    await persistence.release(table_id, done=True)
                raise
            table = self.new_table(table_id, mode, length, tournament_id, audience)
            table.seat_pair(seats, pair_limited=limited)
        await self.listing.publish(table)
        return table_id

    def new_table_id(self) -> str:
        return new_table_id()

    def new_table(
        self, table_id: str, mode: TableMode, match_length: int, tournament_id: str | None,
        audience: Audience | None = None,
    ) -> Table:
        """A table owned here (its record claimed already), in the node's registry;
        ``audience`` as :class:`~server.lobby.table.Table` takes it."""
        table = Table(self.deps, self.life, table_id=table_id, mode=mode,
                      match_length=match_length, tournament_id=tournament_id,
                      audience=audience)
        self.registry.add(table)
        return table

    async def create_table(self, actor: Actor, msg: CreateTable) -> None:
        """A player's ``create_table``: the checks and limits, then a new table here with
        the player seated; ``table_created`` answers."""
        settings = self.settings
        check_new_table(msg.mode, msg.match_length, msg.tournament_id, (actor.player,),
                        max_match_length=settings.max_match_length, by_player=True)
        open_here = sum(1 for t in self.registry.tables.values()
                        if t.status is TableStatus.OPEN)
        if open_here + self._creating >= settings.max_open_tables:
            raise ProtocolError(ErrorCode.TOO_MANY_TABLES, "too many open tables; join one")
        self._check_create_limits(actor)
        # Places in both caps are taken before the first await: concurrent requests count
        # each other. The address's place becomes the table's (creator_address) or is given
        # back below.
        address = network_key(actor.address)
        self.life.reserve_open(address)
        self._creating += 1
        try:
            table_id = self.new_table_id()
            held = await self.persistence.take_seat(actor.player, table_id)
            if held is not None:
                raise already_seated(held)
            try:
                await self.claim_new(table_id)
            except BaseException:
                with contextlib.suppress(RedisError, OSError):
                    await self.persistence.release_seat(actor.player, table_id)
                raise
        except BaseException:
            self.life.give_back_open(address)
            raise
        finally:
            self._creating -= 1
        table = self.new_table(table_id, msg.mode, msg.match_length, None)
        table.creator_address = address
        # Seated first, so the summary names its player; the reply still goes out before
        # the seated event (that waits until it is stored).
        table.seat_creator(actor)
        self.deps.delivery.reply(actor, {"type": "table_created", "ref": msg.ref,
                                         "table": table_id, "summary": table.summary()})
        for listener in self.life.listeners.seated:
            self.deps.tasks.spawn(listener([actor.player]))
        await self.listing.publish(table)

    def _check_create_limits(self, actor: Actor) -> None:
        """Tables one player and one address may create (a rate), and keep open at once."""
        if not self.settings.limits:
            return
        metrics = self.deps.metrics
        address = network_key(actor.address)
        if self.life.open_count(address) >= self.settings.max_open_tables_per_address:
            metrics.refused("open_tables_per_address")
            raise retry_later(ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"at most {self.settings.max_open_tables_per_address} open tables per address"),
                self.settings.decision_time)
        now = self.deps.clock.monotonic()
        for key, limit in (("p:" + actor.player, "table_create_per_player"),
                           ("a:" + address, "table_create_per_address")):
            wait = self._create_limit.take(key, now)
            if wait > 0:
                metrics.refused(limit)
                raise retry_later(ProtocolError(
                    ErrorCode.RATE_LIMITED, "creating tables too fast; retry later"), wait)

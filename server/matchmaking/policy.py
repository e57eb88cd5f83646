"""Matchmaking policy: pools, tickets, the widening window and the pairing pass. Pure.

Nothing here does I/O or knows about Redis or asyncio; :mod:`server.store.queue` feeds
these functions the tickets it reads and stores what they decide.

Pools (:data:`POOLS`)
    ``competitive``  one Competitive game, pairs and settles on the Table42 ladder (rated);
    ``match-1`` ``match-3`` ``match-5`` ``match-7``  a rated match to n points on the FIBS ladder;
    ``boosted``  one unrated Boosted game; pairs by the Table42 rating, guests welcome.

Window curve
    A ticket that has waited ``w`` seconds accepts opponents whose rating is within
    ``window(w) = min(cap, base + rate * w)`` of its own. Defaults: base 50, rate 10 points per
    second, cap 400 — the window starts at ±50, reaches ±200 after 15 s and its cap of ±400
    after 35 s. All three numbers live in :class:`MatchmakingSettings`.

Rules (:func:`acceptable`)
    * never a player against themselves;
    * in rated pools never a guest, and never two tickets from the same network (IPv4 address,
      or IPv6 /64 by default, see :func:`server.protocol.ids.network_key`);
    * the rating gap must lie within BOTH players' current windows, so a newcomer is never
      handed a far-off opponent just because that opponent has waited long: the pair forms
      once the newer ticket's window has grown to the gap too;
    * on the FIBS ladder a player still "new" (experience under 10) may pair with anyone: the
      window is waived when either side is new (the other rules still hold).

Pairing pass (:func:`plan_pass`)
    Closest rating first: among all acceptable pairs of one pool it repeatedly takes the pair
    with the smallest rating gap whose players are both still free (ties: lower rating first).
    Tickets are sorted by rating; each keeps a cursor to its nearest acceptable free neighbour
    above it (tickets of "new" players look below as well), and a heap orders those candidate
    pairs by gap. Cursors skip paired tickets through a path-compressed "next free" table,
    and each ticket may skip at most ``scan_limit`` unacceptable neighbours per pass, so a pass
    costs O(n log n + n * scan_limit) whatever the pool looks like. The result is a maximal
    greedy matching as long as no ticket exhausts its ``scan_limit``.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from rating_plugin import fibs
from server.matchmaking.errors import (
    GuestNotAllowedError,
    InRankedGameError,
    InvalidTicketError,
    UnknownPoolError,
)
from server.protocol.ids import network_key

__all__ = [
    "DEFAULT_SETTINGS",
    "MAX_ADDRESS_LENGTH",
    "MAX_PLAYER_LENGTH",
    "MAX_RATING",
    "NEW_PLAYER_EXPERIENCE",
    "POOLS",
    "SAME_NETWORK",
    "GameMode",
    "MatchmakingSettings",
    "Pairing",
    "PassPlan",
    "Pool",
    "Ticket",
    "TicketStatus",
    "acceptable",
    "admit",
    "is_eligible",
    "is_window_waived",
    "pairing_note",
    "plan_pass",
    "pool_by_id",
    "ticket_status",
    "wait_for_gap",
    "window",
]

RatingLadder = Literal["table42", "fibs"]

NEW_PLAYER_EXPERIENCE: int = fibs.NEW_PLAYER_EXPERIENCE
"""FIBS experience below which a player is shown as "new": 10 (docs/rating-engine.md)."""

MAX_PLAYER_LENGTH = 64
MAX_ADDRESS_LENGTH = 128
MAX_NODE_LENGTH = 64
MAX_TICKET_ID_LENGTH = 64
MAX_RATING = 1_000_000.0
"""Ratings are checked to lie within ±MAX_RATING; real ones sit in the low thousands."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class GameMode(StrEnum):
    """What a pool starts once two players are paired."""

    COMPETITIVE = "competitive"
    RATED_MATCH = "rated_match"
    BOOSTED = "boosted"


@dataclass(frozen=True, slots=True)
class Pool:
    """One matchmaking queue.

    ``ladder`` is the rating the pool pairs by (and settles on when ``is_rated``);
    ``match_length`` is 1 for a single game.
    """

    id: str
    mode: GameMode
    ladder: RatingLadder
    match_length: int
    title: str

    @property
    def is_rated(self) -> bool:
        """Rated pools change a rating: no guests, no two accounts from one network."""
        return self.mode is not GameMode.BOOSTED

    @property
    def is_fibs(self) -> bool:
        return self.ladder == "fibs"


POOLS: tuple[Pool, ...] = (
    Pool("competitive", GameMode.COMPETITIVE, "table42", 1, "Competitive single game"),
    Pool("match-1", GameMode.RATED_MATCH, "fibs", 1, "Rated match to 1 point"),
    Pool("match-3", GameMode.RATED_MATCH, "fibs", 3, "Rated match to 3 points"),
    Pool("match-5", GameMode.RATED_MATCH, "fibs", 5, "Rated match to 5 points"),
    Pool("match-7", GameMode.RATED_MATCH, "fibs", 7, "Rated match to 7 points"),
    Pool("boosted", GameMode.BOOSTED, "table42", 1, "Boosted single game (unrated)"),
)
_POOLS_BY_ID: dict[str, Pool] = {pool.id: pool for pool in POOLS}


def pool_by_id(pool_id: object) -> Pool:
    """The pool called ``pool_id``; raises :class:`UnknownPoolError` (field ``pool``) otherwise."""
    if isinstance(pool_id, str):
        pool = _POOLS_BY_ID.get(pool_id)
        if pool is not None:
            return pool
    known = ", ".join(_POOLS_BY_ID)
    shown = repr(pool_id)[:40]
    raise UnknownPoolError(f"pool: unknown pool {shown}; pools are {known}", field="pool")


def admit(pool_id: object, *, is_guest: bool, in_ranked_game: bool) -> Pool:
    """Check that a player may queue in ``pool_id`` and return the pool.

    Raises, in this order: :class:`UnknownPoolError`, :class:`InRankedGameError` (the caller
    knows whether the player sits in a ranked game or rated match), :class:`GuestNotAllowedError`
    (a guest asking for a rated pool).
    """
    pool = pool_by_id(pool_id)
    if in_ranked_game:
        raise InRankedGameError(
            "you are in a ranked game; finish it before queueing again", field="pool"
        )
    if is_guest and pool.is_rated:
        raise GuestNotAllowedError(
            f"pool: {pool.id} is rated and needs an account; guests may queue in boosted",
            field="pool",
        )
    return pool


@dataclass(frozen=True, slots=True)
class MatchmakingSettings:
    """Tunable numbers of the policy. Rating points and seconds.

    ``window_base`` + ``window_rate`` * waited, capped at ``window_cap``, is a ticket's window.
    ``new_players_pair_anyone`` waives the window for FIBS "new" players.
    ``ticket_ttl`` drops tickets that waited longer (``None``: never).
    ``scan_limit`` bounds how many unacceptable neighbours one ticket skips per pass.
    ``ipv6_prefix`` is the IPv6 network length counted as one "network address".
    """

    window_base: float = 50.0
    window_rate: float = 10.0
    window_cap: float = 400.0
    new_players_pair_anyone: bool = True
    ticket_ttl: float | None = 1800.0
    scan_limit: int = 64
    ipv6_prefix: int = 64

    def __post_init__(self) -> None:
        for name in ("window_base", "window_rate", "window_cap"):
            value = getattr(self, name)
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}: must be a finite number >= 0, got {value!r}")
        if self.window_cap < self.window_base:
            raise ValueError(
                f"window_cap: must be >= window_base ({self.window_base}), got {self.window_cap}"
            )
        if self.ticket_ttl is not None and (
            not _is_number(self.ticket_ttl)
            or not math.isfinite(self.ticket_ttl)
            or self.ticket_ttl <= 0
        ):
            raise ValueError(f"ticket_ttl: must be a number > 0 or None, got {self.ticket_ttl!r}")
        if not isinstance(self.scan_limit, int) or self.scan_limit < 1:
            raise ValueError(f"scan_limit: must be an integer >= 1, got {self.scan_limit!r}")
        if not isinstance(self.ipv6_prefix, int) or not 0 <= self.ipv6_prefix <= 128:
            raise ValueError(f"ipv6_prefix: must be an integer 0..128, got {self.ipv6_prefix!r}")

    @property
    def seconds_to_cap(self) -> float:
        """Waiting time after which the window stops widening."""
        if self.window_rate == 0:
            return 0.0
        return (self.window_cap - self.window_base) / self.window_rate


DEFAULT_SETTINGS = MatchmakingSettings()


def window(waited: float, settings: MatchmakingSettings = DEFAULT_SETTINGS) -> float:
    """Rating window (± points) of a ticket that has waited ``waited`` seconds.

    ``min(cap, base + rate * waited)``; a negative wait (clock skew between nodes) counts as 0.
    """
    widened = settings.window_base + settings.window_rate * max(0.0, waited)
    return min(settings.window_cap, widened)


def wait_for_gap(gap: float, settings: MatchmakingSettings = DEFAULT_SETTINGS) -> float | None:
    """Seconds a ticket must wait before its window covers ``gap``; ``None`` beyond the cap."""
    gap = abs(gap)
    if gap <= settings.window_base:
        return 0.0
    if gap > settings.window_cap or settings.window_rate == 0:
        return None
    return (gap - settings.window_base) / settings.window_rate


def _check_text(name: str, value: object, *, limit: int, allow_empty: bool = False) -> None:
    if not isinstance(value, str):
        raise InvalidTicketError(f"{name}: must be a string", field=name)
    if not value and not allow_empty:
        raise InvalidTicketError(f"{name}: must not be empty", field=name)
    if len(value) > limit:
        raise InvalidTicketError(f"{name}: at most {limit} characters", field=name)
    if not value.isprintable():
        raise InvalidTicketError(f"{name}: must be printable text", field=name)


@dataclass(frozen=True, slots=True)
class Ticket:
    """One player waiting in one pool.

    ``rating`` is the player's rating on the pool's ladder (guests and unrated players pass
    the ladder's start rating, 1500); ``queued_at`` is epoch seconds; ``address`` the network
    address the player connects from; ``is_new`` is FIBS experience below
    :data:`NEW_PLAYER_EXPERIENCE` (only FIBS pools look at it); ``node`` the server node holding
    the player's connection; ``ticket_id`` tells two tickets of the same player apart.
    ``name`` (display name, default the player id), ``experience`` (FIBS) and
    ``recent_games`` (Table42 games in the last 7 days) are snapshots taken at queue time for
    the "match found" message and its stake preview; the pairing rules do not read them.
    Construction checks every field and raises :class:`InvalidTicketError` naming it.
    """

    player: str
    pool: str
    rating: float
    queued_at: float
    address: str
    is_guest: bool = False
    is_new: bool = False
    node: str = ""
    ticket_id: str = ""
    name: str = ""
    experience: int | None = None
    recent_games: int | None = None

    def __post_init__(self) -> None:
        # One cheap test passes the common case (every field fine: a pass may decode 10,000
        # tickets); the field-by-field checks below only run to name the field at fault.
        rating, queued_at, experience, recent = (
            self.rating,
            self.queued_at,
            self.experience,
            self.recent_games,
        )
        if (
            type(self.player) is str
            and 0 < len(self.player) <= MAX_PLAYER_LENGTH
            and type(self.pool) is str
            and self.pool in _POOLS_BY_ID
            and type(rating) in (int, float)
            and -MAX_RATING <= rating <= MAX_RATING
            and type(queued_at) in (int, float)
            and 0 <= queued_at < math.inf
            and type(self.address) is str
            and 0 < len(self.address) <= MAX_ADDRESS_LENGTH
            and type(self.is_guest) is bool
            and type(self.is_new) is bool
            and type(self.node) is str
            and len(self.node) <= MAX_NODE_LENGTH
            and type(self.ticket_id) is str
            and len(self.ticket_id) <= MAX_TICKET_ID_LENGTH
            and type(self.name) is str
            and len(self.name) <= MAX_PLAYER_LENGTH
            and (experience is None or (type(experience) is int and 0 <= experience <= 10**9))
            and (recent is None or (type(recent) is int and 0 <= recent <= 10**9))
            and (self.player + self.address + self.node + self.ticket_id + self.name).isprintable()
        ):
            return
        self._check_fields()

    def _check_fields(self) -> None:
        _check_text("player", self.player, limit=MAX_PLAYER_LENGTH)
        pool_by_id(self.pool)
        if not _is_number(self.rating) or not math.isfinite(self.rating):
            raise InvalidTicketError("rating: must be a finite number", field="rating")
        if abs(self.rating) > MAX_RATING:
            raise InvalidTicketError(f"rating: must lie within ±{MAX_RATING:g}", field="rating")
        if not _is_number(self.queued_at) or not math.isfinite(self.queued_at):
            raise InvalidTicketError("queued_at: must be a finite number", field="queued_at")
        if self.queued_at < 0:
            raise InvalidTicketError("queued_at: must be epoch seconds >= 0", field="queued_at")
        _check_text("address", self.address, limit=MAX_ADDRESS_LENGTH)
        for name in ("is_guest", "is_new"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidTicketError(f"{name}: must be true or false", field=name)
        _check_text("node", self.node, limit=MAX_NODE_LENGTH, allow_empty=True)
        _check_text("ticket_id", self.ticket_id, limit=MAX_TICKET_ID_LENGTH, allow_empty=True)
        _check_text("name", self.name, limit=MAX_PLAYER_LENGTH, allow_empty=True)
        for name in ("experience", "recent_games"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10**9
            ):
                raise InvalidTicketError(f"{name}: must be an integer >= 0", field=name)

    @property
    def display_name(self) -> str:
        """The name shown to the opponent: ``name``, else the player id."""
        return self.name or self.player

    def waited(self, now: float) -> float:
        """Seconds waited at ``now`` (never negative)."""
        return max(0.0, now - self.queued_at)


@dataclass(frozen=True, slots=True)
class TicketStatus:
    """What a waiting player sees: the ticket, seconds waited, the window (± rating points)
    now, and the seconds until it stops widening."""

    ticket: Ticket
    waited: float
    window: float
    seconds_to_cap: float


def ticket_status(
    ticket: Ticket, now: float, settings: MatchmakingSettings = DEFAULT_SETTINGS
) -> TicketStatus:
    """The status of ``ticket`` at ``now``."""
    waited = ticket.waited(now)
    return TicketStatus(
        ticket=ticket,
        waited=waited,
        window=window(waited, settings),
        seconds_to_cap=max(0.0, settings.seconds_to_cap - waited),
    )


SAME_NETWORK = "same_network"
"""The ``note`` of a waiting player's status when everyone else waiting in the rated pool
plays from the player's own network (never paired for rated play, whatever the window)."""


def pairing_note(
    pool: Pool, ticket: Ticket, waiting: Iterable[Ticket],
    settings: MatchmakingSettings = DEFAULT_SETTINGS,
) -> str | None:
    """Why ``ticket`` cannot be paired with anyone in ``waiting`` (the pool's tickets) when
    the reason is not the rating window: :data:`SAME_NETWORK` in a rated pool where every
    other eligible ticket comes from the ticket's network; else None."""
    if not pool.is_rated:
        return None
    mine = network_key(ticket.address, ipv6_prefix=settings.ipv6_prefix)
    others = [network_key(t.address, ipv6_prefix=settings.ipv6_prefix) for t in waiting
              if t.player != ticket.player and is_eligible(pool, t)]
    return SAME_NETWORK if others and all(net == mine for net in others) else None


def is_eligible(pool: Pool, ticket: Ticket) -> bool:
    """Whether ``ticket`` may be paired in ``pool`` at all (a guest never in a rated pool)."""
    return ticket.pool == pool.id and not (pool.is_rated and ticket.is_guest)


def is_window_waived(
    pool: Pool, a: Ticket, b: Ticket, settings: MatchmakingSettings = DEFAULT_SETTINGS
) -> bool:
    """On the FIBS ladder a "new" player may pair with anyone: no rating window applies."""
    return settings.new_players_pair_anyone and pool.is_fibs and (a.is_new or b.is_new)


def acceptable(
    pool: Pool,
    a: Ticket,
    b: Ticket,
    now: float,
    settings: MatchmakingSettings = DEFAULT_SETTINGS,
) -> bool:
    """Whether ``a`` and ``b`` may be paired in ``pool`` at ``now``.

    Different players, both eligible (:func:`is_eligible`), different networks in rated pools
    (:func:`network_key`), and a rating gap within both windows unless
    :func:`is_window_waived`.
    """
    if a.player == b.player or not is_eligible(pool, a) or not is_eligible(pool, b):
        return False
    if pool.is_rated and network_key(a.address, ipv6_prefix=settings.ipv6_prefix) == network_key(
        b.address, ipv6_prefix=settings.ipv6_prefix
    ):
        return False
    if is_window_waived(pool, a, b, settings):
        return True
    gap = abs(a.rating - b.rating)
    return gap <= window(now - a.queued_at, settings) and gap <= window(
        now - b.queued_at, settings
    )


@dataclass(frozen=True, slots=True)
class Pairing:
    """Two tickets to start a game between; ``first`` has the lower (or equal) rating."""

    first: Ticket
    second: Ticket

    @property
    def gap(self) -> float:
        return abs(self.second.rating - self.first.rating)

    @property
    def players(self) -> tuple[str, str]:
        return (self.first.player, self.second.player)


@dataclass(frozen=True, slots=True)
class PassPlan:
    """What one pairing pass over one pool decided.

    ``pairs`` in the order chosen (smallest gap first); ``expired`` tickets waited longer than
    ``ticket_ttl``; ``rejected`` tickets can never pair in this pool (a guest in a rated pool,
    or a stale second ticket of a player); ``waiting`` counts the tickets left in the pool.
    """

    pool: Pool
    now: float
    pairs: tuple[Pairing, ...]
    expired: tuple[Ticket, ...] = ()
    rejected: tuple[Ticket, ...] = ()
    waiting: int = 0
    scan_exhausted: int = 0


def plan_pass(
    pool: Pool,
    tickets: Iterable[Ticket],
    now: float,
    settings: MatchmakingSettings = DEFAULT_SETTINGS,
) -> PassPlan:
    """Pair the tickets of ``pool`` at ``now``: disjoint pairs, smallest rating gap first.

    Needs tickets of ``pool`` only (else ValueError naming ``pool``). Promises: every pair is
    :func:`acceptable` at ``now``; no player appears twice (of several tickets of one player
    only the latest counts, the others are ``rejected``); the pairs are chosen greedily by
    gap, so no unpaired acceptable pair had a smaller gap than a chosen one when it was
    chosen, and no two leftover tickets are acceptable to each other unless one of them used
    up its ``scan_limit`` (counted in ``scan_exhausted``).
    """
    latest: dict[str, Ticket] = {}
    rejected: list[Ticket] = []
    for ticket in tickets:
        if ticket.pool != pool.id:
            raise ValueError(f"pool: ticket of {ticket.player!r} is for {ticket.pool!r}")
        held = latest.get(ticket.player)
        if held is None:
            latest[ticket.player] = ticket
        elif (ticket.queued_at, ticket.ticket_id) > (held.queued_at, held.ticket_id):
            rejected.append(held)
            latest[ticket.player] = ticket
        else:
            rejected.append(ticket)

    ttl = settings.ticket_ttl
    expired: list[Ticket] = []
    live: list[Ticket] = []
    no_guests = pool.is_rated
    for ticket in latest.values():
        if ttl is not None and now - ticket.queued_at > ttl:
            expired.append(ticket)
        elif no_guests and ticket.is_guest:
            rejected.append(ticket)
        else:
            live.append(ticket)

    live.sort(key=_rating_order)
    pairs, exhausted = _greedy_pairs(pool, live, now, settings)
    return PassPlan(
        pool=pool,
        now=now,
        pairs=tuple(pairs),
        expired=tuple(expired),
        rejected=tuple(rejected),
        waiting=len(live) - 2 * len(pairs),
        scan_exhausted=exhausted,
    )


_rating_order = operator.attrgetter("rating", "queued_at", "player")


def _greedy_pairs(
    pool: Pool, live: list[Ticket], now: float, settings: MatchmakingSettings
) -> tuple[list[Pairing], int]:
    """Greedy smallest-gap matching over ``live`` (sorted by rating). See the module docstring."""
    n = len(live)
    if n < 2:
        return [], 0
    ratings = [t.rating for t in live]
    base, rate, cap = settings.window_base, settings.window_rate, settings.window_cap
    windows = [min(cap, base + rate * max(0.0, now - t.queued_at)) for t in live]
    waive = settings.new_players_pair_anyone and pool.is_fibs
    anyone = [t.is_new for t in live] if waive else [False] * n
    has_anyone = any(anyone)
    prefix = settings.ipv6_prefix
    # Outside rated pools every ticket gets its own "network", so the check never bites.
    networks: list[object]
    if pool.is_rated:
        networks = [network_key(t.address, ipv6_prefix=prefix) for t in live]
    else:
        networks = list(range(n))
    limit = settings.scan_limit

    paired = bytearray(n)
    # Path-compressed "next free index at or after k" (up) and "at or before k" (down; index
    # shifted by one so that slot 0 stands for the sentinel -1 below the first ticket).
    up = list(range(1, n + 2))
    down = list(range(-2, n - 1))
    budget_up = [limit] * n
    budget_down = [limit] * n
    cursor_up = list(range(1, n + 1))
    cursor_down = list(range(-1, n - 1))
    exhausted = 0

    def free_up(k: int) -> int:
        root = k
        while root < n and paired[root]:
            root = up[root]
        while k != root and k < n:
            following = up[k]
            up[k] = root
            k = following
        return root

    def free_down(k: int) -> int:
        root = k
        while root >= 0 and paired[root]:
            root = down[root + 1]
        while k != root and k >= 0:
            following = down[k + 1]
            down[k + 1] = root
            k = following
        return root

    def scan_up(i: int) -> int:
        """Next free acceptable ticket above ``i``, or -1; moves i's upward cursor there."""
        nonlocal exhausted
        rating_i, window_i, any_i, network_i = ratings[i], windows[i], anyone[i], networks[i]
        budget = budget_up[i]
        j = free_up(cursor_up[i])
        while j < n:
            gap = ratings[j] - rating_i
            if not any_i and gap > window_i:
                break  # only "new" tickets further up could still fit; they look down
            if networks[j] != network_i and (any_i or anyone[j] or gap <= windows[j]):
                cursor_up[i] = j
                budget_up[i] = budget
                return j
            budget -= 1
            if budget <= 0:
                exhausted += 1
                break
            j = free_up(j + 1)
        cursor_up[i] = n
        budget_up[i] = budget
        return -1

    def scan_down(i: int) -> int:
        """Next free acceptable ticket below a "new" ticket ``i``, or -1."""
        nonlocal exhausted
        network_i = networks[i]
        budget = budget_down[i]
        j = free_down(cursor_down[i])
        while j >= 0:
            if networks[j] != network_i:
                cursor_down[i] = j
                budget_down[i] = budget
                return j
            budget -= 1
            if budget <= 0:
                exhausted += 1
                break
            j = free_down(j - 1)
        cursor_down[i] = -1
        budget_down[i] = budget
        return -1

    # Heap entries: (gap, low index, high index, owner, direction); direction 1 = owner looks
    # up, -1 = owner looks down. Stale entries are re-scanned when they surface.
    heap: list[tuple[float, int, int, int, int]] = []
    append = heap.append
    for i in range(n - 1):
        # Fast path for the common case: the next ticket up is acceptable.
        gap = ratings[i + 1] - ratings[i]
        if (
            networks[i + 1] != networks[i]
            and (gap <= windows[i] or anyone[i] or anyone[i + 1])
            and (gap <= windows[i + 1] or anyone[i] or anyone[i + 1])
        ):
            append((gap, i, i + 1, i, 1))
        else:
            j = scan_up(i)
            if j >= 0:
                append((ratings[j] - ratings[i], i, j, i, 1))
    if has_anyone:
        for i in range(1, n):
            if anyone[i]:
                j = scan_down(i)
                if j >= 0:
                    append((ratings[i] - ratings[j], j, i, i, -1))
    heapq.heapify(heap)

    pairs: list[Pairing] = []
    heappop, heappush = heapq.heappop, heapq.heappush
    while heap:
        gap, low, high, owner, direction = heappop(heap)
        if paired[owner]:
            continue
        if direction == 1:
            if paired[high]:
                j = scan_up(owner)
                if j >= 0:
                    heappush(heap, (ratings[j] - ratings[owner], owner, j, owner, 1))
                continue
        elif paired[low]:
            j = scan_down(owner)
            if j >= 0:
                heappush(heap, (ratings[owner] - ratings[j], j, owner, owner, -1))
            continue
        paired[low] = 1
        paired[high] = 1
        pairs.append(Pairing(live[low], live[high]))
    return pairs, exhausted

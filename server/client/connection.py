"""The asyncio client: one WebSocket to a Table42 node, spoken as PROTOCOL.md says.

A reader task receives every frame, so the server never sees a slow consumer. Each message:

1. answers the pending request whose ``id`` it carries as ``ref`` (:meth:`Client.request`);
2. updates the table it is about (:attr:`Client.tables`: last version ``v`` and ``state``,
   unless ``track_tables`` is off); a versioned event already seen (``v`` not above the
   table's) is dropped as a duplicate;
3. goes, typed (:func:`~server.client.wire.parse_event`), to :meth:`Client.next_event`
   (unless ``queue_events`` is off), is kept in :attr:`Client.messages` when
   ``keep_messages`` is set, and is handed to ``on_message`` (a plain function called by
   the reader, for clients that react to every message themselves, as the benchmarks do).

**No gap, no repeat** (PROTOCOL.md §5): the versioned events of a table are handed on in
order, each once (:mod:`server.client.catch_up` says how).

**Reconnects.** When the socket drops without :meth:`Client.close` (a node restart, a
network fault) and ``auto_reconnect`` is on, the client connects again with the same
token and format, to the next of its ``urls`` after a close 1001/1012 (the node is going
away), a silent node or a failed attempt, or where ``choose_url`` says, and sends ``sync``
for every table it plays at or watches from the last version it saw. A close with 1008
(policy) or 4001 (the token ended) is not retried.

**A silent node.** A node can stop answering with its socket still open (paused, stuck,
cut off behind a proxy): nothing closes the socket. So the client asks the node for
keep-alives (PROTOCOL.md §1: an ``alive`` at least every 2 s while nothing else comes, not
handed on), sends an application ``ping`` whenever it has heard nothing for a third of
``silence_timeout`` (a node that sends no keep-alives)
(10 s by default), and when it has heard nothing at all for ``silence_timeout`` it drops the
socket and reconnects as after a close 1001 (to the next of ``urls``), then catches up with
``sync``. The node's ``pong`` answers are not handed on. ``silence_timeout=None`` turns this
off (the WebSocket-level ``ping_interval`` still closes a dead socket, after about twice it).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from server.client.accounts import (
    ClientError,
    ConnectionLost,
    Refused,
    RequestFailed,
    RequestTimeout,
    guest_token,
    http_base,
    login,
    post_json,
    register,
)
from server.client.catch_up import CatchUp, TableView
from server.client.commands import Commands
from server.client.pacing import SendPace
from server.client.requests import Requests
from server.client.resend import (
    UNAVAILABLE_RETRIES,
    UNAVAILABLE_RETRY_FOR,
)
from server.client.silence import watch_silence
from server.client.wire import (
    TABLE_EVENTS,
    Event,
    Format,
    Message,
    Welcome,
    decode,
    encode,
    parse_event,
)
from server.protocol.lean import PROTOCOL_LEAN

log = logging.getLogger(__name__)

# The errors and account calls (server.client.accounts) are importable from here too.
__all__ = [
    "Client",
    "ClientError",
    "ConnectionLost",
    "Refused",
    "RequestFailed",
    "RequestTimeout",
    "TableView",
    "guest_token",
    "http_base",
    "login",
    "post_json",
    "register",
]

REQUEST_TIMEOUT = 10.0
MAX_FRAME = 4 * 1024 * 1024
"""Largest frame accepted from the server (a state with many legal plays is a few KiB)."""
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY = 1008
CLOSE_SERVICE_RESTART = 1012
CLOSE_TOKEN_ENDED = 4001
NO_RETRY_CLOSES = frozenset({CLOSE_POLICY, CLOSE_TOKEN_ENDED})
"""Closes after which reconnecting with the same token cannot help."""
MOVE_CLOSES = frozenset({CLOSE_GOING_AWAY, CLOSE_SERVICE_RESTART})
"""Closes that say the node is going away: reconnect to another of ``urls``."""
SILENCE_TIMEOUT = 10.0
"""Seconds without a frame from the node after which it counts as silent (see above)."""
STABLE_CONNECTION = 5.0
"""A socket that stayed open this long (s) starts the reconnect back-off afresh."""


class Client(CatchUp, Commands):
    """One authenticated (or, with ``token=None``, unauthenticated) socket. Build it with
    :meth:`connect`. Not thread-safe: one event loop drives it."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        fmt: Format = Format.JSON,
        headers: Mapping[str, str] | None = None,
        hello: bool = False,
        request_timeout: float = REQUEST_TIMEOUT,
        auto_reconnect: bool = True,
        max_reconnects: int = 8,
        urls: Sequence[str] = (),
        choose_url: Callable[[Client], str | Awaitable[str]] | None = None,
        catch_up: bool = True,
        sync_retry_for: float = 30.0,
        unavailable_retries: int = UNAVAILABLE_RETRIES,
        unavailable_retry_for: float = UNAVAILABLE_RETRY_FOR,
        keep_messages: bool = False,
        queue_events: bool = True,
        on_message: Callable[[Message], None] | None = None,
        track_tables: bool = True,
        ping_interval: float | None = 20.0,
        silence_timeout: float | None = SILENCE_TIMEOUT,
        protocol: int = PROTOCOL_LEAN,
        full_states: bool = True,
        pace: bool = True,
    ) -> None:
        self.url = url
        # Where to reconnect: the next of ``urls`` (``url`` first) after a close 1001/1012
        # or a failed attempt; ``choose_url(client)``, when given, decides instead.
        self.urls: list[str] = list(dict.fromkeys([url, *urls]))
        self.choose_url = choose_url
        self.token = token
        self.format = Format(fmt)
        self.headers = dict(headers or {})
        self.hello = hello
        self.request_timeout = request_timeout
        self.auto_reconnect = auto_reconnect
        self.max_reconnects = max_reconnects  # attempts in a row before giving up
        # Sync on a gap (an event or a resume ahead of the next version expected), and
        # send a refused sync again for at most ``sync_retry_for`` seconds.
        self.catch_up = catch_up
        self.sync_retry_for = sync_retry_for
        # Send a request refused ``unavailable`` with ``retry_after`` again after that wait,
        # at most ``unavailable_retries`` times and ``unavailable_retry_for`` seconds of
        # waits in all (0: never).
        self.unavailable_retries = unavailable_retries
        self.unavailable_retry_for = unavailable_retry_for
        self.keep_messages = keep_messages
        self.queue_events = queue_events
        self.on_message = on_message
        self.track_tables = track_tables
        self.ping_interval = ping_interval
        # An application ping when the node is quiet; reconnect when it stays silent.
        self.silence_timeout = silence_timeout
        # The table-event form asked for (PROTOCOL.md §5.1): 2, change-only (the default),
        # or 1, the whole state in every event. In form 2 the client keeps each table's
        # state by applying the changes; with ``full_states`` each change-only event it
        # hands on also carries that state under ``state``, as form 1 would have sent it.
        self.protocol = protocol
        self.full_states = full_states
        # Keep the server's message rate (server.client.pacing): every frame waits for a
        # token of the client's own bucket. Off only for tests and benchmarks of the limit.
        self.pace = pace
        self.pacing = SendPace(0.0)
        self._send_lock = asyncio.Lock()
        self.rate_refusals = 0  # rate_limited refusals received (each request sent again)
        self.ws: ClientConnection | None = None
        self.welcome: Welcome | None = None
        self.player = ""
        self.messages: list[Message] = []
        self.tables: dict[str, TableView] = {}
        self.close_code: int | None = None
        self.reconnects = 0  # reconnects that succeeded
        self.arrived = asyncio.Event()
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        self.requests = Requests(self.send)
        self._reader: asyncio.Task[None] | None = None
        self._welcomed: asyncio.Future[Welcome] | None = None
        self._closing = False
        self._lost = False
        self._gone = False  # gave up reconnecting: next_event raises ConnectionLost
        self._background: set[asyncio.Task[Any]] = set()
        self._reconnecting = False
        self._opening = False
        self._auto: asyncio.Task[None] | None = None
        self._connected = False  # a socket is open and authenticated (welcomed)
        self._generation = 0  # sockets opened so far
        self._opened_at = 0.0
        self._streak = 0  # reconnect attempts since the last stable socket
        self._up = asyncio.Event()
        self._heard_at = 0.0  # loop time of the last frame received
        self._silent = False  # the last socket was dropped because its node went silent
        self.silences = 0  # sockets dropped because their node went silent

    # --- connecting ------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        url: str,
        token: str | None = None,
        *,
        guest: bool = False,
        fmt: Format | str = Format.JSON,
        headers: Mapping[str, str] | None = None,
        hello: bool = False,
        wait_welcome: bool = True,
        **options: Any,
    ) -> Client:
        """Open a socket to ``url`` (``ws://host:port/ws``) with ``token`` (as a bearer
        header, or in a ``hello`` message when ``hello``), or as a new guest when ``guest``.
        Waits for ``welcome`` unless ``wait_welcome`` is False or there is no token.
        ``options`` go to the constructor (``auto_reconnect``, ``urls``, ``request_timeout``
        ...); with ``urls``, the first of ``url``, ``urls`` that accepts is used."""
        if guest and token is None:
            token = await guest_token(url)
        client = cls(url, token=token, fmt=Format(fmt), headers=headers, hello=hello,
                     **options)
        for i, candidate in enumerate(client.urls):
            client.url = candidate
            try:
                await client._open(wait_welcome=wait_welcome and token is not None)
                break
            except ConnectionLost:
                if i == len(client.urls) - 1:
                    raise
                log.info("%s does not answer, trying the next node", candidate)
        return client

    def _ws_url(self) -> str:
        url = self.url
        if self.format is Format.MSGPACK:
            url += ("&" if "?" in url else "?") + "format=msgpack"
        # For a bearer-header socket (no hello): the event form, PROTOCOL.md §5.1, and the
        # node's keep-alives for the silence watch (§1).
        url += ("&" if "?" in url else "?") + f"protocol={self.protocol}"
        return url + "&keepalive=1" if self.silence_timeout is not None else url

    async def _open(self, *, wait_welcome: bool) -> None:
        """Open a socket to :attr:`url`. Raises :class:`ConnectionLost` when it cannot be
        opened or closes before ``welcome``, :class:`ClientError` when refused (HTTP 401)."""
        headers = dict(self.headers)
        if self.token is not None and not self.hello:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            self.ws = await ws_connect(self._ws_url(), additional_headers=headers,
                                       max_size=MAX_FRAME, compression=None,
                                       open_timeout=self.silence_timeout or 30,
                                       ping_interval=self.ping_interval)
        except websockets.InvalidStatus as exc:  # 401 auth_failed for a bad bearer token
            raise Refused(f"{self.url} refused the connection: HTTP "
                          f"{exc.response.status_code}", exc.response.status_code) from exc
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            raise ConnectionLost(f"cannot connect to {self.url}: {exc!r}") from exc
        self.close_code = None
        self._lost = False
        self._opening = True  # a close before welcome is this call's failure, not a loss
        self._generation += 1
        loop = asyncio.get_running_loop()
        self._opened_at = self._heard_at = loop.time()
        self.pacing.restart(self._opened_at)
        self._silent = False
        self._welcomed = loop.create_future()
        self._reader = asyncio.create_task(self._read_loop(self.ws))
        if self.silence_timeout is not None:
            self._spawn(self._watch_silence(self.ws, self._reader, self.silence_timeout))
        try:
            if self.hello and self.token is not None:
                await self.send({"type": "hello", "token": self.token,
                                 "protocol": self.protocol,
                                 "keepalive": self.silence_timeout is not None})
            if wait_welcome:
                waiting: set[asyncio.Future[Any]] = {self._welcomed, self._reader}
                done, _ = await asyncio.wait(
                    waiting, timeout=self.request_timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if self._welcomed not in done:
                    with contextlib.suppress(Exception):
                        await self.ws.close()
                    raise ConnectionLost(f"no welcome from {self.url} "
                                         f"(close {self.close_code})")
            if self._lost:
                raise ConnectionLost(f"{self.url} closed the socket at once "
                                     f"({self.close_code})")
        except asyncio.CancelledError:
            # Given up before welcome: nothing reads this socket any more, so it goes now
            # (a close handshake could wait on a server that stopped reading).
            self._reader.cancel()
            self.ws.transport.abort()
            raise
        finally:
            self._opening = False
        self._connected = True
        self._gone = False
        self._up.set()

    async def reconnect(self, url: str | None = None) -> None:
        """Open a new socket (same token, format and headers; to ``url`` when given), then
        ``sync`` every table this client plays at or watches from the last version it saw.
        Live events wait until each ``sync`` has delivered what was missed. Raises
        :class:`ConnectionLost` (or :class:`ClientError`, refused) when it cannot connect."""
        current = asyncio.current_task()
        if self._auto is not None and self._auto is not current and not self._auto.done():
            self._auto.cancel()  # this reconnect replaces the automatic one
        if self._reader is not None and not self._reader.done():
            self._reconnecting = True
            try:
                with contextlib.suppress(Exception):
                    assert self.ws is not None
                    await self.ws.close()
                with contextlib.suppress(Exception):
                    await self._reader
            finally:
                self._reconnecting = False
        if url is not None:
            self.url = url  # (``urls`` stays as given: the list to move along)
        resuming = [view for view in self.tables.values()
                    if view.seated or view.watching or view.syncing]
        for view in resuming:
            view.syncing = True  # whatever the new socket brings waits for the sync
        await self._open(wait_welcome=self.token is not None)
        for view in resuming:
            if view.watching and not view.seated:
                await self.send({"type": "watch", "table": view.table})
            self._start_sync(view)

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a socket is open (an automatic reconnect may be under way). Raises
        :class:`ConnectionLost` once the client has given up or was closed, TimeoutError
        after ``timeout``."""
        async with asyncio.timeout(timeout):
            while not self._connected:
                if self._closing or self._gone or (
                        self.is_closed and (self._auto is None or self._auto.done())):
                    raise ConnectionLost(f"not connected (close {self.close_code})")
                self._up.clear()
                await self._up.wait()

    # --- the reader ------------------------------------------------------------------------

    async def _read_loop(self, ws: ClientConnection) -> None:
        loop = asyncio.get_running_loop()
        try:
            async for frame in ws:
                self._heard_at = loop.time()
                try:
                    message = self._decode(frame)
                except ValueError:
                    log.warning("undecodable frame from %s", self.url)
                    continue
                self._handle(message)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.close_code = ws.close_code
            self._lost = True
            self._connected = False
            self.requests.lose_all(self.close_code)
            self.arrived.set()
            if asyncio.get_running_loop().time() - self._opened_at >= STABLE_CONNECTION:
                self._streak = 0
            retry = (not self._closing and self.auto_reconnect and self.token is not None
                     and self.close_code not in NO_RETRY_CLOSES)
            if self._reconnecting or self._opening:
                pass  # reconnect() closed it and opens the next one, or _open fails
            elif retry:
                self._auto = self._spawn(self._reconnect_later())
            else:
                self._give_up()
            self._up.set()  # wake wait_connected, which looks again

    def _watch_silence(self, ws: ClientConnection, reader: asyncio.Task[None],
                       timeout: float) -> Awaitable[None]:
        """The silence watch of ``ws`` (``silence.py``): dropped when silent (no closing
        handshake: the node may not answer one), and the reader's end reconnects elsewhere."""

        def silent(seconds: float) -> None:
            log.warning("%s silent for %.0f s: reconnecting", self.url, seconds)
            self._silent = True
            self.silences += 1
            ws.transport.abort()

        return watch_silence(reader, timeout, heard_at=lambda: self._heard_at,
                             ping=lambda: self._write(ws, encode({"type": "ping"},
                                                                 self.format)),
                             silent=silent)

    def _give_up(self) -> None:
        self._gone = True
        self._events.put_nowait(None)  # next_event raises ConnectionLost
        self._up.set()

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _decode(self, frame: bytes | str) -> Message:
        """One received frame as a message (a subclass may check the frame itself)."""
        return decode(frame)

    async def _next_url(self, *, move: bool) -> str:
        """Where the next reconnect goes: ``choose_url``'s answer, else the next of
        ``urls`` when ``move`` (the node is going away, or did not answer), else here."""
        if self.choose_url is not None:
            chosen = self.choose_url(self)
            return await chosen if inspect.isawaitable(chosen) else chosen
        if move and len(self.urls) > 1:
            at = self.urls.index(self.url) if self.url in self.urls else -1
            return self.urls[(at + 1) % len(self.urls)]
        return self.url

    async def _reconnect_later(self) -> None:
        move = self.close_code in MOVE_CLOSES or self._silent
        first = True
        while self._streak < self.max_reconnects and not self._closing:
            # a node going away asks for a reconnect at once; then back off, 50 ms to 2 s
            delay = 0.0 if first and move else min(2.0, 0.05 * 2 ** self._streak)
            self._streak += 1
            await asyncio.sleep(delay)
            try:
                await self.reconnect(await self._next_url(move=move or not first))
                self.reconnects += 1
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # refused, unreachable, or choose_url failed
                log.info("reconnect to %s failed: %s", self.url, exc)
            first = False
        if not self._closing:
            self._give_up()

    def _handle(self, message: Message) -> None:
        kind = message.get("type")
        ref = message.get("ref")
        if (kind == "pong" and ref is None) or kind == "alive":
            return  # the answer to the silence watch's ping, a keep-alive: only a frame
        if kind == "welcome":
            event = parse_event(message)
            assert isinstance(event, Welcome)
            self.welcome = event
            self.player = event.player
            self.pacing.configure(event.limits)
            if self._welcomed is not None and not self._welcomed.done():
                self._welcomed.set_result(event)
        elif kind == "sync":
            events = message.get("events")
            if isinstance(events, list):  # the server charged this socket for them
                self.pacing.charge_sync(len(events), asyncio.get_running_loop().time())
        elif kind == "error" and message.get("code") == "rate_limited":
            self.rate_refusals += 1
            self.pacing.refused(asyncio.get_running_loop().time())
            if self.requests.answer(ref, message):
                # A request of the library's: it is sent again after ``retry_after``
                # (Requests.ask), so the refusal is no event of the application's.
                if self.keep_messages:
                    self.messages.append(message)
                self.arrived.set()
                return
        if self.keep_messages:
            self.messages.append(message)
        if self.on_message is not None:
            self.on_message(message)
        table = message.get("table")
        if not self.track_tables:
            if self.queue_events:
                self._events.put_nowait(parse_event(message))
        elif isinstance(table, str):
            self._table_message(table, message)
        elif self.queue_events:
            self._events.put_nowait(parse_event(message))
        if ref is not None:
            self.requests.answer(ref, message)
        self.arrived.set()

    # --- one table's events, in order, once --------------------------------------------------

    def _table_message(self, table: str, message: Message) -> None:
        """Keep the table's view, and pass on each versioned event once, in order, with no
        gap: events ahead of the next version, or a ``resume``/``watching`` ahead of the
        last one, start a ``sync``; live events wait until it has answered."""
        kind = message.get("type")
        view = self.tables.get(table)
        if view is None:
            view = self.tables[table] = TableView(table)
        state = message.get("state")
        v = message.get("v")
        if kind == "table_closed" and not isinstance(v, int):
            # Unversioned: the table's log was lost and it is gone (PROTOCOL.md §13).
            view.seated = view.watching = False
        elif kind in TABLE_EVENTS:
            self._live_event(view, message)
            return
        if kind == "table_rewound":
            # The table went back to version v (a store failover lost later ones): its
            # state replaces the view, whatever was seen after v.
            if isinstance(v, int) and isinstance(state, dict):
                view.v, view.state = v, state
        elif kind == "sync":
            self._synced(view, message)
        elif kind == "resume" or kind == "watching":
            if view.served(kind, v, state, self.catch_up):
                self._start_sync(view)
        elif kind == "table_created":
            view.seated = True
        if self.queue_events:
            self._events.put_nowait(parse_event(message))

    def _live_event(self, view: TableView, message: Message) -> None:
        if view.syncing:
            view.held.append(message)
            view.poke.set()
            return
        v = message.get("v")
        if self.catch_up and view.v > 0 and isinstance(v, int) and v > view.v + 1:
            view.held.append(message)  # a gap: fill it first
            self._start_sync(view)
            return
        self._deliver(view, message)

    def _deliver(self, view: TableView, message: Message) -> None:
        if view.apply(message, self.player, self.full_states) and self.queue_events:
            self._events.put_nowait(parse_event(message))

    # --- sending ---------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._reader is not None and self._reader.done()

    @property
    def connected(self) -> bool:
        """A socket is open (and welcomed); False while an automatic reconnect is under way."""
        return self._connected

    async def send(self, message: Mapping[str, Any]) -> None:
        """Send one message as it is (no ``id`` added). Raises :class:`ConnectionLost`
        when there is no open socket (one being reopened included)."""
        await self.send_raw(encode(message, self.format))

    async def send_raw(self, data: bytes | str) -> None:
        """Send one frame, when the message rate allows (``pace``)."""
        ws = self.ws
        if ws is None:
            raise ConnectionLost("not connected")
        try:
            # On the socket open now: should a reconnect open another while this waits for
            # its turn, the frame fails with the old one (ConnectionLost) and never goes out
            # on the new socket ahead of its ``hello``.
            await self._write(ws, data)
        except (websockets.ConnectionClosed, OSError) as exc:  # ConnectionResetError...
            raise ConnectionLost(f"send failed: {exc!r}") from exc

    async def _write(self, ws: ClientConnection | None, data: bytes | str) -> None:
        """Write ``data`` on ``ws`` (None: the socket open once a token is there), after
        the frames asked for before it, once the client's budget has a token for it."""
        async with self._send_lock:
            if self.pace:
                loop = asyncio.get_running_loop()
                while (wait := self.pacing.take(loop.time())) > 0:
                    await asyncio.sleep(wait)
            target = self.ws if ws is None else ws
            if target is None:
                raise ConnectionLost("not connected")
            await target.send(data)

    async def request(self, message: Mapping[str, Any], *,
                      timeout: float | None = None) -> Message:
        """Send ``message`` with a fresh ``id`` and return the answer carrying it as ``ref``.
        Raises :class:`RequestFailed` for an ``error`` answer, :class:`RequestTimeout` when
        none comes within ``timeout`` (default ``request_timeout``, per attempt),
        :class:`ConnectionLost` when the socket closes first.

        An answer ``unavailable`` with ``retry_after`` (PROTOCOL.md §8: the table's node did
        not answer, the table is changing hands, the store is away; nothing was done) is
        not final: the same request is sent again (a fresh ``id``) after ``retry_after``
        seconds, at most ``unavailable_retries`` times and ``unavailable_retry_for`` seconds
        of waiting in all; past that the last refusal is raised."""
        return await self.requests.request(
            message, timeout or self.request_timeout, retries=self.unavailable_retries,
            retry_for=self.unavailable_retry_for)

    async def _ask(self, message: Mapping[str, Any], timeout: float | None = None) -> Message:
        """:meth:`request` as the library itself uses it (a subclass may change ``request``):
        ``rate_limited`` waited out, no resend after ``unavailable`` (Requests.ask)."""
        return await self.requests.ask(message, timeout or self.request_timeout)

    # --- receiving -------------------------------------------------------------------------

    async def next_event(self, timeout: float | None = None) -> Event:
        """The next message (typed), in arrival order. Raises :class:`ConnectionLost` once
        the socket is gone for good, TimeoutError after ``timeout``."""
        async with asyncio.timeout(timeout):
            event = await self._events.get()
        if event is None:
            self._events.put_nowait(None)  # every later call fails the same way
            raise ConnectionLost(f"socket closed ({self.close_code})")
        return event

    async def wait_for(self, kind: str, *, table: str | None = None,
                       timeout: float | None = None) -> Event:
        """Skip events until one of type ``kind`` (about ``table``, when given)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.request_timeout)
        while True:
            event = await self.next_event(max(0.001, deadline - loop.time()))
            if event.type == kind and (table is None or event.raw.get("table") == table):
                return event

    # --- the current game ------------------------------------------------------------------

    def state(self, table: str) -> Message | None:
        view = self.tables.get(table)
        return None if view is None else view.state

    def side(self, table: str) -> int | None:
        """This player's side at ``table`` (from the latest state), or None."""
        view = self.tables.get(table)
        return None if view is None else view.side_of(self.player)

    def legal_plays(self, table: str) -> list[list[list[int]]]:
        """The legal plays of the current roll at ``table`` (``[]`` when not moving)."""
        view = self.tables.get(table)
        game = None if view is None else view.game()
        if game is None or game.get("phase") != "move":
            return []
        return list(game.get("legal_plays") or [])

    def my_turn(self, table: str) -> bool:
        """Whether ``table``'s latest state awaits this player's decision."""
        view = self.tables.get(table)
        game = None if view is None else view.game()
        return view is not None and game is not None and view.state is not None \
            and view.state.get("status") == "playing" \
            and game.get("to_act") == view.side_of(self.player)

    def forget(self, table: str) -> None:
        """Stop tracking ``table`` (its view and state), e.g. when its game is over; a
        long-running bot calls it so that ``tables`` does not grow with every game."""
        self.tables.pop(table, None)

    async def sync(self, table: str, since: int | None = None) -> Message:
        """Send ``sync`` for ``table`` from ``since`` (the last version seen when None); the
        first page's answer is returned, the later pages are fetched and delivered by the
        client (see the module docstring)."""
        view = self.tables.get(table)
        start = (view.v if view is not None else 0) if since is None else since
        return await self.request({"type": "sync", "table": table, "since": start})

    async def close(self) -> None:
        """Close the socket (no reconnect) and wait for the reader to end."""
        self._closing = True
        self._up.set()
        for task in list(self._background):  # reconnects and syncs under way
            if task is not asyncio.current_task():
                task.cancel()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader

    async def wait_closed(self, timeout: float = REQUEST_TIMEOUT) -> int | None:
        assert self._reader is not None
        async with asyncio.timeout(timeout):
            await asyncio.shield(self._reader)
        return self.close_code


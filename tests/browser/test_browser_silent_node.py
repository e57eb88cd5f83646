"""The page notices a silent node: carol's browser reaches the server through a proxy that
can go silent (as a paused node behind a balancer: its open connections say nothing more,
new ones reach a live server). The page pings, gives the silent socket up after about 10 s,
reconnects through the proxy and the game goes on to its end."""

from __future__ import annotations

import asyncio
import contextlib

# tests/browser is not on mypy's path (its conftest would clash with tests/server's).
from test_browser_play import (  # type: ignore[import-not-found]
    GAME_SEED,
    NewPlayer,
    StartServer,
    no_errors,
    play_game,
    scripted,
    sign_up,
)


class SilentProxy:
    """A TCP proxy on loopback to ``port``; :meth:`silence` makes every connection open at
    that moment go silent both ways (nothing read, nothing sent, never closed), as a paused
    node's sockets are. Connections made afterwards are forwarded as before."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server: asyncio.Server | None = None
        self.generation = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.writers: list[asyncio.StreamWriter] = []
        self.forever = asyncio.Event()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    def silence(self) -> None:
        self.generation += 1

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]
        born = self.generation
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst, born))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    born: int) -> None:
        with contextlib.suppress(OSError):
            while data := await src.read(65536):
                if self.generation != born:
                    await self.forever.wait()  # silent: read nothing more, send nothing
                dst.write(data)
                await dst.drain()
            if self.generation != born:
                await self.forever.wait()  # not even the close gets through
            dst.close()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for writer in self.writers:
            writer.close()
        if self.server is not None:
            self.server.close()


async def test_the_page_leaves_a_silent_node_and_plays_on(
    start_browser_server: StartServer, new_player: NewPlayer
) -> None:
    server = await start_browser_server(scripted(GAME_SEED))
    proxy = SilentProxy(server.port)
    await proxy.start()
    try:
        carol = await new_player(proxy.url + "/")
        dave = await new_player(server.url + "/")
        players = [carol, dave]
        for player, name in zip(players, ("carol", "dave"), strict=True):
            await sign_up(player, name)
        for player in players:
            await player.page.click(".pool[data-pool=competitive] button.queue-btn")
        for player in players:
            await player.page.wait_for_function(
                "() => window.__t42.view && window.__t42.view.state"
                " && window.__t42.view.state.game")
        await play_game(players, stop=lambda s: s["v"] >= 8)
        welcomes = len(carol.of_type("welcome"))

        proxy.silence()
        # Silent for 10 s: the page gives the socket up, then is online again through a new
        # connection.
        await carol.page.wait_for_function("() => window.__t42.socket.silences === 1",
                                           timeout=20_000)
        await carol.page.wait_for_selector("#conn[data-status=online]", timeout=20_000)
        await carol.page.wait_for_function("() => window.__t42.socket.ready")
        await play_game(players)
        await carol.page.wait_for_function("() => window.__t42.view.over !== null")
        assert len(carol.of_type("welcome")) == welcomes + 1
        assert carol.of_type("resume"), "no resume after reconnecting"
        no_errors(players)
    finally:
        await proxy.close()

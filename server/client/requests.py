"""The requests of one client that wait for their answers: each sent with a fresh ``id``, its
answer (the message carrying that ``ref``) handed to the waiting caller, refusals sent again
by the rules of ``server/client/resend.py``. Given only the client's ``send``; the client's
reader hands it every answer (:meth:`Requests.answer`) and the loss of the socket
(:meth:`Requests.lose_all`)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from server.client.accounts import ConnectionLost, RequestFailed, RequestTimeout
from server.client.resend import RATE_RETRIES, UnavailableResend, rate_retry_wait
from server.client.wire import Message, ServerError, parse_event

log = logging.getLogger("server.client.connection")


class Requests:
    """The client's requests awaiting an answer (see the module)."""

    def __init__(self, send: Callable[[Mapping[str, Any]], Awaitable[None]]) -> None:
        self._send = send
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._ids = itertools.count(1)

    async def request(self, message: Mapping[str, Any], timeout: float, *, retries: int,
                      retry_for: float) -> Message:
        """:meth:`ask`, and a refusal ``unavailable`` with ``retry_after`` sent again after
        it, at most ``retries`` times and ``retry_for`` seconds of waiting in all."""
        tries = 0
        waited = 0.0
        while True:
            try:
                return await self.ask(message, timeout)
            except RequestFailed as exc:
                wait = UnavailableResend(retries, retry_for).wait(exc.error.raw, tries, waited)
                if wait is None:
                    raise
                log.info("%s refused unavailable, sent again in %g s",
                         message.get("type"), wait)
            tries += 1
            waited += wait
            await asyncio.sleep(wait)

    async def ask(self, message: Mapping[str, Any], timeout: float) -> Message:
        """Send ``message`` and return its answer (:class:`RequestFailed` for an ``error``). A
        ``rate_limited`` refusal is waited out (its ``retry_after``) and the message sent
        again, with the same ``id``, at most ``RATE_RETRIES`` times."""
        ref = next(self._ids)
        retries = 0
        while True:
            answer = await self._ask_once(message, ref, timeout)
            wait = rate_retry_wait(answer)
            if wait is None or retries >= RATE_RETRIES:
                break
            retries += 1
            log.info("%s (id %s) refused rate_limited: sent again in %.1f s",
                     message.get("type"), ref, wait)
            await asyncio.sleep(wait)
        if answer.get("type") == "error":
            error = parse_event(answer)
            assert isinstance(error, ServerError)
            raise RequestFailed(error)
        return answer

    async def _ask_once(self, message: Mapping[str, Any], ref: int,
                        timeout: float) -> Message:
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[ref] = future
        try:
            await self._send({**message, "id": ref})
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise RequestTimeout(f"no answer to {message.get('type')} (id {ref})") from None
        finally:
            self._pending.pop(ref, None)

    @property
    def waiting(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._pending)

    def answer(self, ref: object, message: Message) -> bool:
        """``message`` answers the request ``ref``: handed to its caller. False when no
        request of these waits for it (an application's own ``id``, or too late)."""
        future = self._pending.pop(ref, None) if isinstance(ref, int) else None
        if future is None:
            return False
        if not future.done():
            future.set_result(message)
        return True

    def lose_all(self, close_code: int | None) -> None:
        """The socket closed: every waiting request fails with :class:`ConnectionLost`."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(f"socket closed ({close_code})"))
        self._pending.clear()

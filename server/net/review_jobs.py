"""Reviews computed in worker processes, once per game (``GET /api/games/{game_id}/review``).

A review takes seconds of CPU (each checker play searched as the top level plays): it never
runs on the event loop.
:class:`ReviewJobs` runs each in a process of its own pool (``review_workers`` processes,
started at the first review; 0: a thread, for tests and tiny hosts), at most one per
worker at a time, and:

- **once per game**: the requests for a game whose review is being computed (or waits for
  a worker) wait for that one computation (single flight); the route keeps the answer
  beside the record (``server/store/games.py``), so later requests, on any node, read it;
- **bounded**: at most ``review_queue_max`` games computed or waiting at once; past that
  :meth:`ReviewJobs.has_room` is false and the route answers 503 ``busy`` with
  ``Retry-After`` (:meth:`ReviewJobs.retry_after`);
- **abandoned work is dropped**: a request whose client went away stops waiting; a game
  nobody waits for any more is dropped if it has not reached a worker yet (counted in
  ``cancelled``); one already in a worker finishes and is kept (a later request finds it);
- **a dead worker is replaced**: a pool whose process died (killed, out of memory) is
  replaced by a new one and the review tried once more there (logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import multiprocessing
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import BrokenExecutor, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

from server.exits import leave_interrupts_to_parent

log = logging.getLogger(__name__)

POLL = 0.2
"""Seconds between two looks at whether a waiting request's client is still there."""
SECONDS_PER_REVIEW = 4.0
"""A review's usual time in a worker, for ``Retry-After`` (a game of 50 checker plays, each
searched two rolls deep: about 4 s of CPU)."""

Compute = Callable[[bytes, int], bytes]
"""A worker's function: the record's stored answer and its head's length in, the review's
answer out."""
Source = tuple[bytes, int]



REVIEW_NICENESS = 10
"""How much lower than the node's the review workers' scheduling priority is: on a machine
whose cores are all busy, the games' event loop runs before a review (a review only waits)."""


def lower_priority() -> None:
    """A review worker's first step (in the worker process): lower its priority, and leave
    Ctrl-C to the server."""
    leave_interrupts_to_parent()
    # Not on this platform, or not allowed: run as is.
    with contextlib.suppress(AttributeError, OSError):
        os.nice(REVIEW_NICENESS)


class Abandoned(Exception):
    """The client of a waiting request went away."""


@dataclass
class _Job:
    task: asyncio.Task[bytes | None] | None = None
    waiters: int = 0
    started: bool = False  # in a worker: it runs to its end


def _retrieve(task: asyncio.Task[bytes | None]) -> None:
    """A job's failure is its waiters' to handle (or nobody's, once they went away)."""
    if not task.cancelled():
        task.exception()


class ReviewJobs:
    """The review computations of this node (see the module docstring). ``compute`` runs in
    a worker (:data:`Compute`)."""

    def __init__(self, compute: Compute, *, workers: int, queue_max: int) -> None:
        self.compute = compute
        self.workers = workers
        self.queue_max = queue_max
        self.slots = asyncio.Semaphore(max(1, workers))
        self._executor: Executor | None = None
        self._jobs: dict[str, _Job] = {}
        self.computed = 0  # reviews computed by a worker on this node
        self.cancelled = 0  # games dropped before a worker took them (nobody waited)
        self.failed = 0

    def __len__(self) -> int:
        return len(self._jobs)

    def is_running(self, game_id: str) -> bool:
        """Whether ``game_id``'s review is being computed or waits for a worker."""
        return game_id in self._jobs

    def has_room(self, game_id: str) -> bool:
        """Whether a request for ``game_id``'s review may wait here (its game is already
        being computed, or the queue has room)."""
        return game_id in self._jobs or len(self._jobs) < self.queue_max

    def retry_after(self) -> float:
        """Seconds until the queue has likely room again."""
        return math.ceil(len(self._jobs) / max(1, self.workers)) * SECONDS_PER_REVIEW

    def _pool(self) -> Executor:
        if self._executor is None:
            if self.workers > 0:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=lower_priority)
            else:
                self._executor = ThreadPoolExecutor(max_workers=1,
                                                    thread_name_prefix="review")
        return self._executor

    async def result(self, game_id: str, head: Callable[[], Awaitable[Source | None]],
                     keep: Callable[[bytes], Awaitable[object]],
                     abandoned: Callable[[], bool]) -> bytes | None:
        """The review of ``game_id``: computed from ``head()`` (the stored record and its
        head's length, read once a worker is free; None: the record is gone) and handed to
        ``keep`` when done, or the answer of the computation already under way. Raises
        :class:`Abandoned` once ``abandoned()`` is true, ValueError when the game cannot be
        reviewed."""
        job = self._jobs.get(game_id)
        if job is None:
            job = _Job()
            job.task = asyncio.get_running_loop().create_task(
                self._run(game_id, job, head, keep))
            job.task.add_done_callback(_retrieve)
            self._jobs[game_id] = job
        task = job.task
        assert task is not None
        job.waiters += 1
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=POLL)
                if done:
                    return task.result()
                if abandoned():
                    raise Abandoned(game_id)
        finally:
            job.waiters -= 1
            if job.waiters == 0 and not job.started and not task.done():
                task.cancel()
                self.cancelled += 1
                if self._jobs.get(game_id) is job:
                    del self._jobs[game_id]

    async def _run(self, game_id: str, job: _Job,
                   head: Callable[[], Awaitable[Source | None]],
                   keep: Callable[[bytes], Awaitable[object]]) -> bytes | None:
        try:
            async with self.slots:
                source = await head()
                if source is None:
                    return None
                job.started = True
                answer = await self._compute(game_id, source)
                self.computed += 1
            try:
                await keep(answer)
            except Exception as exc:  # served anyway; a later request computes it again
                log.warning("game %s: its review could not be kept (%s)", game_id, exc)
            return answer
        except ValueError:
            self.failed += 1
            raise
        finally:
            if self._jobs.get(game_id) is job:
                del self._jobs[game_id]

    async def _compute(self, game_id: str, source: Source) -> bytes:
        loop = asyncio.get_running_loop()
        pool = self._pool()
        try:
            return await loop.run_in_executor(pool, self.compute, *source)
        except BrokenExecutor as exc:
            log.warning("game %s: the review worker died (%s); starting a new one", game_id,
                        exc)
            if self._executor is pool:
                self._executor = None
                pool.shutdown(wait=False, cancel_futures=True)
            return await loop.run_in_executor(self._pool(), self.compute, *source)

    def close(self) -> None:
        """Stop the workers (the node stops): queued work is dropped."""
        for job in list(self._jobs.values()):
            if job.task is not None:
                job.task.cancel()
        self._jobs.clear()
        if self._executor is not None:
            with contextlib.suppress(Exception):
                self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

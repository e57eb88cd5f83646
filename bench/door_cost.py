"""What the overload door costs a node that is not busy: one load sample (the timer's
callback, four a second by default) and the door's middleware on an HTTP request.

Run from the repository root: ``python3 bench/door_cost.py``. CPU time (``process_time``)
over many calls; the moves' path has no code of the door (docs/operations.md "Overload").
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.metrics import Metrics
from server.net.admission import Admission
from server.net.load import LoadLimits, LoadMeter
from server.net.load_watch import LoadWatch


class _Request:
    method = "GET"  # the door reads nothing else, and only while busy


async def _handler(request: Any) -> None:
    return None


async def main() -> None:
    loop = asyncio.get_running_loop()
    meter = LoadMeter(LoadLimits())
    watch = LoadWatch(meter, 0.25, Metrics())
    watch.start()
    samples = 20_000
    began = time.process_time()
    for _ in range(samples):
        watch._sample(loop)  # the callback itself, without the wait
    per_sample = (time.process_time() - began) / samples
    watch.stop()
    door = Admission(meter, Metrics()).middleware()
    request, calls = _Request(), 200_000
    began = time.process_time()
    for _ in range(calls):
        await door(request, _handler)  # type: ignore[arg-type]
    through = (time.process_time() - began) / calls
    began = time.process_time()
    for _ in range(calls):
        await _handler(request)
    bare = (time.process_time() - began) / calls
    print(f"one load sample: {per_sample * 1e6:.2f} µs of CPU "
          f"({per_sample * 4e6:.1f} µs a second at 4 samples a second)")
    print(f"the door on an HTTP request while calm: {(through - bare) * 1e6:.3f} µs")


if __name__ == "__main__":
    asyncio.run(main())

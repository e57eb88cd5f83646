"""Live tables as pure state machines (no asyncio, aiohttp or redis).

:class:`~server.tables.machine.TableMachine` holds a table's seats, game or match, clocks (as
data: :class:`~server.tables.machine.Deadline`), strikes and versioned events; commands go in
with the time as an argument and a :class:`~server.tables.machine.Step` comes out. The I/O
shell (``server.lobby.table.Table``) arms timers from the deadlines, stores the events, delivers
them and settles finished games.
"""

from server.tables.machine import (
    Deadline,
    FinishedGame,
    MachineSettings,
    Seat,
    Step,
    TableMachine,
    TableStatus,
)

__all__ = [
    "Deadline",
    "FinishedGame",
    "MachineSettings",
    "Seat",
    "Step",
    "TableMachine",
    "TableStatus",
]

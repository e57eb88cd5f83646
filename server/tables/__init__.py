"""Live tables as pure state machines (no asyncio, aiohttp or redis).

:class:`~server.tables.machine.TableMachine` holds a table's seats, game or match, clocks (as
data: :class:`~server.tables.machine.Deadline`), strikes and versioned events; commands go in
with the time as an argument and :class:`~server.tables.model.Effects` come out. The I/O
shell (``server.lobby.table.Table``) arms timers from the deadlines, stores the events, delivers
them and settles finished games.
"""

from server.tables.machine import (
    Deadline,
    Effects,
    FinishedGame,
    MachineSettings,
    Seat,
    Step,
    TableMachine,
    TableStatus,
)

__all__ = [
    "Deadline",
    "Effects",
    "FinishedGame",
    "MachineSettings",
    "Seat",
    "Step",
    "TableMachine",
    "TableStatus",
]

"""The layout is the architecture (docs/server.md, "Layout"): pure cores import no I/O library
and nothing of the shell; the shell's layers import downward only.

Checked on the source: every ``import`` statement of a module, those under
``if TYPE_CHECKING:`` included (a type hint upward is a dependency upward too), and no two
modules of the shell import each other, directly or in a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "server"

CORES = ("server.rules", "server.protocol", "server.matchmaking", "server.tables")
"""Pure cores: the rules, the wire protocol (codec, messages, change-only events, the
per-connection session), the matchmaking policy and the table state machine."""
PURE_MODULES = ("server.tournaments.bracket", "server.tournaments.spec",
                "server.tournaments.events", "server.ratelimit", "server.net.public_params",
                "server.net.addresses", "server.bot.strategy", "server.bot.evaluation",
                "server.bot.neural", "server.bot.cube", "server.bot.expert",
                "server.bot.review", "server.bot.train")
"""Pure modules that live beside the shell code of their part."""
IO_LIBRARIES = ("asyncio", "aiohttp", "redis", "websockets", "socket", "prometheus_client")

SHELL_ORDER = ("server.store", "server.cluster", "server.lobby", "server.net")
"""The shell's layers, lowest first: persistence and the node bus, the lobby with the table
driver and matchmaking (which declares the ports it needs, server/lobby/ports.py), then the
sockets (whose hub is the lobby's outbox), the WebSocket and HTTP handlers. A module may
import its own layer and the layers below it."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_imports(path: Path, *, top_level: bool = False) -> list[str]:
    """Modules ``path`` imports (``if TYPE_CHECKING:`` blocks included); ``top_level``: only
    the statements run when it is imported (not those inside functions)."""
    tree = ast.parse(path.read_text("utf-8"))
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if top_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append(node.module)
                found.extend(f"{node.module}.{alias.name}" for alias in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, list):
                    visit([c for c in child if isinstance(c, ast.stmt)]
                          + [s for h in child if isinstance(h, ast.ExceptHandler)
                             for s in h.body])

    visit(tree.body)
    return found


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer_of(name: str) -> int | None:
    best: tuple[int, int] | None = None
    for rank, package in enumerate(SHELL_ORDER):
        if within(name, package) and (best is None or len(package) > best[1]):
            best = (rank, len(package))
    return None if best is None else best[0]


SOURCES = sorted(p for p in SERVER.rglob("*.py") if "static" not in p.parts)


def test_the_folders_exist() -> None:
    for package in (*CORES, "server.store", "server.cluster", "server.lobby", "server.net"):
        assert (ROOT / package.replace(".", "/") / "__init__.py").is_file(), package


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_point_one_way(path: Path) -> None:
    name = module_name(path)
    imports = module_imports(path)
    pure = any(within(name, core) for core in CORES) or name in PURE_MODULES
    if pure:
        bad = [i for i in imports if i.split(".")[0] in IO_LIBRARIES
               or (i.startswith("server.") and not any(within(i, c) for c in CORES)
                   and i not in PURE_MODULES and not i.startswith(("server.rules",))
                   and layer_of(i) is not None)]
        assert not bad, f"{name} is a pure core but imports {bad}"
        return
    mine = layer_of(name)
    if mine is None:
        return  # the node's wiring (app, __main__, config) and parts above the shell
    upward = [i for i in imports if (theirs := layer_of(i)) is not None and theirs > mine]
    assert not upward, f"{name} imports a higher layer: {upward}"


def shell_graph() -> dict[str, set[str]]:
    """The shell's modules (everything under ``server`` but the pure cores) and the shell
    modules each imports at module level (``TYPE_CHECKING`` blocks included)."""
    paths = {module_name(p): p for p in SOURCES}
    shell = {name for name in paths
             if not any(within(name, core) for core in CORES) and name not in PURE_MODULES}
    graph: dict[str, set[str]] = {}
    for name in shell:
        targets: set[str] = set()
        for imported in module_imports(paths[name], top_level=True):
            # ``from a.b import c`` names a.b and a.b.c: the module is the longest known one.
            if imported in shell and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def test_no_import_cycle_in_the_shell() -> None:
    graph = shell_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert not cycles, "import cycles in the shell: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_lobby_never_imports_net() -> None:
    for path in SOURCES:
        name = module_name(path)
        if within(name, "server.lobby"):
            net = [i for i in module_imports(path) if within(i, "server.net")]
            assert not net, f"{name} imports {net}"

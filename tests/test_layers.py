"""The layout is the architecture (docs/server.md, "Layout"): pure cores import no I/O library
and nothing of the shell; the shell's layers import downward only.

Checked on the source: every ``import`` statement of a module, those under
``if TYPE_CHECKING:`` and inside functions included (a type hint or a lazy import upward is a
dependency upward too), relative ones by their absolute names; no two modules of the shell
import each other, directly or in a circle; and the lobby reaches net by no path.
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


def module_imports(path: Path) -> list[str]:
    """Modules ``path`` imports: every ``import`` statement, at module level, under ``if
    TYPE_CHECKING:`` or inside a function (a lazy import is a dependency too); a relative
    import by the absolute name it stands for."""
    tree = ast.parse(path.read_text("utf-8"))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package[:len(package) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                if base:
                    found.append(base)
                found.extend(f"{base}.{alias.name}" for alias in node.names)
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


def _impure() -> set[str]:
    """The modules under ``server`` that import an I/O library, or such a module, by any
    path (a pure module may import none of them)."""
    graph = import_graph()
    paths = {module_name(p): p for p in SOURCES}
    impure = {name for name in graph
              if any(i.split(".")[0] in IO_LIBRARIES for i in module_imports(paths[name]))}
    grew = True
    while grew:
        more = {name for name, targets in graph.items() if targets & impure} - impure
        impure |= more
        grew = bool(more)
    return impure


def test_the_folders_exist() -> None:
    for package in (*CORES, "server.store", "server.cluster", "server.lobby", "server.net"):
        assert (ROOT / package.replace(".", "/") / "__init__.py").is_file(), package


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_point_one_way(path: Path) -> None:
    name = module_name(path)
    imports = module_imports(path)
    pure = any(within(name, core) for core in CORES) or name in PURE_MODULES
    if pure:
        bad = [i for i in imports if i.split(".")[0] in IO_LIBRARIES or i in IMPURE]
        assert not bad, f"{name} is a pure core but imports {bad}"
        return
    mine = layer_of(name)
    if mine is None:
        return  # the node's wiring (app, __main__, config) and parts above the shell
    upward = [i for i in imports if (theirs := layer_of(i)) is not None and theirs > mine]
    assert not upward, f"{name} imports a higher layer: {upward}"


def import_graph(modules: set[str] | None = None) -> dict[str, set[str]]:
    """``modules`` (every module under ``server`` when None) and the modules of that set
    each imports, wherever the statement is (``TYPE_CHECKING`` blocks and functions
    included)."""
    paths = {module_name(p): p for p in SOURCES}
    chosen = set(paths) if modules is None else modules
    graph: dict[str, set[str]] = {}
    for name in chosen:
        targets: set[str] = set()
        for imported in module_imports(paths[name]):
            # ``from a.b import c`` names a.b and a.b.c: the module is the longest known one.
            if imported in chosen and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def shell_graph() -> dict[str, set[str]]:
    """The shell's modules (everything under ``server`` but the pure cores) and the shell
    modules each imports."""
    names = {module_name(p) for p in SOURCES}
    return import_graph({name for name in names
                         if not any(within(name, core) for core in CORES)
                         and name not in PURE_MODULES})


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
    # Nor through another module: no path in the import graph leads from the lobby to net.
    graph = import_graph()
    for start in sorted(n for n in graph if within(n, "server.lobby")):
        seen: set[str] = set()
        stack = [(start, [start])]
        while stack:
            name, path = stack.pop()
            for target in graph[name]:
                if within(target, "server.net"):
                    raise AssertionError(f"{start} reaches net: {' -> '.join([*path, target])}")
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))


IMPURE = _impure()
"""Computed once, when the module is collected."""

"""The modules import top-down: command line -> API -> runtime targets -> driver -> patterns ->
facts, with no import cycle, and the speed add-on (``lowering.fast``) reached from the core in one
place."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {ROOT / "lowering": "lowering", ROOT / "rules": "lowering.rules"}  # rules/ installs as lowering.rules


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found = {}
    for folder, package in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [part for part in path.relative_to(folder).with_suffix("").parts if part != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports, at its top or inside a function. The package
    itself (``from lowering import schemas`` reads ``lowering/__init__`` as it stands) is left out."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = name.split(".")[: None if is_package else -1]
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules.keys()
            found |= submodules or {target}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    # (a module of the package that is not there, as lowering.fast where it is deleted, is still named)
    return {module for module in found if module.startswith("lowering.")} - {name}


def import_graph() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports (a copy of its own to each
    test of the one graph read from the sources in the session)."""
    return {name: set(imported) for name, imported in _import_graph().items()}


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    modules = module_files()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    # The rules package is a plug-in: lowering.rules_package imports it on first need, so that
    # its modules register their patterns; nothing else of the core imports it.
    graph["lowering.rules_package"].discard("lowering.rules")
    return {name: frozenset(imported) for name, imported in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_a_cycle_is_found_where_there_is_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_speed_add_on_is_imported_by_the_core_in_one_place():
    importers = {
        module
        for module, imported in import_graph().items()
        if not module.startswith("lowering.fast") and any(m.startswith("lowering.fast") for m in imported)
    }
    assert importers == {"lowering.engine"}


def test_only_the_command_line_imports_the_command_line():
    for module, imported in import_graph().items():
        if not module.startswith("lowering.cli") and module != "lowering.__main__":
            assert not {m for m in imported if m.startswith("lowering.cli")}, module


def test_patterns_and_facts_do_not_import_the_driver_or_the_api():
    upper = ("lowering.api", "lowering.engine", "lowering.plain_path", "lowering.verification", "lowering.cli")
    below = {"lowering.schemas", "lowering.registry", "lowering.conversion.adapters"}
    for module, imported in import_graph().items():
        if module.startswith("lowering.rules") or module in below:
            reached = {m for m in imported if any(m == layer or m.startswith(layer + ".") for layer in upper)}
            assert not reached, (module, reached)


RUNTIME_TARGETS = {
    "lowering.target_lowering", "lowering.runtime_profiles", "lowering.node_forms", "lowering.target_forms",
    "lowering.value_kinds",
}  # fmt: skip


def test_the_runtime_target_layer_is_reached_from_the_api_and_the_command_line_alone():
    """--target sits between the API and the driver: the driver, the passes, the patterns and the
    facts import none of its modules (the docs generator reads the profiles for their table)."""
    importers = {
        module
        for module, imported in import_graph().items()
        if module not in RUNTIME_TARGETS and imported & RUNTIME_TARGETS
    }
    assert importers == {"lowering.api", "lowering.cli.check", "lowering.docs"}

"""The code's layout rules, checked from the source text: no import cycles (between modules, and
between the engine's parts: models, decoders, runtime, comm and the top-level modules), and no
module much over 400 lines."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("swiftspec_core", "swiftspec_bench")
MAX_LINES = 400


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of our packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Our modules that `name` imports anywhere in its text (lazy imports inside functions too:
    a cycle through a lazy import is still a cycle in the design)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from pkg import mod` imports the module pkg.mod; `from mod import f` imports mod.
            targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix
                       for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def unit(module: str) -> str:
    """The part of the code a module belongs to: swiftspec_core.decoders.tree -> swiftspec_core.decoders;
    top-level modules (swiftspec_core.cache) are parts of their own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, as a list of nodes (first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def graph_of(level) -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        # A package's __init__ re-exporting its own modules is not a dependency between parts.
        for dep in imports(name, path, known):
            a, b = level(name), level(dep)
            if a != b and not dep.startswith(name + ".") and not name.startswith(dep + "."):
                graph.setdefault(a, set()).add(b)
    return graph


def test_no_module_import_cycles():
    assert find_cycle(graph_of(lambda m: m)) is None


def test_no_import_cycles_between_parts():
    assert find_cycle(graph_of(unit)) is None


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_modules_stay_small():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"

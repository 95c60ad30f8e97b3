"""The boundaries of docs/architecture.md, checked: the import contracts in pyproject.toml
(import-linter), no import cycle between modules, and the size of a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert result.stdout.count("KEPT") >= 10
    assert "No two sibling packages import each other, at any depth KEPT" in result.stdout


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_modules_import_each_other() -> None:
    """Imports inside functions count: they hide a cycle from Python, not from the design."""
    graph = grimp.build_graph("switchboard", exclude_type_checking_imports=True)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    report = []
    for component in _cycles(imports):
        report.append("cycle: " + ", ".join(component))
        for importer in component:
            for imported in sorted(imports[importer] & set(component)):
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    line = f"{importer}:{detail['line_number']} {detail['line_contents']}"
                    report.append("  " + line)
    assert report == [], "\n".join(report)


def test_no_python_file_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for folder in ("src", "tests", "bench", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}

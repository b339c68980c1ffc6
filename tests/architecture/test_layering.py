"""The package's import direction, checked on the source (no imports are executed).

Layers, lowest first; a module may import its own part and any part of a lower layer, never
one of its own layer or above. Every project import sits at the top of its module, except
those of optional heavy dependencies (torch, ray), so the graph below is the whole story.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"parrotsim": "parrotsim", "sim": "parrotsim.sim", "policies": "parrotsim.policies",
           "workloads": "parrotsim.workloads", "calibrate": "parrotsim.calibrate",
           "kernels": "parrotsim.kernels", "reports": "parrotsim.reports"}
LAYERS = [
    ["parrotsim.core", "parrotsim.kernels"],
    ["parrotsim.workloads"],
    ["parrotsim.sim.model"],
    ["parrotsim.policies"],
    ["parrotsim.sim.harness"],
    ["parrotsim.calibrate", "parrotsim.reports"],
    ["parrotsim.api", "parrotsim.cli"],
]
RANK = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str | None:
    """The architectural part a module belongs to (longest matching prefix)."""
    best = None
    for part in RANK:
        if (module == part or module.startswith(part + ".")) and (best is None
                                                                   or len(part) > len(best)):
            best = part
    return best


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            rel = rel[:-1] if rel[-1] == "__init__" else rel
            found[".".join((package, *rel))] = path
    return found


KNOWN = modules()


def project_imports(path: Path, module: str) -> list[tuple[str, bool]]:
    """(imported project module, at module level) for every import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    for node in tree.body:  # type-only imports, and guarded ones, count as module-level
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            top |= {id(n) for n in node.body}
        if isinstance(node, ast.Try):  # runs at import time (parrotsim.entry's guard)
            top |= {id(n) for n in node.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the module's package
                parent = module.split(".")[: -node.level or None]
                base = ".".join([*parent, node.module] if node.module else parent)
            # ``from package import submodule`` imports the submodule
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in KNOWN else base
                     for a in node.names]
        else:
            continue
        found += [(n, id(node) in top) for n in names if n.split(".")[0] == "parrotsim"]
    return found


def dependency_edges() -> dict[tuple[str, str], list[str]]:
    """(importing part, imported part) -> the importing modules, across parts."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules().items():
        src = part_of(module)
        for target, _ in project_imports(path, module):
            dst = part_of(target)
            if src and dst and src != dst:
                edges.setdefault((src, dst), []).append(module)
    return edges


def test_every_module_belongs_to_a_part():
    orphans = [m for m in modules() if part_of(m) is None
               and m not in ("parrotsim", "parrotsim.__main__", "parrotsim.entry",
                             "parrotsim.sim")]
    assert not orphans


def test_imports_point_down_the_layers():
    edges = dependency_edges()
    print("\npackage dependencies (importer -> imported):")
    for src, dst in sorted(edges):
        print(f"  {src} -> {dst}  ({len(edges[src, dst])} modules)")
    upward = {f"{src} -> {dst}": mods for (src, dst), mods in edges.items()
              if RANK[dst] >= RANK[src]}
    assert not upward, f"imports against the layering: {upward}"


@cache
def needs_gpu_stack() -> set[str]:
    """Modules that import torch or triton at module level, directly or through another."""
    found = modules()
    heavy = {m for m, path in found.items()
             if any(isinstance(n, (ast.Import, ast.ImportFrom)) and
                    any(name.split(".")[0] in ("torch", "triton") for name in
                        ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]))
                    for n in ast.parse(path.read_text()).body)}
    grew = True
    while grew:
        grew = False
        for m, path in found.items():
            if m not in heavy and any(t in heavy and top for t, top in project_imports(path, m)):
                heavy.add(m)
                grew = True
    return heavy


@pytest.mark.parametrize("module", sorted(modules()))
def test_project_imports_sit_at_module_level(module):
    """Only modules that need torch (the ``gpu`` extra) may be imported inside a function."""
    heavy = needs_gpu_stack()
    late = [t for t, at_top in project_imports(modules()[module], module)
            if not at_top and t not in heavy]
    assert not late, f"{module} imports {late} inside a function"


def test_layering_check_catches_an_upward_import(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import os\n\ndef f():\n    from parrotsim.sim.harness import runner\n")
    found = project_imports(path, "parrotsim.sim.model.bad")
    assert found == [("parrotsim.sim.harness.runner", False)]
    assert RANK[part_of(found[0][0])] > RANK[part_of("parrotsim.sim.model.bad")]

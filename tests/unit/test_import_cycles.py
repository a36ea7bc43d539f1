"""No import cycle anywhere in the project's code, counting the imports made only for type checking.

Why beside import-linter's contracts (``tests/unit/test_import_rules.py``): those skip
``if TYPE_CHECKING:`` imports (they cost nothing at run time) and look for cycles inside three
packages only. A cycle through an annotation is still two modules that cannot be read, changed or
moved one without the other, and once one side needs the other at run time it is an import error
waiting for the right import order. Here the whole graph counts (grimp's, as import-linter builds
it, with the type-checking imports kept), in two ways: between modules, and between the packages
of each root squashed (``doccheck.ledger`` importing ``doccheck.pipeline`` and back is a circle
even when no two modules form one). A failure names the modules of each cycle.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import grimp

ROOTS = ("doccheck", "prefect_doccheck", "flows", "tasks")


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*ROOTS, exclude_type_checking_imports=False, cache_dir=None)


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(edges) | {w for targets in edges.values() for w in targets})
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges.get(root, ()))))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def module_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Each module of the roots and the modules of the roots it imports."""
    return {m: set(graph.find_modules_directly_imported_by(m)) & graph.modules for m in graph.modules}


def package_edges(graph: grimp.ImportGraph, root: str) -> dict[str, set[str]]:
    """The children of ``root`` (its subpackages and modules), each squashed with everything below
    it, and which other children each imports (``root``'s own ``__init__`` is above them all)."""

    def child(module: str) -> str | None:
        if not module.startswith(root + "."):
            return None
        return root + "." + module[len(root) + 1 :].split(".")[0]

    edges: dict[str, set[str]] = defaultdict(set)
    for module in graph.find_descendants(root):
        importer = child(module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = child(imported)
            if importer is not None and target is not None and target != importer:
                edges[importer].add(target)
    return edges


def _described(found: list[list[str]], what: str) -> str:
    return "\n".join(f"  {len(c)} {what}: {' <-> '.join(c)}" for c in found)


def test_no_cycle_between_modules() -> None:
    found = cycles(module_edges(_graph()))
    assert not found, "import cycles (TYPE_CHECKING imports count):\n" + _described(found, "modules")


def test_no_cycle_between_the_packages_of_a_root() -> None:
    graph = _graph()
    found = [c for root in ROOTS for c in cycles(package_edges(graph, root))]
    message = "import cycles between packages, each squashed (TYPE_CHECKING imports count):\n"
    assert not found, message + _described(found, "packages")


def test_the_cycle_finder_finds_a_cycle_and_only_one() -> None:
    """The finder itself: a triangle beside a chain is one cycle of three, a self-import none."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"e"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"x": {"y"}, "y": set()}) == []

"""No import cycle anywhere in ``autograder/``; the service's read side imports no grader
module; each sandbox module says which process runs it.

Imports are read with :mod:`ast` from every module under ``autograder/``, those
inside functions included (a lazy import still closes a cycle; it only hides
it until run time). Nothing is imported or run.
"""
import ast
import re

from tests.course import REPO

PACKAGE = "autograder"
SANDBOX = "autograder.sandbox"
PROCESSES = ("grader", "zygote", "supervisor", "learner")
# "Runs in the supervisor's process", "Runs in the grader's and the learner's processes"
SAYS_WHERE = re.compile(rf"\bruns in the ({'|'.join(PROCESSES)})'s\b", re.IGNORECASE)


def modules():
    """``{dotted name: path}`` of every module under ``autograder/`` (the exercises'
    ``hidden/samples/*.py`` are learners' answer cells, not modules)."""
    found = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if "samples" in parts:
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name, path, known):
    """Modules of ``known`` that the module ``name`` at ``path`` imports, anywhere in it.

    ``from P import x`` imports the module ``P.x`` when there is one, else ``P``
    itself. A package's own ``__init__`` run before a submodule is not counted:
    Python imports it first whatever the submodule says, so it closes no cycle.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {e for e in edges if e in known and e != name}


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph():
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_lazy_and_relative_imports():
    """The reader finds what the sandbox really imports (else the cycle test proves nothing)."""
    graph = import_graph()
    assert f"{SANDBOX}.supervisor" in graph[f"{SANDBOX}.zygote"]
    assert f"{SANDBOX}.learner" in graph[f"{SANDBOX}.supervisor"]  # imported in the forked child
    assert SANDBOX in graph["autograder.pipeline"]


def test_the_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], f"import cycle(s): {found}"


def test_the_reader_finds_a_cycle_closed_inside_a_function():
    graph = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert cycles(graph) == [["a", "b"]]


# The service's views read stored results through autograder.results alone.
VIEWS = ("autograder.service.api.app", "autograder.service.api.classroom",
         "autograder.service.gradebook.mirror",
         "autograder.service.class_views.class_page", "autograder.service.class_views.class_stats",
         "autograder.service.class_views.class_plots", "autograder.service.api.handler",
         "autograder.service.gradebook.recorded")
GRADER = ("autograder.pipeline", "autograder.judge", "autograder.load", SANDBOX)


def test_the_service_views_import_no_grader_module():
    graph = import_graph()
    for view in VIEWS:
        grader = sorted(m for m in graph[view] if m.startswith(GRADER))
        assert grader == [], f"{view} imports {grader}"


def test_each_sandbox_module_says_which_process_runs_it():
    for name, path in modules().items():
        if name == SANDBOX or name.startswith(SANDBOX + "."):
            doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
            opening = " ".join(" ".join(doc.split("\n\n")[:2]).split())
            assert SAYS_WHERE.search(opening), (
                f"{path.relative_to(REPO)}: the docstring's opening should say which "
                f"process runs it (\"Runs in the <{'|'.join(PROCESSES)}>'s process\")")


def test_the_sandbox_public_names_are_importable_from_the_package():
    """What the grader's callers use stays at ``autograder.sandbox`` whichever module defines it."""
    import autograder.sandbox as sandbox

    for name in ("run", "Limits", "Outcome", "import_paths", "protect", "Lease", "lease_uid",
                 "kill_uid", "Zygote", "shared"):
        assert hasattr(sandbox, name), f"autograder.sandbox.{name} is gone"

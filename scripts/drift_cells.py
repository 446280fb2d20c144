"""One lesson run without a notebook kernel: its code cells, in order, in this interpreter.

    python scripts/drift_cells.py book/lessons/state_tree.md OUT.json

is what ``scripts/drift.py --cells`` starts for each page, in a new interpreter per
page, where jupytext, nbclient and ipykernel are missing or a kernel cannot run (a
TPU machine lets no program open a TCP socket, not even on the loopback, and only
one program at a time may hold the chip). It reads the MyST notebook's code cells
itself, runs them in one namespace as a kernel would (a cell that raises is recorded
and the next one runs, as nbclient's ``allow_errors`` does), with stand-ins for what
a kernel gives a lesson:

* ``sys.last_value`` (and ``last_type``, ``last_traceback``, ``last_exc``) is the
  exception the last failing cell raised, as IPython keeps it;
* ``myst_nb.glue`` records each glued value as text (``repr``, or a
  ``_repr_mimebundle_``'s ``text/plain``), the text myst-nb's glue cache holds for the
  course's values (numbers, strings, booleans, figures' names);
* ``course_rules.publish`` is not needed (the records are read from the module), and
  ``course_rules.rule`` is wrapped to note, for a rule that does not hold, its
  condition and the values of its parts (only the parts that call nothing but a
  few pure functions are evaluated), so the report can say what was observed.

The run keeps going past a rule that does not hold (``COURSE_RULES_KEEP_GOING``,
which the caller sets) and writes ``OUT`` after every cell, so a page stopped at
its time limit still reports what it reached. Standard library only: it runs on any
interpreter that has the lessons' own packages.
"""
from __future__ import annotations

import ast
import builtins
import importlib.util
import io
import json
import linecache
import os
import platform
import re
import sys
import time
import traceback
import types
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
RULES_HELPER = "course_rules.py"  # beside the lessons; the landing page imports it as lessons.course_rules
CELL_FENCE = re.compile(r"^(`{3,})\{code-cell\}")
OPTION = re.compile(r"^:([\w-]+):\s*(.*)$")
SHOWN = 2000  # characters of a cell's output or a value kept in the record
# What a rule's condition may call for its parts to be evaluated again (pure reads).
PURE_CALLS = {"len", "str", "repr", "type", "int", "float", "bool", "sum", "sorted", "set", "list",
              "tuple", "dict", "frozenset", "abs", "round", "min", "max", "any", "all", "isinstance",
              "hasattr", "zip", "enumerate", "range"}
PURE_METHODS = {"is_deleted", "memory_stats", "startswith", "endswith", "keys", "values", "items",
                "get", "count", "index", "find", "strip", "split", "splitlines", "tolist", "item",
                "unsafe_buffer_pointer", "devices", "search", "match", "findall", "group",
                "fullmatch", "memory_analysis", "issubset", "issuperset", "intersection"}


class Cell(NamedTuple):
    source: str
    tags: list


def code_cells(path: Path) -> list[Cell]:
    """The code cells of MyST notebook ``path`` in order, with their tags (``:tags:``
    options or a ``---`` YAML block's ``tags:`` line), as jupytext reads them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cells, i = [], 0
    while i < len(lines):
        opened = CELL_FENCE.match(lines[i])
        i += 1
        if not opened:
            continue
        fence, options = opened.group(1), {}
        if i < len(lines) and lines[i].strip() == "---":
            i += 1
            while i < len(lines) and lines[i].strip() != "---":
                key, _, value = lines[i].partition(":")
                options[key.strip()] = value.strip()
                i += 1
            i += 1
        else:
            while i < len(lines) and OPTION.match(lines[i]):
                key, value = OPTION.match(lines[i]).groups()
                options[key] = value
                i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        tags = [t.strip().strip("'\"") for t in options.get("tags", "").strip("[]").split(",") if t.strip()]
        cells.append(Cell("\n".join(body).strip("\n"), tags))
    return cells


def plain_text(value) -> str:
    """The text a kernel shows for ``value``: a ``_repr_mimebundle_``'s ``text/plain``,
    else its ``repr``."""
    bundle = getattr(value, "_repr_mimebundle_", None)
    if callable(bundle):
        data = bundle()
        data = data[0] if isinstance(data, tuple) else data
        if "text/plain" in data:
            return data["text/plain"]
    return repr(value)


def _short(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN] + f"... ({len(text)} characters)"


# ------------------------------------------------------------------ what a rule that did not hold saw
def _pure(node: ast.AST) -> bool:
    """Whether evaluating ``node`` calls only :data:`PURE_CALLS` and :data:`PURE_METHODS`."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(sub, ast.Call):
            func = sub.func
            if not (isinstance(func, ast.Name) and func.id in PURE_CALLS
                    or isinstance(func, ast.Attribute) and func.attr in PURE_METHODS):
                return False
    return True


COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)


def _outside_comprehensions(node: ast.AST):
    """``node`` and what it holds, but not inside a comprehension (whose names are its own)."""
    yield node
    if not isinstance(node, COMPREHENSIONS):
        for child in ast.iter_child_nodes(node):
            yield from _outside_comprehensions(child)


def _parts(condition: ast.AST) -> list[ast.AST]:
    """The parts of a condition worth showing: the condition, the operands of its
    comparisons and boolean operators, the arguments of its pure calls (a generator
    as the list it yields); each only where it is pure and not a constant."""
    found = [condition]
    for node in _outside_comprehensions(condition):
        if isinstance(node, ast.Compare):
            found += [node.left, *node.comparators]
        elif isinstance(node, ast.BoolOp):
            found += node.values
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append(node.operand)
        elif isinstance(node, ast.Call) and _pure(node):
            found += node.args
    shown, seen = [], set()
    for node in found:
        if isinstance(node, ast.GeneratorExp):
            node = ast.copy_location(ast.ListComp(elt=node.elt, generators=node.generators), node)
        text = ast.unparse(node)
        if text in seen or isinstance(node, ast.Constant) or not _pure(node):
            continue
        seen.add(text)
        shown.append(node)
    return shown[:40]


def _rule_call(source: str, rule_id: str, line: int) -> ast.Call | None:
    """The ``rule(...)`` call in ``source`` for ``rule_id`` (or the one on ``line``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        isinstance(n.func, ast.Name) and n.func.id == "rule"
        or isinstance(n.func, ast.Attribute) and n.func.attr == "rule")]
    named = [c for c in calls if c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == rule_id]
    around = [c for c in calls if c.lineno <= line <= (c.end_lineno or c.lineno)]
    return (named or around or [None])[0]


def observed(frame, rule_id: str, sources: dict) -> dict:
    """The condition of the ``rule(rule_id, ...)`` call that ``frame`` is making, and
    the values of its parts evaluated again there."""
    call = _rule_call(sources.get(frame.f_code.co_filename, ""), rule_id, frame.f_lineno)
    if call is None:
        return {"condition": None, "values": {}}
    condition = call.args[2] if len(call.args) > 2 else next(
        (k.value for k in call.keywords if k.arg == "condition"), None)
    if condition is None:
        return {"condition": None, "values": {}}
    scope = {**frame.f_globals, **frame.f_locals}
    values = {}
    for part in _parts(condition):
        try:
            expression = ast.fix_missing_locations(ast.Expression(part))
            value = _short(repr(eval(compile(expression, "<observed>", "eval"), scope)))
        except Exception as err:  # a part that cannot be read again (a deleted array, say)
            value = f"raised {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        values[ast.unparse(part)] = value
    return {"condition": _short(ast.unparse(condition)), "values": values,
            "assigned": _assigned(sources.get(frame.f_code.co_filename, ""), call.lineno, scope)}


def _assigned(source: str, line: int, scope: dict) -> dict:
    """The plain values (numbers, strings, booleans, None, and short containers of them)
    of the names the cell assigned before ``line``, as they are now."""
    plain = (int, float, str, bool, type(None), tuple, list, dict, set)
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)) and node.lineno < line:
            targets = (node.targets if isinstance(node, ast.Assign) else [i.optional_vars for i in node.items]
                       if isinstance(node, ast.With) else [node.target])
            names += [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]
    shown = {}
    for name in dict.fromkeys(names):
        value = scope.get(name)
        if isinstance(value, plain) or type(value).__name__ in ("bool_", "int32", "int64", "float32", "float64"):
            shown[name] = repr(value)[:300]
    return dict(list(shown.items())[:40])


# ------------------------------------------------------------------ the run
def _stand_in_glue(found: dict) -> types.ModuleType:
    module = types.ModuleType("myst_nb")

    def glue(name, variable=None, display=True):
        found["glue"][name] = plain_text(variable)
        if display:
            print(found["glue"][name])

    module.glue = glue
    return module


def _rules_helper(page_dir: Path, found: dict, sources: dict, current: dict) -> types.ModuleType:
    """The lessons' ``course_rules`` (beside the page, or in ``lessons/`` below it),
    loaded once under both names, with ``rule`` noting what a broken rule saw."""
    helper = page_dir / RULES_HELPER
    if not helper.is_file():
        helper = page_dir / "lessons" / RULES_HELPER
    spec = importlib.util.spec_from_file_location("course_rules", helper)
    module = importlib.util.module_from_spec(spec)
    sys.modules["course_rules"] = sys.modules["lessons.course_rules"] = module
    spec.loader.exec_module(module)
    original = module.rule

    def rule(rule_id, statement, condition):
        held = bool(condition)
        found["calls"].append({"id": rule_id, "cell": current["cell"], "held": held})
        if not held:
            try:
                found["observed"][rule_id] = dict(observed(sys._getframe(1), rule_id, sources),
                                                  cell=current["cell"])
            except Exception as err:  # noting must never change the lesson's run
                found["observed"][rule_id] = {"error": f"{type(err).__name__}: {err}"}
        return original(rule_id, statement, held)

    def publish():
        found["published"] = True

    module.rule, module.publish = rule, publish
    return module


def _platform(found: dict) -> None:
    """Where the page's JAX ran (its backend is up by now), when the page imported JAX."""
    jax = sys.modules.get("jax")
    if jax is None:
        return
    try:
        devices = jax.devices()
        found.update(jax=jax.__version__, platform=jax.default_backend(),
                     device_kind=devices[0].device_kind, device_count=len(devices),
                     devices=[str(d) for d in devices][:16])
        import jaxlib
        found["jaxlib"] = jaxlib.__version__
    except Exception as err:  # a backend that did not start
        found["platform_error"] = f"{type(err).__name__}: {err}"[:SHOWN]


def run_page(path: Path, out: Path) -> dict:
    """Run every code cell of lesson ``path`` in order; write the record to ``out``
    after each cell and return it."""
    path, out = path.resolve(), out.resolve()
    page = (path.relative_to(REPO) if path.is_relative_to(REPO) else Path(path.name)).with_suffix("").as_posix()
    found = {"page": page, "python": platform.python_version(), "rules": [], "glue": {}, "errors": [],
             "calls": [], "observed": {}, "cells": [], "published": False, "finished": False}
    sources, current = {}, {"cell": None}
    os.chdir(path.parent)  # a kernel starts in the page's folder, and imports from it
    sys.path.insert(0, str(path.parent))
    sys.modules["myst_nb"] = _stand_in_glue(found)
    helper = _rules_helper(path.parent, found, sources, current)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main

    def write():
        found["rules"] = helper.records()
        out.write_text(json.dumps(found, indent=1))

    for index, cell in enumerate(code_cells(path)):
        name = f"<code cell {index}>"
        sources[name] = cell.source
        linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
        current["cell"] = index
        shown, started, error = io.StringIO(), time.monotonic(), None
        try:
            with redirect_stdout(shown), redirect_stderr(shown):
                exec(compile(cell.source, name, "exec"), main.__dict__)
        except (Exception, SystemExit) as err:
            # IPython keeps the last exception a cell raised there, and lessons read it
            sys.last_type, sys.last_value, sys.last_traceback = type(err), err, err.__traceback__
            if sys.version_info >= (3, 12):
                sys.last_exc = err
            first = str(err).splitlines()[0] if str(err) else ""
            error = {"ename": type(err).__name__, "evalue": first[:SHOWN],
                     "traceback": _short("".join(traceback.format_exception(err)[-6:]))}
            if "raises-exception" not in cell.tags:
                found["errors"].append(f"code cell {index}: {type(err).__name__}: {first}")
        found["cells"].append({"index": index, "tags": cell.tags, "seconds": round(time.monotonic() - started, 2),
                               "output": _short(shown.getvalue()), "error": error})
        write()
    _platform(found)
    found["finished"] = True
    write()
    return found


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    run_page(Path(args[0]), Path(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

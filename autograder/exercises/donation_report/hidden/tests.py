"""Hidden tests for ``donation_report(fn, state, *args)`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.exercises.donation_report.probe`) and compiles the same cases here, in
the grader's process, to know the right answer: the leaves of the state in
``jax.tree`` order, the items of the compiled module's ``input_output_alias``
(which parameter, so which state leaf, lands in which output index, so which
leaf of the step's output), and ``memory_analysis().alias_size_in_bytes``.
"""
import functools
import re

from autograder.feedback import fail, graded, where_text
from autograder.exercises.common import quiet
from autograder.exercises.donation_report.probe import CASES, make_case

CALL = "donation_report(fn, state, *args)"
LEAF_KEYS = ["aliased", "dtype", "nbytes", "output", "path", "shape"]
TOP_KEYS = ["aliased_bytes", "leaves", "total_bytes"]
# One item: "{output index}: (parameter number, {index in parameter}, kind)".
# A step with a single array output numbers it "{}".
ALIAS_ENTRY = re.compile(r"\{([0-9, ]*)\}: \((\d+), \{[0-9, ]*\}, [a-z-]+\)")


def _alias_items(header):
    """``{parameter number: output number}`` from a module header's ``input_output_alias``."""
    start = header.find("input_output_alias={")
    if start < 0:
        return {}
    depth, i = 0, header.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(header[i], 0)
        if depth == 0:
            return {int(param): int(out or 0)
                    for out, param in ALIAS_ENTRY.findall(header[start:i + 1])}
        i += 1


@functools.lru_cache(maxsize=None)
def truth(name, seed):
    """The right report for case ``name``, from a compile in this process."""
    import jax

    fn, state, args = make_case(name, seed)
    with quiet():
        compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    items = _alias_items(compiled.as_text().splitlines()[0])
    outputs = [jax.tree_util.keystr(path) for path, _ in
               jax.tree_util.tree_flatten_with_path(jax.eval_shape(fn, state, *args))[0]]
    leaves = [{"path": jax.tree_util.keystr(path), "shape": list(leaf.shape),
               "dtype": str(leaf.dtype), "nbytes": int(leaf.nbytes), "aliased": i in items,
               "output": outputs[items[i]] if i in items else None}
              for i, (path, leaf) in enumerate(jax.tree_util.tree_flatten_with_path(state)[0])]
    return {"leaves": leaves, "aliased_bytes": int(compiled.memory_analysis().alias_size_in_bytes),
            "total_bytes": sum(e["nbytes"] for e in leaves)}


def _what(name):
    return f"{CALL} on {CASES[name]}"


def _answer(obs, name, seed):
    """The learner's answer for one case, after checking it has the promised form."""
    record = obs["cases"][name]
    if record["error"] is not None:
        where = where_text(record.get("where"))
        got = f"it raised {record['error']}" + (f" at {where}" if where else "")
        if not any(leaf["aliased"] for leaf in truth(name, seed)["leaves"]):
            hint = ("nothing in this case is aliased, so its module header has no "
                    "input_output_alias entry at all: a search for it finds none")
        else:
            hint = ("this case has aliased leaves, so its header has an input_output_alias "
                    "entry: the error is elsewhere in your code; run the report on this case "
                    "in the notebook to see the traceback")
        fail(_what(name), "a report", got, hint)
    answer = record["answer"] or {}
    if answer.get("type") != "dict" or answer.get("keys") != TOP_KEYS:
        fail(_what(name), f"a dict with exactly the keys {', '.join(TOP_KEYS)}",
             f"a {answer.get('type')}" + (f" with keys {', '.join(answer['keys'])}"
                                          if answer.get("keys") is not None else ""))
    if answer["leaves"] is None:
        fail(_what(name), "a list under 'leaves'", f"a {answer['leaves_type']}")
    bad = [e for e in answer["leaves"] if e.get("keys") != LEAF_KEYS]
    if bad:
        got = bad[0].get("keys") or [f"a {bad[0].get('type')}"]
        fail(_what(name), f"one dict per leaf with exactly the keys {', '.join(LEAF_KEYS)}",
             f"an entry with {', '.join(got)}")
    want = truth(name, seed)["leaves"]
    if len(answer["leaves"]) != len(want):
        fail(_what(name), f"{len(want)} entries under 'leaves', one per leaf of the state",
             f"{len(answer['leaves'])}", "flatten the state with jax.tree_util.tree_flatten_with_path")
    return answer


def _cases(obs, seed, names):
    return [(name, _answer(obs, name, seed), truth(name, seed)) for name in names]


NONEMPTY = [n for n in CASES if n != "empty"]


@graded(1, "format: a dict with leaves, aliased_bytes and total_bytes")
def test_format(obs, seed):
    """The report is a dict with exactly the three keys, and `"leaves"` a list of dicts with
    exactly the six keys."""
    _cases(obs, seed, ["nested"])


@graded(1, "each leaf's path, shape, dtype and nbytes")
def test_leaf_descriptions(obs, seed):
    """Each leaf's `path`, `shape`, `dtype` and `nbytes` are right, in `jax.tree` order."""
    for name, answer, right in _cases(obs, seed, NONEMPTY):
        for i, (got, want) in enumerate(zip(answer["leaves"], right["leaves"])):
            for key in ("path", "shape", "dtype", "nbytes"):
                if got[key] != want[key]:
                    fail(f"{_what(name)}: entry {i} of 'leaves'",
                         f"{key} {want[key]!r} (leaf {want['path']}, in jax.tree order)",
                         f"{key} {got[key]!r}",
                         "path is jax.tree_util.keystr(key path), shape a tuple of ints, "
                         "dtype str(leaf.dtype), nbytes leaf.nbytes")


@graded(2, "aliased: exactly the leaves in input_output_alias")
def test_aliased_flags(obs, seed):
    """`aliased` is `True` exactly for the leaves whose parameter number appears in
    `input_output_alias`."""
    for name, answer, right in _cases(obs, seed, NONEMPTY):
        got = [e["aliased"] for e in answer["leaves"]]
        want = [e["aliased"] for e in right["leaves"]]
        if got != want:
            wrong = [f"{w['path']} should be {w['aliased']}, got {g}"
                     for g, w in zip(got, right["leaves"]) if g != w["aliased"]]
            fail(f"{_what(name)}: the 'aliased' flags", "True exactly for the leaves whose "
                 "parameter number appears in the compiled module's input_output_alias",
                 "; ".join(wrong),
                 "do not predict aliasing from shapes or dtypes: read the parameter "
                 "number (the first number inside the parentheses) of each alias entry")


@graded(2, "output: the output leaf that takes each aliased leaf's buffer")
def test_outputs(obs, seed):
    """`output` is the path of the output leaf each aliased leaf is written into, `None` for
    the others."""
    for name, answer, right in _cases(obs, seed, NONEMPTY):
        got = [e["output"] for e in answer["leaves"]]
        want = [e["output"] for e in right["leaves"]]
        if got != want:
            wrong = [f"{w['path']} should be {w['output']!r}, got {g!r}"
                     for g, w in zip(got, right["leaves"]) if g != w["output"]]
            fail(f"{_what(name)}: the 'output' entries", "for each aliased leaf, the key path "
                 "of the output leaf numbered by its alias entry's output index; None "
                 "for a leaf that is not aliased",
                 "; ".join(wrong),
                 "the output index (the number before the colon) counts the leaves of the "
                 "step's output in jax.tree order ({} when the output is a single array); "
                 "JAX pairs by shape and dtype, not by which input an output was computed from")


@graded(2, "aliased_bytes and total_bytes match the compiled module")
def test_byte_totals(obs, seed):
    """`aliased_bytes` equals `alias_size_in_bytes`, and `total_bytes` the sum of `nbytes`."""
    for name, answer, right in _cases(obs, seed, NONEMPTY):
        for key, source in (("aliased_bytes", "memory_analysis().alias_size_in_bytes"),
                            ("total_bytes", "the sum of the leaves' nbytes")):
            if answer[key] != right[key]:
                fail(f"{_what(name)}: '{key}'", f"{right[key]} ({source})",
                     f"{answer[key]!r}",
                     "sum nbytes over the aliased leaves, and over all leaves")


@graded(1, "empty tree: no leaves and zero bytes")
def test_empty_tree(obs, seed):
    """An empty tree gives no leaves and zero bytes."""
    [(name, answer, _)] = _cases(obs, seed, ["empty"])
    got = (answer["leaves"], answer["aliased_bytes"], answer["total_bytes"])
    if got != ([], 0, 0):
        fail(_what(name), "leaves [] with aliased_bytes 0 and total_bytes 0",
             f"leaves {got[0]!r}, aliased_bytes {got[1]!r}, total_bytes {got[2]!r}")


@graded(1, "the caller's state is left intact")
def test_state_untouched(obs, seed):
    """A report in the right format comes back, and no leaf of the caller's state is deleted
    afterwards."""
    # Evidence first: a report that never compiled the step proves nothing about it.
    _cases(obs, seed, ["nested"])
    for name in CASES:
        if obs["cases"][name]["state_deleted"]:
            fail(f"whether the caller's state is still readable after {_what(name)}",
                 "every leaf still readable (a report only compiles fn, it never runs it)",
                 "leaves of the state were deleted",
                 "call .lower(...).compile() on the jitted function; calling it donates the state")

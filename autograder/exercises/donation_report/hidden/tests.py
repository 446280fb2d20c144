"""Hidden tests for ``donation_report(fn, state, *args)`` (10 points).

Each test reads the probe observations (``obs``, see
:mod:`autograder.exercises.donation_report.probe`) and compiles the same cases here, in
the grader's process, to know the right answer: the leaves of the state in
``jax.tree`` order, the items of the compiled module's ``input_output_alias``
(which parameter, so which state leaf, lands in which output index, so which
leaf of the step's output), and ``memory_analysis().alias_size_in_bytes``.

Only ``test_format`` holds the report to its exact keys; every other check reads
the keys it needs, so one stray key costs the format's point alone. A check whose
keys are missing says "not checked" and names the format check. Hints state what
was observed (which leaf, which output, what the module says); the causes are
the page's and the lesson's to explain.
"""
import functools
import re

from autograder.feedback import fail, graded, where_text
from autograder.exercises.common import quiet
from autograder.exercises.donation_report.probe import CASES, make_case

CALL = "donation_report(fn, state, *args)"
LEAF_KEYS = ["aliased", "dtype", "nbytes", "output", "path", "shape"]
TOP_KEYS = ["aliased_bytes", "leaves", "total_bytes"]
FORMAT = "format: a dict with leaves, aliased_bytes and total_bytes"
# One item: "{output index}: (parameter number, {index in parameter}, kind)".
# A step with a single array output numbers it "{}".
ALIAS_ENTRY = re.compile(r"\{([0-9, ]*)\}: \((\d+), \{[0-9, ]*\}, [a-z-]+\)")
DONOR_ENTRY = re.compile(r"\((\d+), \{[0-9, ]*\}\)")
WHERE_EXPLAINED = ("the exercise page's section 'Reading the alias map', and the lesson "
                   "'Donating a state tree', sections 'The per-leaf alias map' and 'A leaf drops out'")


def _entry(header, key):
    """The text of ``key={...}`` in a module header ('' when absent); its braces nest
    one level deep (``{ {0}: (0, {}, may-alias) }``, ``{ (0, {}) }``)."""
    found = re.search(re.escape(key) + r"=\{(?:[^{}]|\{[^{}]*\})*\}", header)
    return found.group(0) if found else ""


def _alias_items(header):
    """``{parameter number: output number}`` from a module header's ``input_output_alias``."""
    return {int(param): int(out or 0)
            for out, param in ALIAS_ENTRY.findall(_entry(header, "input_output_alias"))}


@functools.lru_cache(maxsize=None)
def truth(name, seed):
    """The right report for case ``name``, from a compile in this process, with what
    the hints may cite: the output leaves' shapes and the ``buffer_donor`` parameters."""
    import jax

    fn, state, args = make_case(name, seed)
    with quiet() as warned:
        compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    header = compiled.as_text().splitlines()[0]
    items = _alias_items(header)
    donors = {int(p) for p in DONOR_ENTRY.findall(_entry(header, "buffer_donor"))}
    flat_out = jax.tree_util.tree_flatten_with_path(jax.eval_shape(fn, state, *args))[0]
    outputs = [jax.tree_util.keystr(path) for path, _ in flat_out]
    leaves = [{"path": jax.tree_util.keystr(path), "shape": list(leaf.shape),
               "dtype": str(leaf.dtype), "nbytes": int(leaf.nbytes), "aliased": i in items,
               "output": outputs[items[i]] if i in items else None, "donor": i in donors}
              for i, (path, leaf) in enumerate(jax.tree_util.tree_flatten_with_path(state)[0])]
    return {"leaves": leaves, "aliased_bytes": int(compiled.memory_analysis().alias_size_in_bytes),
            "total_bytes": sum(e["nbytes"] for e in leaves), "warnings": warned,
            "outputs": {path: f"{o.dtype}{list(o.shape)}"
                        for path, (_, o) in zip(outputs, flat_out)}}


def _what(name):
    return f"{CALL} on {CASES[name]}"


def _kind(leaf):
    return f"{leaf['dtype']}{leaf['shape']}"


def _raised(obs, name):
    record = obs["cases"][name]
    where = where_text(record.get("where"))
    return f"it raised {record['error']}" + (f" at {where}" if where else "")


def _answer(obs, name, seed, keys=(), lead=False):
    """The learner's answer for one case, with the top-level and leaf ``keys`` a check
    reads (only :func:`test_format` asks for exactly these and no others). A case that
    raised is told in full by its ``lead`` check (the first that grades it), and by the
    others that grade it as "not checked" only."""
    record = obs["cases"][name]
    if record["error"] is not None and not lead:
        fail(_what(name), "a report", f"not checked: the report raised on this case "
             f"(said under \"{TITLES[LEADS[name]]}\")")
    if record["error"] is not None:
        if name == "single":
            hint = ("this step returns one bare array: its alias item's output index is {} "
                    "(empty), and that output's keystr path is ''")
        elif not truth(name, seed)["leaves"]:
            hint = ("this state has no leaves: every list the report builds from it is empty, "
                    "and its module header has no input_output_alias entry")
        elif any(leaf["aliased"] for leaf in truth(name, seed)["leaves"]):
            hint = ("this case has aliased leaves, so its header has an input_output_alias "
                    "entry; run the report on this case in the notebook to see the traceback")
        else:
            hint = ("nothing in this case is aliased, so its module header has no "
                    "input_output_alias entry at all (where the report raised shows whether "
                    "that is what it tripped on)")
        fail(_what(name), "a report", _raised(obs, name), hint)
    answer = record["answer"] or {}
    if answer.get("type") != "dict":
        fail(_what(name), "a dict", f"a {answer.get('type')}")
    missing = [k for k in TOP_KEYS if k in keys and k not in (answer.get("keys") or [])]
    if "leaves" in keys and answer.get("leaves") is None:
        missing = missing or ["leaves (as a list)"]
    if missing:
        fail(_what(name), f"the report's {', '.join(missing)}",
             f"not checked: the report has no {', '.join(missing)} (see the check \"{FORMAT}\")")
    if "leaves" not in keys:
        return answer
    want = truth(name, seed)["leaves"]
    if len(answer["leaves"]) != len(want):
        fail(_what(name), f"{len(want)} entries under 'leaves', one per leaf of the state",
             f"{len(answer['leaves'])}", "flatten the state with jax.tree_util.tree_flatten_with_path")
    lacking = sorted({k for e in answer["leaves"] for k in keys if k in LEAF_KEYS
                      and k not in (e.get("keys") or [])})
    if lacking:
        fail(f"{_what(name)}: the entries of 'leaves'", f"the key{'s' * (len(lacking) > 1)} "
             f"{', '.join(lacking)} in every entry",
             f"not checked: an entry has no {', '.join(lacking)} (see the check \"{FORMAT}\")")
    return answer


def _cases(obs, seed, check, keys):
    """``[(name, answer, truth)]`` for the cases ``check`` reads: every case that returned a
    report, and a case that raised only when ``check`` is one of the checks it is there for
    (:data:`GRADED_BY`): a crash on one case costs those rows alone, and the others are
    graded on the other cases."""
    return [(name, _answer(obs, name, seed, keys, LEADS[name] == check), truth(name, seed))
            for name, checks in GRADED_BY.items()
            if check in checks or check in PER_LEAF and name != "empty"
            and obs["cases"][name]["error"] is None]


DESCRIPTIONS = "each leaf's path, shape, dtype and nbytes"
EMPTY = "empty tree: no leaves and zero bytes"
PER_LEAF = ("test_leaf_descriptions", "test_aliased_flags", "test_outputs", "test_aliased_bytes",
            "test_total_bytes")
PAIRING = ("test_aliased_flags", "test_outputs", "test_aliased_bytes")
# Which checks a case that raised costs: a case the task names for one rule (a bare-array
# output, an empty tree, the pairings read from the map) that rule's checks; the others
# every per-leaf check. The first check listed tells a case's error in full. A case that
# returned a report is read by every per-leaf check (the empty tree by its own only).
GRADED_BY = {**{n: PER_LEAF for n in CASES},
             "halves": PAIRING, "bytes_order": PAIRING, "bytes_only": PAIRING,
             "single": ("test_outputs",), "empty": ("test_empty_tree",)}
LEADS = {name: checks[0] for name, checks in GRADED_BY.items()}
TITLES = {"test_leaf_descriptions": DESCRIPTIONS, "test_aliased_flags": "aliased: exactly the "
          "leaves in input_output_alias", "test_outputs": "output: the output leaf that takes "
          "each aliased leaf's buffer", "test_empty_tree": EMPTY}


@graded(1, FORMAT)
def test_format(obs, seed):
    """On every case that returned, the report is a dict with exactly the three keys, and
    `"leaves"` a list of dicts with exactly the six keys (a case that raised is reported by
    the checks that read it)."""
    returned = [name for name in CASES if obs["cases"][name]["error"] is None]
    if not returned:
        fail(f"the reports of {CALL}", "a report on at least one case",
             f"not checked: every case raised, the first {_raised(obs, next(iter(CASES)))}")
    for name in returned:
        answer = obs["cases"][name]["answer"] or {}
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


@graded(1, DESCRIPTIONS)
def test_leaf_descriptions(obs, seed):
    """Each leaf's `path`, `shape`, `dtype` and `nbytes` are right, in `jax.tree` order."""
    keys = ("leaves", "path", "shape", "dtype", "nbytes")
    how = {"path": "jax.tree_util.keystr of the leaf's key path", "shape": "a tuple of ints",
           "dtype": "str(leaf.dtype)", "nbytes": "leaf.nbytes"}
    for name, answer, right in _cases(obs, seed, "test_leaf_descriptions", keys):
        for i, (got, want) in enumerate(zip(answer["leaves"], right["leaves"])):
            for key in keys[1:]:
                if got[key] != want[key]:
                    fail(f"{_what(name)}: entry {i} of 'leaves'",
                         f"{key} {want[key]!r} (leaf {want['path']}, in jax.tree order)",
                         f"{key} {got[key]!r}", f"{key} is {how[key]}")


def _flag_fact(leaf):
    if leaf["aliased"]:
        return "the module aliases it"
    if leaf["donor"]:
        return "the module lists it under buffer_donor only, in no input_output_alias item"
    return "the module names it in no input_output_alias item"


@graded(2, "aliased: exactly the leaves in input_output_alias")
def test_aliased_flags(obs, seed):
    """`aliased` is `True` exactly for the leaves whose parameter number appears in
    `input_output_alias`."""
    for name, answer, right in _cases(obs, seed, "test_aliased_flags", ("leaves", "aliased")):
        wrong = [(g["aliased"], w) for g, w in zip(answer["leaves"], right["leaves"])
                 if g["aliased"] != w["aliased"]]
        if wrong:
            fail(f"{_what(name)}: the 'aliased' flags", "True exactly for the leaves whose "
                 "parameter number appears in the compiled module's input_output_alias",
                 "; ".join(f"{w['path']} ({_kind(w)}) is {g!r}, and {_flag_fact(w)}"
                           for g, w in wrong),
                 f"the alias map of this step decides; how JAX and XLA pair buffers: {WHERE_EXPLAINED}")


def _output_fact(right, path):
    if path is None:
        return "None"
    if not isinstance(path, str):
        return f"a {path.get('type')}"
    label = path or "'' (a bare array returned)"
    return f"{label} ({right['outputs'].get(path, 'no output has this path')})"


@graded(2, "output: the output leaf that takes each aliased leaf's buffer")
def test_outputs(obs, seed):
    """`output` is the path of the output leaf each aliased leaf is written into, `None` for
    the others."""
    for name, answer, right in _cases(obs, seed, "test_outputs", ("leaves", "output")):
        wrong = [(g["output"], w) for g, w in zip(answer["leaves"], right["leaves"])
                 if g["output"] != w["output"]]
        if wrong:
            fail(f"{_what(name)}: the 'output' entries", "for each aliased leaf, the key path "
                 "of the output leaf numbered by its alias entry's output index; None "
                 "for a leaf that is not aliased",
                 "; ".join(f"{w['path']} ({_kind(w)}) names {_output_fact(right, g)}, the module "
                           f"writes {_output_fact(right, w['output'])} into it"
                           for g, w in wrong),
                 "the output index (the number before the colon) counts the leaves of the "
                 "step's output in jax.tree order ({} when the output is a single array); "
                 f"how the pairing is made: {WHERE_EXPLAINED}")


@graded(1, "aliased_bytes equals alias_size_in_bytes")
def test_aliased_bytes(obs, seed):
    """`aliased_bytes` equals the compiled module's `memory_analysis().alias_size_in_bytes`."""
    for name, answer, right in _cases(obs, seed, "test_aliased_bytes", ("aliased_bytes",)):
        if answer["aliased_bytes"] != right["aliased_bytes"]:
            fail(f"{_what(name)}: 'aliased_bytes'",
                 f"{right['aliased_bytes']} (memory_analysis().alias_size_in_bytes)",
                 f"{answer['aliased_bytes']!r}",
                 "the nbytes of the leaves in input_output_alias add up to it")


@graded(1, "total_bytes: the bytes of all leaves")
def test_total_bytes(obs, seed):
    """`total_bytes` is the sum of every leaf's `nbytes`."""
    for name, answer, right in _cases(obs, seed, "test_total_bytes", ("total_bytes",)):
        if answer["total_bytes"] != right["total_bytes"]:
            fail(f"{_what(name)}: 'total_bytes'", f"{right['total_bytes']} (the sum of the "
                 "leaves' nbytes, aliased or not)", f"{answer['total_bytes']!r}")


@graded(1, EMPTY)
def test_empty_tree(obs, seed):
    """An empty tree gives no leaves and zero bytes."""
    [(name, answer, _)] = _cases(obs, seed, "test_empty_tree", ())
    got = tuple(answer.get(k) for k in ("leaves", "aliased_bytes", "total_bytes"))
    if got != ([], 0, 0):
        fail(_what(name), "leaves [] with aliased_bytes 0 and total_bytes 0",
             f"leaves {got[0]!r}, aliased_bytes {got[1]!r}, total_bytes {got[2]!r}")


@graded(1, "the report compiles with the state donated and never runs the step")
def test_state_untouched(obs, seed):
    """The report never runs the step (a host callback in every graded step counts its
    runs), no leaf of the caller's state is deleted afterwards, and JAX raises no
    "donated buffers were not usable" warning that compiling with `donate_argnums=0`
    does not (one means the report donated something else too); "not checked" when the
    report raised on the first case, before it could show any of this."""
    first = obs["cases"]["nested"]
    if first["error"] is not None or (first["answer"] or {}).get("leaves") is None:
        fail(f"whether {_what('nested')} runs the step", "a report (a dict with a list of "
             "leaves) from a function that compiles the step without running it",
             "not checked: " + (_raised(obs, "nested") if first["error"] is not None
                                else "no list of leaves came back"))
    for name in CASES:
        record = obs["cases"][name]
        if record.get("runs"):
            fail(f"how often the step ran during {_what(name)}", "never: the report only "
                 "lowers and compiles it", f"it ran {record['runs']} time(s)"
                 + (", on the caller's state, whose leaves are now deleted"
                    if record["state_deleted"] else ""),
                 "everything the report needs is in the compiled module and in "
                 "jax.eval_shape(fn, state, *args), which runs nothing")
        if record["state_deleted"]:
            fail(f"whether the caller's state is still readable after {_what(name)}",
                 "every leaf still readable", "leaves of the state were deleted, while the "
                 "step itself never ran", "something in the report donated the caller's state")
    for name in CASES:
        extra = [w for w in obs["cases"][name].get("warnings") or []
                 if w not in truth(name, seed)["warnings"]]
        if extra:
            fail(f"JAX's warnings during {_what(name)}", "only those that compiling with "
                 "donate_argnums=0 gives (the state donated, nothing else)",
                 f"JAX warned: {extra[0]}", "a buffer listed there was donated and could not "
                 "be used; in the notebook this warning goes to stderr, and Validate fails")

"""Helpers shared by probes: serialisable arrays, error text, JAX event counts, and what a
learner's calls did to the arrays handed in (donated, deleted, live, which buffer)."""
import base64
import contextlib
import io
import pathlib
import re
import shutil
import threading

import numpy as np

# JAX reports each trace and each XLA compile as a duration event through
# jax.monitoring (event names as in jax/_src/interpreters/pxla.py and dispatch.py).
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


MAX_ELEMENTS = 1_000_000  # a result this large is wrong here: report its shape only


def encode_array(value):
    """Return ``value`` as ``.npy`` bytes in base64, or None.

    None for a deleted or non-array value and for one with more than
    :data:`MAX_ELEMENTS` elements (the probe's ``facts_of`` still records its
    shape, so feedback can say what came back).
    """
    if getattr(value, "size", 0) > MAX_ELEMENTS:
        return None
    try:
        arr = np.asarray(value)
    except Exception:  # a deleted or non-array result: describe it instead
        return None
    if arr.dtype == object or arr.size > MAX_ELEMENTS:
        return None
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_array(text):
    """Inverse of :func:`encode_array` (runs in the grader; no pickles)."""
    if text is None:
        return None
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def error_text(exc):
    """One line naming the exception, e.g. ``RuntimeError: Array has been deleted``."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:500]


def _in_a_cell(filename):
    """Whether ``filename`` is a notebook cell's: IPython's ``<ipython-input-N-...>`` (the
    course grader's shell) or ipykernel's ``.../ipykernel_PID/HASH.py`` (nbgrader's kernel)."""
    return filename.startswith("<ipython-input-") or "/ipykernel_" in filename


def learner_line(exc):
    """Where in the learner's cells ``exc`` was raised: ``{"line": 9, "code": "..."}``
    (the innermost frame of a cell, its line number within that cell), or None when no
    frame is a cell's (raised in the probe's own call, or in a library it called first)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _in_a_cell(f.filename)]
    if not frames:
        return None
    return {"line": frames[-1].lineno, "code": (frames[-1].line or "").strip()[:200]}


def stopped_by(records):
    """The one cause that stopped every call: ``{"error", "where"}`` when every record in
    ``records`` (dicts with ``error`` and ``where``, as the probes keep them) raised, the
    same exception type at the same line of the learner's code; else None."""
    if not records or any(not r.get("error") for r in records):
        return None
    causes = {(r["error"].split(":")[0], _where_key(r.get("where"))) for r in records}
    if len(causes) != 1:
        return None
    return {"error": records[0]["error"], "where": records[0].get("where")}


def _where_key(where):
    """``learner_line``'s dict (or None) as something a set can hold."""
    return None if where is None else tuple(sorted(where.items()))


def facts_of(value):
    """Type, shape and dtype of a returned value, as strings (never raises)."""
    import jax

    out = {"type": type(value).__name__, "is_jax_array": isinstance(value, jax.Array)}
    out["shape"] = list(getattr(value, "shape", ())) if hasattr(value, "shape") else None
    out["dtype"] = str(getattr(value, "dtype", "")) or None
    return out


class EventCounter:
    """Counts JAX trace and compile events while active (``with counter:``).

    Listeners are registered once; counting is switched on and off so that
    learner code cannot hide events by replacing ``jax.jit``: the events come
    from JAX's own tracing and compilation machinery.
    """

    def __init__(self):
        import jax.monitoring

        self.active = False
        self.traces = 0
        self.compiles = 0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, name, _secs, **_kw):
        if not self.active:
            return
        if name == TRACE_EVENT:
            self.traces += 1
        elif name == COMPILE_EVENT:
            self.compiles += 1

    def __enter__(self):
        self.traces = self.compiles = 0
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False


# warnings.catch_warnings swaps the process's warning filters and handler: two threads in
# it at once (the grader judges on one thread per slot) lose each other's warnings, and a
# hidden test's expected warnings (cached per process) would miss one.
_WARNINGS = threading.RLock()


@contextlib.contextmanager
def quiet():
    """Catch Python warnings raised inside a probe; yields a list of their messages.
    One thread at a time per process (:data:`_WARNINGS`).

    JAX reports a donated buffer that no output can use with a UserWarning
    ("Some donated buffers were not usable"), emitted while lowering.
    """
    import warnings

    caught = []
    with _WARNINGS, warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        try:
            yield caught
        finally:
            caught.extend(str(w.message).splitlines()[0][:300] for w in records)


# What a learner's calls did to the arrays a probe handed in. Checks decide from these
# (which buffer reached which compiled call, what was deleted, what stayed live), never
# from a helper's parameter names, count or order, or how it was built.

def deleted(tree):
    """Per leaf of ``tree`` (``jax.tree`` order), whether it is a deleted ``jax.Array``
    (``list[bool]``; a leaf that is not a JAX array reads False). Never raises."""
    import jax

    def gone(leaf):
        try:
            return bool(leaf.is_deleted())
        except Exception:
            return False

    try:
        return [gone(leaf) for leaf in jax.tree.leaves(tree)]
    except Exception:
        return [gone(tree)]


def buffer_of(value):
    """The device address of ``value``'s buffer (an int), or None for a deleted array or
    anything that is not a single-device ``jax.Array``. Two arrays with one address share
    one buffer: how a probe tells the array it handed in from a copy of it."""
    try:
        return int(value.unsafe_buffer_pointer())
    except Exception:
        return None


def live():
    """``(arrays, bytes)``: the ``jax.Array`` objects alive now (``jax.live_arrays()``,
    after a garbage collection, so an array nothing refers to is not counted) and their
    bytes."""
    import gc

    import jax

    gc.collect()
    arrays = jax.live_arrays()
    return len(arrays), int(sum(a.nbytes for a in arrays))


def donated_leaves(lowered):
    """Per argument leaf of a ``jax.stages.Lowered`` (``args_info``, in ``jax.tree``
    order over ``(args, kwargs)``), whether the compiled module really receives it donated
    (``list[bool]``). ``args_info`` alone reads ``donated=True`` for an argument jit
    dropped because nothing reads it; such a leaf, absent from the module's parameters,
    reads False here."""
    import jax

    flags = [bool(a.donated) for a in jax.tree.leaves(
        lowered.args_info, is_leaf=lambda x: hasattr(x, "donated"))]
    kept = _kept_leaves(lowered, len(flags))
    return [f and k for f, k in zip(flags, kept)]


def _kept_leaves(lowered, count):
    """Which of ``count`` argument leaves the lowered module keeps as parameters: JAX's
    ``kept_var_idx`` where this JAX records it, else all of them when the module has as
    many parameters as there are leaves (the only case a count can decide)."""
    try:
        kept = set(lowered._lowering.compile_args["kept_var_idx"])
        return [i in kept for i in range(count)]
    except Exception:
        pass
    main = MAIN.search(lowered.as_text())
    params = len(ARG.findall(main.group(1))) if main else count
    return [params == count] * count


def alias_bytes(fn, *args, **kwargs):
    """``memory_analysis().alias_size_in_bytes`` of ``fn`` compiled for these arguments (the
    bytes the compiled call writes into donated inputs), or None when ``fn`` has no
    ``.lower`` (it is not the function ``jax.jit`` made)."""
    if not hasattr(fn, "lower"):
        return None
    return int(fn.lower(*args, **kwargs).compile().memory_analysis().alias_size_in_bytes)


# In a lowered module (StableHLO text), a donated argument carries tf.aliasing_output
# (aliased to an output) or jax.buffer_donor (donated, not matched to an output).
MAIN = re.compile(r"func\.func public @main\((.*)\) ->")
ARG = re.compile(r"%arg\d+: (tensor<[^>]*>)(?: \{([^}]*)\})?")


def lowered_modules(dump):
    """``[{"module", "args", "donated"}]`` for each module JAX lowered into the folder
    ``dump`` (``jax_dump_ir_to``), which is removed: the module's name, each parameter's
    type (``tensor<32xf32>``) and whether it is donated. A module is known by the arrays
    it takes, whatever the Python function's parameters are named."""
    found = []
    for path in sorted(pathlib.Path(dump).glob("*.mlir")):
        match = MAIN.search(path.read_text(errors="replace"))
        if not match:
            continue
        args = ARG.findall(match.group(1))
        found.append({"module": path.stem.split("_", 2)[-1].removesuffix("_compile"),
                      "args": [t for t, _ in args],
                      "donated": [("tf.aliasing_output" in a or "jax.buffer_donor" in a)
                                  for _, a in args]})
    shutil.rmtree(dump, ignore_errors=True)
    return found


def held_elsewhere(array):
    """Whether something outside the probe still holds ``array``'s buffer (a NumPy view, on
    the CPU): the probe offers it to a donating jit of its own, and a buffer held
    elsewhere is not donated. None when ``array`` is already deleted or not a JAX array.
    Donates ``array`` otherwise: call it only once the array is not needed."""
    import jax

    if not hasattr(array, "is_deleted") or array.is_deleted():
        return None
    with quiet():
        jax.jit(lambda x: x * 1, donate_argnums=0)(array)
    return not array.is_deleted()

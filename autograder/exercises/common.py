"""Helpers shared by probes: serialisable arrays, error text, JAX event counts."""
import base64
import contextlib
import io
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

"""Run an exercise's visible self-check on each of its samples, as Validate would judge
it: the source notebook's code cells up to the self-check (the answer cell replaced by
the sample), and a failure is an exception or anything written to stderr (Python
warnings included; nbgrader's Validate fails on stderr).

``python -m tests.grading.self_checks EXERCISE`` prints ``{sample: null or why it
failed}`` as JSON: one process per exercise, each sample in a namespace of its own.
"""
import contextlib
import io
import json
import sys
import warnings

from tests.course import REPO
from tests.grading.helpers import expected, samples_dir


def cells(exercise):
    """The source notebook's code cells that Validate runs before the graded ones:
    ``[(grade_id, source)]`` up to and including the self-check."""
    nb = json.loads((REPO / "exercises" / "source" / exercise / f"{exercise}.ipynb").read_text())
    out = []
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] != "code" or meta.get("grade") and not meta.get("solution"):
            continue
        out.append((meta.get("grade_id"), "".join(cell["source"])))
        if meta.get("grade_id") == "self_check":
            return out
    raise ValueError(f"{exercise}: no self_check cell")


def run(exercise, answer):
    """None when the cells run with ``answer`` raise nothing and write nothing to stderr,
    else one line saying why not."""
    ns = {"__name__": "__main__"}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda m, c, *a, **k: err.write(f"{c.__name__}: {m}\n")
            for grade_id, source in cells(exercise):
                exec(compile(answer if grade_id == exercise else source, f"<{grade_id}>", "exec"), ns)
    except BaseException as exc:  # a sample may raise anything
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    return f"stderr: {err.getvalue().strip().splitlines()[0]}"[:300] if err.getvalue().strip() else None


def main(exercise):
    results = {}
    for name in expected(exercise):
        if name == "unattempted":
            continue
        results[name] = run(exercise, (samples_dir(exercise) / f"{name}.py").read_text())
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])

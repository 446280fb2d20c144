"""Step 4 of grading: write Gradescope results and the class summary.

``DIR/<name>/results.json`` follows Gradescope's format (``score``,
``max_score``, ``output``, ``tests`` with ``name``/``score``/``max_score``/
``status``/``output``/``visibility``); ``extra_data`` records the grading
status and the digest of what was graded, so a rerun can skip it. Every write
is atomic (a temporary file renamed into place), and ``summary.csv`` is always
rebuilt from the results on disk.
"""
import csv
import io
import json
import os
import tempfile
from pathlib import Path

SUMMARY_FIELDS = ("submission", "score", "max_score", "status", "output")


def atomic_write(path, text):
    """Write ``text`` to ``path`` so readers see the old file or the new, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def results_json(tests, output, status, digest, seconds, learner_output=""):
    """Gradescope results for one submission; ``seconds`` is grading wall time.

    ``learner_output`` is the last 2000 characters the learner's code printed,
    kept in ``extra_data`` for the instructor.
    """
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "output": output,
        "execution_time": round(seconds, 3),
        "tests": tests,
        "extra_data": {"status": status, "digest": digest,
                       "learner_output": learner_output[-2000:]},
    }


def write_results(out_dir, name, results):
    atomic_write(Path(out_dir) / name / "results.json", json.dumps(results, indent=2) + "\n")


def read_results(out_dir, name):
    """The results on disk for ``name``, or None if missing or unreadable."""
    try:
        return json.loads((Path(out_dir) / name / "results.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None


def write_summary(out_dir):
    """Rebuild ``summary.csv`` from every ``*/results.json`` under ``out_dir``."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(SUMMARY_FIELDS)
    for path in sorted(Path(out_dir).glob("*/results.json")):
        data = read_results(out_dir, path.parent.name)
        if data is None:
            continue
        writer.writerow([path.parent.name, data["score"], data["max_score"],
                         data["extra_data"]["status"], data["output"].splitlines()[0]])
    atomic_write(Path(out_dir) / "summary.csv", buf.getvalue())

"""The drift report against the other JAX the site names: what ``book/drift_report.json``
says (each rule, glued value and sample: same, version, changed or failed) is what
``scripts/drift.py --check`` finds now, in a venv of that JAX built from the registries."""
import json
import subprocess
import sys

from tests.course import REPO

LAST = json.loads((REPO / "book" / "drift_report.json").read_text())


def test_the_committed_drift_report_is_what_the_other_jax_gives(built_site):
    done = subprocess.run([sys.executable, "scripts/drift.py", "--jax", LAST["new_jax"], "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])

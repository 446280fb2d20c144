"""Parallel grading gives the same results as serial grading, and forked
learner processes do not leak state into each other."""
import json

from tests.course import grader_cli
from tests.grading.helpers import SAMPLES

NAMES = ["reference", "jit_inside", "no_donation", "both_donated", "wrong_dtype",
         "reads_donated", "misnamed", "no_jit"]


def grade(out, *paths, jobs):
    proc = grader_cli(*paths, "--out", out, "--jobs", jobs)
    assert proc.returncode == 0, proc.stderr
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}


def verdicts(results):
    return {name: (r["score"], [(t["name"], t["status"], t["output"]) for t in r["tests"]])
            for name, r in results.items()}


def test_parallel_equals_serial(tmp_path):
    paths = [SAMPLES / f"{n}.py" for n in NAMES]
    serial = grade(tmp_path / "serial", *paths, jobs=1)
    parallel = grade(tmp_path / "parallel", *paths, jobs=3)
    assert set(serial) == set(NAMES)
    # Outputs name the seed-dependent values, and the seed comes from the
    # file's digest, so even the messages must match.
    assert verdicts(parallel) == verdicts(serial)


def test_a_patched_process_does_not_leak_into_the_next(tmp_path):
    patcher = tmp_path / "a_patcher.py"
    patcher.write_text(
        "import jax, jax.numpy as jnp\n"
        "jax.jit = lambda f, **kw: f\n"
        "jnp.add = lambda a, b: a - b\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "def update_with_donate(state, delta):\n    return state + delta\n")
    honest = tmp_path / "b_honest.py"
    honest.write_text((SAMPLES / "jnp_add.py").read_text())
    results = grade(tmp_path / "out", patcher, honest, jobs=1)
    assert results["b_honest"]["score"] == 10
    assert results["a_patcher"]["score"] < 10

"""What each front door gives on every sample and hostile submission, normalised.

The corpus is every exercise's samples (``hidden/samples/*.py`` put into the
released notebook, plus the released notebook itself as ``unattempted``), the
hostile answer cells (``tests/grading/hostile/*.py``) and the broken notebooks
of :mod:`tests.grading.hostile_builders`, and a few Gradescope uploads that
break its one-file rule. Each is graded by

- the command line (``python -m autograder``'s ``main``: every results.json,
  summary.csv, the progress lines and the exit status),
- the grading service's grading thread (:func:`autograder.service.grading.grade_row`
  on a stored row; the record the store keeps and the learner's reply made from it),
- Gradescope's ``run_autograder`` entry (:func:`autograder.gradescope.grade_upload`: results.json).

The grader's own digest is fixed while capturing (it seeds the inputs); only
what differs between two runs of the same code is normalised: wall times, the
submission's digest, temporary paths, what learner code prints of itself
(addresses, timings), and which end a race in a hostile submission took
(:data:`RACES`).

``python -m tests.grading.golden`` writes ``tests/grading/golden/*.json`` afresh;
``tests/grading/test_golden.py`` compares a new capture with them byte for byte.
"""
import contextlib
import copy
import io
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

from autograder import exercises
from tests.course import release
from tests.grading.helpers import expected, released_notebook, samples_dir, with_answer
from tests.grading.hostile_builders import BUILDERS

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
HOSTILE = HERE / "hostile"
HOSTILE_EXERCISE = "update_with_donate"
# (timeout s, memory MiB) per group, as test_samples, test_hostile and test_gradescope grade
# them. Hostile code that hangs spins a core until the limit, once per door, so the limit is
# kept short; but a finishing submission needs its fraction of a CPU-second within it while
# the rest of the suite loads the machine. fork_bomb_then_jax needs 0.2 s idle, 3.9 s with 24
# single-core hogs (each in a session of its own, as kernels are) and a fork bomb beside it,
# and timed out at 4 s in one fresh-clone run of ten; 8 s doubles that margin.
LIMITS = {"samples": (60.0, 4096), "hostile": (8.0, 3072)}
# Hostile submissions whose end is a race their own code runs: a memory bomb's MemoryError is
# caught by its cell ("incomplete") or the process is killed first ("memory").
RACES = {"memory_bomb", "memory_bomb_list"}
# Uploads that break Gradescope's one-file rule: {name: {relative path: text}}
UPLOADS = {"empty": {}, "two_notebooks": {"a.ipynb": "{}", "b.ipynb": "{}"},
           "only_text": {"notes.txt": "hello"},
           "macosx_only": {"__MACOSX/x.ipynb": "{}", ".hidden.py": "x = 1"}}


GRADER_SECRET = secrets.token_hex(16)
"""In the grader's environment (``HOSTILE_SECRET_TOKEN``) while the command line grades the
hostile group: no learner process may hold it (hostile/reads_environment.py and
reads_its_memory.py look for it; tests/grading/test_hostile.py checks every result)."""


def corpus(course, listener_port=9):
    """``{group: {name: (exercise, notebook bytes)}}`` from the released ``course``;
    ``listener_port`` goes where a hostile answer says ``@LISTENER_PORT@`` (the default: a
    port nobody listens on; as root, learner code reaches no network at all, and no result
    says which port it tried)."""
    samples = {}
    for exercise in exercises.names():
        release_nb = released_notebook(course, exercise)
        for name in expected(exercise):
            nb = release_nb if name == "unattempted" else with_answer(
                release_nb, (samples_dir(exercise) / f"{name}.py").read_text(), exercise)
            samples[f"{name}/{exercise}"] = (exercise, json.dumps(nb, indent=1).encode())
    hostile_expected = json.loads((HOSTILE / "expected.json").read_text())
    release_nb = released_notebook(course, HOSTILE_EXERCISE)
    hostile = {}
    for path in sorted(HOSTILE.glob("*.py")):
        if path.stem in hostile_expected:
            answer = path.read_text().replace("@LISTENER_PORT@", str(listener_port))
            hostile[path.stem] = (HOSTILE_EXERCISE, json.dumps(with_answer(release_nb, answer)).encode())
    for name, build in sorted(BUILDERS.items()):
        hostile[name] = (HOSTILE_EXERCISE, build(release_nb))
    return {"samples": samples, "hostile": hostile}


def normalise(text, scratch=()):
    """``text`` without what differs between two runs of the same code."""
    text = re.sub(r'"(execution_time|seconds)": [0-9.e-]+', r'"\1": 0', text)
    text = re.sub(r'"digest": "[0-9a-f]{64}"', '"digest": "<digest>"', text)
    # the version of the exercise's grading (a digest of its hidden tests and probe, the
    # last key of its object): any edit of them changes it, as the grader's digest
    text = re.sub(r',\n\s*"version": "[0-9a-f]{64}"', "", text)
    text = re.sub(r" \(\d+\.\d s\)(?= - |\",?$)", " (<s> s)", text, flags=re.M)
    # what learner code prints of itself: addresses, %time's timings, absl's log prefix
    text = re.sub(r"0x[0-9a-f]{6,16}", "0x<address>", text)
    text = re.sub(r"(CPU times|Wall time): (?:(?!\\n)[^\"])*", r"\1: <times>", text)
    text = re.sub(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", "<log prefix> ", text)
    # where a memory bomb's allocation fails first (numpy's or XLA's) is a matter of timing
    text = re.sub(r"(the tests could not run: MemoryError: )[^\"]*", r"\1<where>", text)
    # where this checkout's venv is (a warning's file path in what learner code printed)
    for prefix in sorted({os.path.realpath(sys.prefix), sys.prefix}, key=len, reverse=True):
        text = text.replace(prefix + os.sep, "<venv>/")
    for path in scratch:
        text = text.replace(str(path), "<tmp>")
    return re.sub(r"/tmp/pytest-of-\w+/[^\s\"']*|/tmp/tmp\w+", "<tmp>", text)


def settled(value):
    """A race's result (:data:`RACES`) without what tells its two ends apart."""
    if isinstance(value, dict):
        return {k: ("memory or incomplete" if k == "status" and v in ("memory", "incomplete")
                    else "<either end>" if k in ("output", "learner_output") and "MemoryError" in str(v)
                    or k == "output" and "of memory" in str(v) else settled(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [settled(v) for v in value]
    return value


def _settle(done):
    """``done`` ({name: result}) with every race of :data:`RACES` settled."""
    return {name: settled(v) if name in RACES else v for name, v in done.items()}


def _dump(data):
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


class Outcomes:
    """The sandbox's :class:`~autograder.sandbox.Outcome` per request, recorded while one
    door grades a corpus of well-behaved answers, for the other doors to read instead of
    running the same learner code again. A request is keyed by everything the learner's
    process is given (exercise, seed, memory, cells) and the limits, except ``hide``: the
    folders each door hides differ, and only hostile code looks for them (so the hostile
    group is never replayed). A request not recorded runs in the sandbox as usual."""

    def __init__(self):
        self.seen, self.lock = {}, threading.Lock()

    @staticmethod
    def key(request, limits):
        return json.dumps([{k: v for k, v in request.items() if k != "hide"}, str(limits)],
                          sort_keys=True)

    @contextlib.contextmanager
    def recording(self):
        """:func:`autograder.sandbox.run` keeps each outcome meanwhile."""
        def run(request, limits=None, slot=0):
            outcome = real(request, limits, slot)
            with self.lock:
                self.seen[self.key(request, limits)] = copy.deepcopy(outcome)
            return outcome

        with _sandbox_run(run) as real:
            yield self

    @contextlib.contextmanager
    def replaying(self):
        """:func:`autograder.sandbox.run` answers a recorded request with its outcome meanwhile."""
        def run(request, limits=None, slot=0):
            with self.lock:
                kept = self.seen.get(self.key(request, limits))
            return copy.deepcopy(kept) if kept is not None else real(request, limits, slot)

        with _sandbox_run(run) as real:
            yield self


@contextlib.contextmanager
def _sandbox_run(replacement):
    """:func:`autograder.sandbox.run` replaced meanwhile; yields the real one."""
    from autograder import sandbox

    real, sandbox.run = sandbox.run, replacement
    try:
        yield real
    finally:
        sandbox.run = real


def cli_run(group, subs, work):
    """The command line's run over one group (its ``main``, in this process so that
    :func:`fixed_digest` fixes the inputs' seed): ``{"exit": status, "stdout": text,
    "stderr": what was written to ``sys.stderr``, "out": Path of the results tree, "root":
    Path of the scratch folder, "outcomes": the sandbox's :class:`Outcomes`}``. The hostile
    group is graded with :data:`GRADER_SECRET` in the environment. Samples are
    handed in as an nbgrader tree (``out/<sample>/<exercise>/results.json``), hostile
    submissions flat (``out/<name>/results.json``)."""
    from autograder.__main__ import main

    root = work / f"cli-{group}"
    for name, (exercise, raw) in subs.items():
        # samples as an nbgrader tree (<student>/<exercise>/<exercise>.ipynb), hostile flat
        target = (root / "submitted" / name / f"{exercise}.ipynb" if group == "samples"
                  else root / "class" / f"{name}.ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
    seconds, memory = LIMITS[group]
    out = root / "out"
    stdout, stderr = io.StringIO(), io.StringIO()
    secret = {"HOSTILE_SECRET_TOKEN": GRADER_SECRET} if group == "hostile" else {}
    with grader_environment(secret), Outcomes().recording() as outcomes, \
            contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main([str(root / ("submitted" if group == "samples" else "class")), "--out", str(out),
                     "--timeout", str(seconds), "--memory-mib", str(memory), "--jobs", "2"])
    return {"exit": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "out": out,
            "root": root, "outcomes": outcomes}


@contextlib.contextmanager
def grader_environment(extra):
    """``os.environ`` with ``extra`` (``{name: value}``) meanwhile, and this process's
    zygote started afresh under it, as it would be in a grader started with that
    environment; stopped again after (a later run starts its own)."""
    from autograder import sandbox

    if not extra:
        yield
        return
    sandbox.shared().stop()
    try:
        with mock.patch.dict(os.environ, extra):
            yield
    finally:
        sandbox.shared().stop()


def cli_text(run):
    """The golden text of a :func:`cli_run`: every results.json, summary.csv, the
    progress lines and the exit status, normalised."""
    out = run["out"]
    results = {str(p.parent.relative_to(out)): json.loads(p.read_text())
               for p in sorted(out.rglob("results.json"))}
    lines = {"progress": sorted(run["stdout"].splitlines()),
             "summary": (out / "summary.csv").read_text().splitlines()}
    for key, found in lines.items():  # a race's line says only which submission it is
        lines[key] = [f"{line.split(':')[0].split(',')[0]}: <either end>"
                      if line.split(":")[0].split(",")[0] in RACES else line for line in found]
    data = {"exit": run["exit"], **lines, "results": _settle(results)}
    return normalise(_dump(data), [run["root"]])


def cli(group, subs, work):
    """The command line's results for one group, as one JSON text."""
    return cli_text(cli_run(group, subs, work))


def service(group, subs, work):
    """The grading service's stored record and learner reply per submission."""
    from autograder import pipeline, sandbox
    from autograder.service.grading import grade_row
    from autograder.service.handler import submission_view
    from autograder.service.rows import Submission

    pipeline.prepare(exercises.names())
    seconds, memory = LIMITS[group]
    limits = sandbox.Limits(seconds=seconds, memory_mib=memory)

    def one(item, slot):
        name, (exercise, raw) = item
        learner = name.split("/")[0]
        claimed = Submission(id="0" * 32, learner=learner, exercise=exercise, status="running",
                             submitted_at=0.0, notebook=raw)
        result = grade_row(claimed, limits, slot)
        stored = json.dumps(result.to_record())  # as Store.finish writes it
        row = Submission.of({"id": "0" * 32, "exercise": exercise, "learner": learner,
                             "status": "done", "submitted_at": 0.0, "started_at": 0.0,
                             "finished_at": 0.0, "result": stored})  # as Store.get reads it
        return name, {"stored": json.loads(stored), "reply": submission_view(row)}

    items = sorted(subs.items())
    with ThreadPoolExecutor(2) as pool:
        done = dict(pool.map(one, items, [100 + i % 2 for i in range(len(items))]))
    return normalise(_dump(_settle(done)), [work])


def gradescope(group, subs, work):
    """Gradescope's results.json per upload (and per broken upload, with the hostile group)."""
    from autograder import sandbox
    from autograder.gradescope import grade_upload

    seconds, memory = LIMITS[group]
    limits = sandbox.Limits(seconds=seconds, memory_mib=memory)
    uploads = {name: (exercise, {f"{exercise}.ipynb": raw}) for name, (exercise, raw) in subs.items()}
    if group == "hostile":
        uploads.update({f"upload-{n}": (HOSTILE_EXERCISE, files) for n, files in UPLOADS.items()})

    def one(item):
        name, (exercise, files) = item
        root = work / "gradescope" / name.replace("/", "-")
        for rel, content in files.items():
            target = root / "submission" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        (root / "submission").mkdir(parents=True, exist_ok=True)
        grade_upload(root, exercise, "visible", limits)
        return name, json.loads((root / "results" / "results.json").read_text())

    with ThreadPoolExecutor(1) as pool:  # grade_upload grades on slot 0, as Gradescope does
        done = dict(pool.map(one, sorted(uploads.items())))
    return normalise(_dump(_settle(done)), [work])


DOORS = {"cli": cli, "service": service, "gradescope": gradescope}


@contextlib.contextmanager
def fixed_digest():
    """The grader's own digest fixed meanwhile: it seeds each submission's inputs
    (:func:`autograder.pipeline.seed_for`), so without it any change of the grader's
    code would change the values quoted in feedback."""
    from autograder import pipeline

    real, pipeline.grader_digest = pipeline.grader_digest, lambda: "golden"
    try:
        yield
    finally:
        pipeline.grader_digest = real


def capture(course, work, doors=DOORS):
    """``{file name: text}`` for every door and group (under :func:`fixed_digest`)."""
    found = corpus(course)
    with fixed_digest():
        return {f"{door}-{group}.json": doors[door](group, subs, Path(work))
                for door in doors for group, subs in found.items()}


def released(work):
    """A released course in ``work`` (as tests.conftest.released_course makes it)."""
    from tests.course import REPO

    course = Path(work) / "course"
    course.mkdir(parents=True)
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    release(course, "*")
    return course


def main(argv):
    names = argv or list(DOORS)
    with tempfile.TemporaryDirectory() as work:
        texts = capture(released(work), work, {n: DOORS[n] for n in names})
    GOLDEN.mkdir(exist_ok=True)
    for name, text in texts.items():
        (GOLDEN / name).write_text(text)
        print(GOLDEN / name)


if __name__ == "__main__":
    main(sys.argv[1:])

"""No hidden test is readable by learner code, whatever the instructor built before.

After the documented commands that write hidden tests somewhere (``make gradescope``'s
zips under ``_build/gradescope``, here built by the command it runs), a sandboxed
submission reads every file it can see on the machine, opening zips too, and prints
where it found a line of any exercise's ``hidden/tests.py``. It must find none, also with
a world-readable copy of the hidden tests below every top-level folder that is not the
system's own, ``/mnt`` among them (another checkout, a disk an administrator mounted).
"""
import json
import os
import shutil
import stat

import pytest

from autograder.exercises import FOLDER, names
from tests.course import REPO, grader_cli
from tests.grading.helpers import released_notebook, with_answer

# Files of the system's packages and installed libraries: no documented command writes there.
WALKER = r'''
import os, zipfile
MARKERS = [bytes.fromhex(h) for h in @MARKERS@]
SKIP = {"/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/boot"}
found, scanned = [], 0
def leaks(data):
    return any(m in data for m in MARKERS)
for top, dirs, files in os.walk("/", onerror=lambda e: None):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP
               and d not in ("site-packages", "node_modules", "__pycache__")]
    for name in files:
        path = os.path.join(top, name)
        try:
            if not os.path.isfile(path) or os.path.islink(path) or os.path.getsize(path) > 2**25:
                continue
            with open(path, "rb") as f:
                data = f.read()
            scanned += 1
            if leaks(data):
                found.append(path)
            elif data[:2] == b"PK":
                with zipfile.ZipFile(path) as z:
                    if any(leaks(z.read(i)) for i in z.namelist()):
                        found.append(path)
        except Exception:
            pass
print("SCANNED", scanned, "LEAKS", found[:20])
'''


def _markers():
    """One line of each exercise's hidden tests (its docstring's first), as hex."""
    lines = [(FOLDER / name / "hidden" / "tests.py").read_text().splitlines()[0]
             for name in names()]
    return [line.encode().hex() for line in lines]


@pytest.fixture
def copies():
    """A world-readable copy of the first exercise's hidden tests (as a fresh clone or an
    administrator's copy of the course has it: 0755 folders, a 0644 file) below each
    top-level folder outside the system's own and below ``/mnt``, where an administrator
    mounts a disk: ``[path]``, removed after (a read-only top-level folder is left out)."""
    from autograder.sandbox.confine import SYSTEM

    text = (FOLDER / names()[0] / "hidden" / "tests.py").read_text()
    tag, made = f"course-copy-{os.urandom(4).hex()}", []
    for entry in os.scandir("/"):
        if entry.is_dir(follow_symlinks=False) and (entry.name not in SYSTEM or entry.name == "mnt"):
            try:
                os.mkdir(os.path.join(entry.path, tag), 0o755)
            except OSError:
                continue
            made.append(os.path.join(entry.path, tag, "tests.py"))
            with open(made[-1], "w") as out:
                out.write(text)
            os.chmod(made[-1], 0o644)
    yield made
    for path in made:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's uid and mounts need root")
def test_a_submission_finds_no_hidden_test_anywhere(released_course, tmp_path, copies):
    assert "/mnt" in {os.path.dirname(os.path.dirname(p)) for p in copies}, copies
    out = REPO / "_build" / "gradescope"
    for name in names():  # what make gradescope runs, to where it writes
        built = grader_cli("gradescope", name, "--out", out)
        assert built.returncode == 0, built.stderr[-2000:]
        assert stat.S_IMODE((out / f"{name}-gradescope.zip").stat().st_mode) == 0o600
    answer = WALKER.replace("@MARKERS@", repr(_markers()))
    nb = with_answer(released_notebook(released_course), answer)
    (tmp_path / "walker.ipynb").write_text(json.dumps(nb))
    graded = grader_cli(tmp_path / "walker.ipynb", "--out", tmp_path / "grades",
                        "--timeout", "240", "--jobs", "1", timeout=600)
    assert graded.returncode == 0, graded.stderr[-2000:]
    printed = json.loads((tmp_path / "grades" / "walker" / "results.json").read_text())
    printed = printed["extra_data"]["learner_output"]
    assert "SCANNED" in printed, printed
    assert printed.rstrip().endswith("LEAKS []"), printed

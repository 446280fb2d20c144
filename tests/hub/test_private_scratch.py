"""Every folder of the system's own that anybody may write in is each learner's server's
own: ann (here ada) writes a file into each such folder her server shows (``/tmp``,
``/var/tmp``, ``/run/lock`` and ``/var/lock``, ``/dev/shm``, any other the system has),
found by searching the system's top-level folders (``confine.SYSTEM``) in her server;
eve's (here bob's) server sees none of those files, and neither does the machine.
(A world-writable folder an administrator makes inside the system's own folders, under
``/usr`` say, is not covered: docs/security.md says so.) And no copy of the course
elsewhere on the machine, world-readable, is readable in ann's server."""
from __future__ import annotations

import json
import os
import secrets
import shutil

from autograder.defaults import CHECKOUT
from autograder.sandbox.confine import SYSTEM
from tests.hub.test_attacks import start_server, stop_server
from tests.hub.test_class_browser import as_learner_in_server

REPO_TOP = CHECKOUT.resolve().parts[1]  # the top-level folder holding this checkout
MARK = f"scratch-{secrets.token_hex(4)}"
# Each folder every user may write in below the folders argv[2:], with a file argv[1]
# written there.
WRITE_ALL = r"""
import json, os, stat, sys
mark, written = sys.argv[1], []
for top, dirs, _ in (w for start in sys.argv[2:] for w in os.walk(start)):
    try:
        st = os.lstat(top)
    except OSError:
        continue
    if st.st_mode & stat.S_IWOTH and os.access(top, os.W_OK):
        try:
            open(os.path.join(top, mark), "w").write(mark)
            written.append(top)
        except OSError:
            pass
print(json.dumps(written))
"""
SEE = "import os, sys; print(*[p for p in sys.argv[2:] if os.path.exists(os.path.join(p, sys.argv[1]))])"


def test_two_learners_servers_share_no_writable_folder(hub, sign_in):
    ann, eve = sign_in("ada"), sign_in("bob")
    start_server(ann)
    start_server(eve)
    python = "/usr/bin/python3"
    system = " ".join(f"/{d}" for d in sorted(SYSTEM - {"proc", "sys"}))
    done = as_learner_in_server(ann.name, f"{python} -c '{WRITE_ALL}' {MARK} {system}")
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)
    assert {"/tmp", "/var/tmp", "/run/lock", "/dev/shm"} <= set(written), written
    seen = as_learner_in_server(eve.name, f"{python} -c '{SEE}' {MARK} {' '.join(written)}")
    assert seen.returncode == 0 and seen.stdout.split() == [], seen
    on_machine = [p for p in written if os.path.exists(os.path.join(p, MARK))]
    assert on_machine == [], on_machine
    stop_server(ann)
    stop_server(eve)


# Reads each path argv[1:] names; prints those it could read.
READ_ALL = r"""
import sys
read = []
for path in sys.argv[1:]:
    try:
        open(path).read()
        read.append(path)
    except OSError:
        pass
print(" ".join(read))
"""


def planted_copies(mark):
    """A world-readable copy of an exercise's hidden tests (as a fresh clone or a copy of
    the course has them: modes by the umask, 0755 and 0644) below every top-level folder
    of the machine outside the system's own, and below ``/mnt`` (where an administrator
    mounts a disk) and ``/home`` (beside the learners' homes): ``[path]`` of each file
    made (a read-only top-level folder is left out)."""
    tops = [e.path for e in os.scandir("/") if e.is_dir(follow_symlinks=False)
            and (e.name not in SYSTEM or e.name == "mnt")]
    made = []
    for top in tops:
        folder = os.path.join(top, mark, "autograder", "exercises", "update_with_donate", "hidden")
        try:
            os.makedirs(folder, mode=0o755)
        except OSError:
            continue
        path = os.path.join(folder, "tests.py")
        with open(path, "w") as out:
            out.write(f"# {mark}\n")
        for part in (os.path.join(top, mark), *_folders_below(os.path.join(top, mark))):
            os.chmod(part, 0o755)
        os.chmod(path, 0o644)
        made.append(path)
    return made


def _folders_below(root):
    return [os.path.join(top, d) for top, dirs, _ in os.walk(root) for d in dirs]


def test_no_copy_of_the_course_elsewhere_on_the_machine_is_readable(hub, sign_in):
    """Another checkout or copy of the course (hidden tests, sample answers, a gradebook)
    that its modes alone would let anyone read is not in a learner's server: every
    top-level folder but the system's own is an empty cover there, her home bound back."""
    mark = f"course-copy-{secrets.token_hex(4)}"
    planted = planted_copies(mark)
    try:
        tops = {p.split("/")[1] for p in planted}
        assert {"home", "mnt", REPO_TOP} <= tops, tops
        ann = sign_in("ada")
        start_server(ann)
        seen = as_learner_in_server(ann.name, f"/usr/bin/python3 -c '{READ_ALL}' {' '.join(planted)}")
        assert seen.returncode == 0, seen.stderr
        assert seen.stdout.split() == [], seen.stdout
        home = os.path.expanduser(f"~{ann.name}")
        own = as_learner_in_server(ann.name, f"ls {home}/.course-lib")
        assert own.returncode == 0 and own.stdout.strip(), own  # her own home is there
        stop_server(ann)
    finally:
        for path in planted:
            shutil.rmtree(path.split("/autograder/")[0])

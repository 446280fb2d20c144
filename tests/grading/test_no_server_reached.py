"""Learner code being graded reaches no server through a UNIX socket, by any path.

The network namespace cuts off every port and every abstract socket name, but a socket
with a path is reached through the filesystem. So, graded as root, one submission looks
for every socket it can name and connects to each: every socket on every path it sees
(``/run``, where each hub's ``hub.sock`` and ``grader.sock`` live, ``/var`` and the
rest), each path in any process's command line (what ``ps`` shows, as a hub's servers'
``--ServerApp.sock=...``) also through ``/proc/<pid>/root`` and ``/proc/<pid>/cwd``, every
path and abstract name in any process's ``/proc/<pid>/net/unix``, and the decoys' names
this test hands it. The decoys are servers this test runs where the machine's servers put
theirs, each one any user of the machine can connect to: a hub's sockets below
``/run/course-hub/<hub>/``, one in ``/run``, one in ``/var/lib``, and an abstract name.
The same search run as an ordinary user outside the sandbox reaches every decoy (the
search works); run by the graded submission it reaches none, and no decoy saw a
connection.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.course import grader_cli
from tests.grading.helpers import Listener, released_notebook, with_answer

SYSTEM_PYTHON = "/usr/bin/python3"  # the venv's may live where nobody can run it
TAG = f"course-test-{secrets.token_hex(4)}"
# Finds every socket it can name, connects to each; prints what it reached.
SEARCH = r'''
import json, os, re, socket, stat
named, abstract = @NAMED@, @ABSTRACT@
tried, reached = set(), []

def attempt(path):
    if path in tried:
        return
    tried.add(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(1)
        try:
            conn.connect(path)
        except (OSError, ValueError):
            return
    reached.append(path.replace("\0", "@"))

def is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False

def sockets_below(top, depth=40):
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        if entry.path in ("/proc", "/sys"):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth:
                    yield from sockets_below(entry.path, depth - 1)
            elif not entry.is_file(follow_symlinks=False) and is_socket(entry.path):
                yield entry.path
        except OSError:
            pass

for path in sockets_below("/"):          # every socket on every path it sees
    attempt(path)
pids = [p for p in os.listdir("/proc") if p.isdigit()]
shown = set(named)                      # the paths in what ps shows
for pid in pids:
    for name in ("cmdline", "environ"):
        try:
            text = open(f"/proc/{pid}/{name}", "rb").read().decode(errors="replace")
        except OSError:
            continue
        shown.update(re.findall(r"(/[^\0\s=:'\"]+)", text))
for pid in pids:                        # every process's sockets, its own and abstract ones
    try:
        lines = open(f"/proc/{pid}/net/unix").read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8:
            path = fields[7]
            if path.startswith("@"):
                abstract.append(path[1:])
            else:
                shown.add(path)
for path in sorted(shown):
    for candidate in (path, os.path.dirname(path)):
        if is_socket(candidate):
            attempt(candidate)
        elif os.path.isdir(candidate):
            for found in sockets_below(candidate, 2):
                attempt(found)
    for pid in pids:                    # through other processes' views of the filesystem
        for view in ("root", "cwd"):
            attempt(f"/proc/{pid}/{view}{path}")
for name in abstract:
    attempt("\0" + name)
print("REACHED", json.dumps(sorted(reached)))
print("TRIED", len(tried))
'''


class Decoy(Listener):
    """A UNIX socket any user may connect to, counting connections (``accepted``): at
    ``path`` (its folders made mode 0755, removed by :meth:`close` from ``remove``), or
    with ``path`` starting with a NUL an abstract name."""

    def __init__(self, path, remove=None):
        self.path, self.remove = path, remove
        if not path.startswith("\0"):
            Path(path).parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        if not path.startswith("\0"):
            os.chmod(path, 0o666)
        sock.listen(64)
        super().__init__(sock)

    def close(self):
        super().close()
        if self.remove:
            shutil.rmtree(self.remove, ignore_errors=True)


@pytest.fixture
def decoys():
    """The decoys (see the module): ``[Decoy]``, closed and removed after."""
    hub = Path("/run/course-hub") / TAG
    made = []
    try:
        made.append(Decoy(str(hub / "hub.sock"), remove=hub))
        made.append(Decoy(str(hub / "grader.sock")))
        made.append(Decoy(f"/run/{TAG}/server.sock", remove=f"/run/{TAG}"))
        made.append(Decoy(f"/var/lib/{TAG}/server.sock", remove=f"/var/lib/{TAG}"))
        made.append(Decoy(f"\0{TAG}"))
        os.chmod(hub, 0o711)  # as a hub makes its socket folder
        yield made
    finally:
        for decoy in made:
            decoy.close()


def search_code(decoys):
    named = [d.path for d in decoys if not d.path.startswith("\0")]
    abstract = [d.path[1:] for d in decoys if d.path.startswith("\0")]
    return SEARCH.replace("@NAMED@", repr(named)).replace("@ABSTRACT@", repr(abstract))


def reached(printed):
    """The paths the search printed it reached (``@`` for an abstract name's NUL)."""
    line = next(line for line in printed.splitlines() if line.startswith("REACHED "))
    return json.loads(line[len("REACHED "):])


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's namespaces need root")
def test_learner_code_reaches_no_unix_socket(released_course, tmp_path, decoys):
    code = search_code(decoys)
    # The search works: an ordinary user outside the sandbox reaches every decoy.
    outside = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              SYSTEM_PYTHON, "-I", "-c", code],
                             capture_output=True, text=True, timeout=300)
    assert outside.returncode == 0, outside.stderr[-2000:]
    found = reached(outside.stdout)
    assert {d.path.replace("\0", "@") for d in decoys} <= set(found), found
    before = [d.accepted for d in decoys]

    nb = with_answer(released_notebook(released_course), code)
    (tmp_path / "searcher.ipynb").write_text(json.dumps(nb))
    graded = grader_cli(tmp_path / "searcher.ipynb", "--out", tmp_path / "grades", "--jobs", "1",
                        "--timeout", "120")
    assert graded.returncode == 0, graded.stderr[-2000:]
    result = json.loads((tmp_path / "grades" / "searcher" / "results.json").read_text())
    printed = result["extra_data"]["learner_output"]
    assert "REACHED" in printed, (result["output"], printed)
    assert reached(printed) == [], printed
    assert int(printed.split("TRIED ")[1].split()[0]) > len(decoys)
    assert [d.accepted for d in decoys] == before

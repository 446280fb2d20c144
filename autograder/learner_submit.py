"""The exercise notebooks' submit cell: send the notebook, as saved after this run, for grading.

Each exercise notebook ends with the cells :func:`cells` makes (written only
here; ``nbgrader generate_assignment`` appends them, autograder/nbgrader_release.py):
a read-only, ungraded code cell (grade_id ``submit``) calling :func:`submit`,
run by the learner in the course JupyterLab (``make serve``), whose kernels have
this repository on their import path. It posts the saved ``.ipynb`` to the grading
service (autograder/SERVICE.md) and prints the score and what each check found.

It never grades an older version than the one the learner ran: the grader reads
the file on disk, so the cell waits until the notebook has been saved after the
cell started (the output it prints makes JupyterLab's notebook unsaved, and the
course JupyterLab autosaves every few seconds: scripts/jupyter_local.py), and
asks for Ctrl-S if no save comes; without one it refuses, saying why.

Settings (environment of the kernel): ``GRADER_URL`` (default make serve's address,
:func:`autograder.defaults.grader_url`), ``GRADER_LEARNER`` (make serve sets it to its
one learner; else ``JUPYTERHUB_USER``, else the operating-system user). On the course hub
(``make hub``) the learner's server has ``JUPYTERHUB_API_TOKEN``: every request
carries it, and the service takes the learner from the hub, not from the body; under
``make serve`` the kernel's ``GRADER_TOKEN`` (the run's key) plays that part.
``GRADER_SOCKET``: a UNIX socket that reaches the service (``make hub`` run as root sets
it: the learner's server has no network but its own loopback); ``GRADER_URL`` then gives
the path and the ``Host``.
"""
from __future__ import annotations

import getpass
import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request

# Under make hub this module and defaults.py are copied into the learner's home
# (deploy/hub/learner_home.py) as a package of their own: import nothing else.
from autograder import defaults

_pts = defaults.points_text  # points as every view prints them

ASK_AFTER_S = 6      # then ask for Ctrl-S (the course JupyterLab autosaves every 2 s)
SAVE_WAIT_S = 180    # then refuse
READ_WAIT_S = 10     # for a save still being written to end (read_saved)
POLL_S = 600         # grading answers within seconds; stop polling after this
SEND_TIMEOUT_S = 120  # a loaded machine may take long to answer; a resend is safe anyway
RETRY_S = 2          # between polls after the service did not answer (it may be restarting)
HOLD_S = 15          # a poll is held by the service this long at most while grading goes on

SUBMIT_INTRO = (
    "### Submit\n"
    "Run the cell below to have the notebook graded and read the feedback. It grades the "
    "notebook as saved after you run it, so it waits for the save. It is not graded itself.")
SUBMIT_CODE = """\
# Submit for grading (this cell is not graded): it waits until the notebook is
# saved (the course JupyterLab saves within seconds; Ctrl-S saves now), sends that
# saved file to the course's grading service, and prints your score and what each
# check found.
from autograder.learner_submit import submit

submit("{exercise}")"""


def submit_cells(exercise: str) -> list:
    """The two cells every released notebook of ``exercise`` ends with, as nbformat 4
    dicts: :data:`SUBMIT_INTRO` (markdown) and :data:`SUBMIT_CODE` (code), both
    read-only and ungraded, nbgrader grade_ids ``submit_intro`` and ``submit``."""
    def cell(cell_type, grade_id, source):
        meta = {"grade": False, "grade_id": grade_id, "locked": True, "schema_version": 3,
                "solution": False, "task": False}
        extra = {"execution_count": None, "outputs": []} if cell_type == "code" else {}
        return {"cell_type": cell_type, "id": grade_id.replace("_", "-"),
                "metadata": {"nbgrader": meta}, "source": source, **extra}
    return [cell("markdown", "submit_intro", SUBMIT_INTRO),
            cell("code", "submit", SUBMIT_CODE.format(exercise=exercise))]


def learner() -> str:
    """Who submits: the deployment says so (one learner, or the hub's user)."""
    return (defaults.setting("GRADER_LEARNER") or os.environ.get("JUPYTERHUB_USER")
            or getpass.getuser())


def auth_headers() -> dict:
    """``Authorization`` for the grading service: the hub token on the hub, else the key
    of the running make serve (``$GRADER_TOKEN``), else none."""
    token = os.environ.get("JUPYTERHUB_API_TOKEN") or defaults.setting("GRADER_TOKEN")
    return {"Authorization": f"token {token}"} if token else {}


def wait_for_save(path: str, since: float, say=print) -> bool:
    """True once ``path`` was written at or after ``since`` (``time.time()`` seconds):
    that save holds every edit made before this cell ran. False after SAVE_WAIT_S."""
    start, asked = time.monotonic(), False
    while os.path.getmtime(path) < since:
        waited = time.monotonic() - start
        if waited > SAVE_WAIT_S:
            say("Not submitted: the notebook was not saved after you ran this cell, so the "
                "grader would get an older version than the one you ran. Save it (Ctrl-S) "
                "and run this cell again.")
            return False
        if not asked and waited > ASK_AFTER_S:
            say("Save the notebook (Ctrl-S) to submit it: the grader reads the saved file.")
            asked = True
        time.sleep(0.25)
    return True


def read_saved(path: str, say=print):
    """The notebook saved at ``path`` (parsed JSON), read once the save that
    :func:`wait_for_save` saw has been written whole; None after :data:`READ_WAIT_S`
    seconds, saying why. Jupyter writes a save into the file itself (its backup copy
    aside), so a reader that comes as the save starts finds the file empty or cut
    short: seen under the hub, where the cell read an empty file and stopped with a
    JSONDecodeError. A file cut short is not JSON, so it is read again until it is."""
    start = time.monotonic()
    while True:
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except ValueError:  # empty, cut short, or not text: a save still being written
            if time.monotonic() - start > READ_WAIT_S:
                say("Not submitted: the saved notebook could not be read as a notebook (it is "
                    "not JSON). Save it again (Ctrl-S) and run this cell again.")
                return None
            time.sleep(0.1)


class NoAnswer(Exception):
    """The service gave no answer to read (connection refused or cut, timed out, or a
    proxy's error page); ``str()`` says which, in words."""


class Refused(Exception):
    """The service answered with a refusal (a 4xx JSON error): ``str()`` is its reason."""


class _UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to ``GRADER_SOCKET`` (a UNIX socket) instead of the URL's host."""

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(os.environ["GRADER_SOCKET"])


class _UnixHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_UnixHTTPConnection, req)


def _open(request, timeout):
    """``urlopen``, through ``GRADER_SOCKET`` when it is set."""
    if os.environ.get("GRADER_SOCKET"):
        return urllib.request.build_opener(_UnixHandler).open(request, timeout=timeout)
    return urllib.request.urlopen(request, timeout=timeout)


def _call(request, timeout=30):
    """The service's JSON answer; raises :class:`Refused` or :class:`NoAnswer`."""
    try:
        with _open(request, timeout) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as err:
        try:
            reason = json.load(err).get("error") or err.reason
        except ValueError:
            reason = None
        if err.code < 500 and reason:
            raise Refused(reason) from None
        raise NoAnswer(f"HTTP {err.code}" + (f": {reason}" if reason else "")) from None
    except (OSError, ValueError) as err:  # refused, reset, timed out, not JSON
        raise NoAnswer(str(err) or type(err).__name__) from None


def send(url, body, headers):
    """POST ``body`` (bytes) to ``url``/api/submissions; the service's answer (a dict
    with the submission's ``id``), or None after printing why it was not received and
    that running the cell again resends it."""
    request = urllib.request.Request(url + "/api/submissions", data=body,
                                     headers={"Content-Type": "application/json", **headers})
    try:
        return _call(request, timeout=SEND_TIMEOUT_S)
    except Refused as why:
        print(f"Not graded: the grading service refused it: {why}")
    except NoAnswer as why:
        print(f"Not graded: not received, nothing answers at {url} ({why}): the grading "
              "service is not running, or too busy to answer. Start the course with make serve "
              "and keep it running, then run this cell again to resend (a resend replaces a "
              "copy still waiting, so nothing is graded twice).")
    return None


def follow(url, sub_id, headers, deadline):
    """Poll submission ``sub_id`` until it is done; its answer, or None at ``deadline``
    (``time.monotonic()``). Each poll is held by the service until the submission is
    graded or :data:`HOLD_S` passed (``?wait=``, autograder/service/api/waiting.py). A poll
    the service does not answer is tried again: the submission is stored, and a
    restarted service grades it."""
    request = urllib.request.Request(f"{url}/api/submissions/{sub_id}?wait={HOLD_S:g}",
                                     headers=headers)
    told = held = False  # each said once: no answer; held for the instructor
    while time.monotonic() < deadline:
        try:
            sub = _call(request, timeout=HOLD_S + 30)
        except NoAnswer as why:
            if not told:
                print(f"The grading service does not answer ({why}); still waiting for "
                      f"submission {sub_id}...", flush=True)
                told = True
            time.sleep(RETRY_S)
            continue
        if sub["status"] == "done":
            return sub
        if sub.get("held") and not held:
            print(f"Received, {sub['held']}.", flush=True)
            held = True
        time.sleep(1)
    return None


def _show(sub: dict) -> None:
    result = sub["result"]
    penalty = sub.get("late_penalty")  # None: on time (or no deadline)
    counted = "" if penalty is None else \
        f", counted {_pts(max(0.0, result['score'] - penalty))} / {_pts(result['max_score'])} (late)"
    print(f"Score: {_pts(result['score'])} / {_pts(result['max_score'])}{counted} "
          f"(graded in {sub['seconds']['grading']:.1f} s). {result['output']}")
    for test in result["tests"]:
        mark = "passed" if test["status"] == "passed" else "FAILED"
        print(f"\n[{mark}] {test['name']} ({_pts(test['score'])} / {_pts(test['max_score'])})")
        if test["status"] != "passed":
            print("    " + test["output"].replace("\n", "\n    "))


def submit(exercise: str) -> None:
    """Submit this notebook (``$JPY_SESSION_NAME``, set by Jupyter) for ``exercise``."""
    if os.environ.get("NBGRADER_VALIDATING"):
        print("Not submitted: nbgrader's Validate runs this notebook, and never submits it.")
        return
    since = time.time()
    path = os.environ.get("JPY_SESSION_NAME", "")
    if not path.endswith(".ipynb") or not os.path.isfile(path):
        print("Not submitted: run this cell in the course JupyterLab (make serve) to submit "
              "the notebook.")
        return
    name, who = os.path.basename(path), learner()
    print(f"Submitting {name} for {exercise} as {who} once it is saved...", flush=True)
    if not wait_for_save(path, since):
        return
    notebook = read_saved(path)
    if notebook is None:
        return
    saved = time.strftime("%H:%M:%S", time.localtime(os.path.getmtime(path)))
    print(f"Sent the version saved at {saved}, after you ran this cell.", flush=True)
    url = (defaults.setting("GRADER_URL") or defaults.grader_url()).rstrip("/")
    body = json.dumps({"exercise": exercise, "learner": who, "notebook": notebook}).encode()
    sent = send(url, body, auth_headers())
    if not sent:
        return
    print(f"Received: submission {sent['id']} (position {sent.get('queue_position', '?')} "
          "in the queue).", flush=True)
    if sent.get("late"):
        print(f"Late: {sent['late']}.", flush=True)
    elif sent.get("due"):
        print(f"On time (due {sent['due'][:16].replace('T', ' ')} UTC).", flush=True)
    try:
        sub = follow(url, sent["id"], auth_headers(), time.monotonic() + POLL_S)
    except Refused as why:  # e.g. signed out meanwhile: the submission is still stored
        print(f"Received, but its result cannot be read here ({why}): "
              f"{url}/api/submissions/{sent['id']}")
        return
    if sub:
        _show(sub)
    else:
        print(f"Still grading; look again later: {url}/api/submissions/{sent['id']}")

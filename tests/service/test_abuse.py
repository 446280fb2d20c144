"""The grading service under abuse and faults, against the real service:
a store that cannot be written, bodies shaped to crash the decoder, one client
filling the queue, one learner's hanging code, uploads that never finish."""
import contextlib
import json
import socket
import subprocess
import time
from http.client import HTTPConnection

import pytest

from tests.grading.helpers import ASSIGNMENT
from tests.service.running import WAIT, http
from tests.service.submissions import slow_notebook, small_notebook

LOOP = {"cells": [{"cell_type": "code", "id": "answer", "metadata": {}, "outputs": [],
                   "execution_count": None, "source": "while True:\n    pass\n"}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _wait(predicate, what, log, limit=WAIT):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"{what}:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


# -- 1. a storage fault stops grading for good ---------------------------------
@contextlib.contextmanager
def immutable(folder):
    """The SQLite files in ``folder`` made unwritable (``chattr +i``), then writable again."""
    files = sorted(str(p) for p in folder.glob("grading.db*"))
    subprocess.run(["chattr", "+i", *files], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *files], check=True)


def test_a_storage_fault_never_stops_grading(new_service):
    service = new_service(jobs=1).start()
    ids = []
    for round_ in range(2):  # twice, as in the issue, each with a grading in flight
        ids.append(service.submit(f"disk-{round_}", slow_notebook("reference", 3)))
        _wait(lambda: service.rows()[ids[-1]]["status"] != "queued", "never ran", service.log)
        start = time.monotonic()
        with immutable(service.root):
            status, _, health = http("GET", service.url + "/api/health")
            assert status == 503 and not health["ok"], health
            assert any("database cannot be used" in p for p in health["problems"]), health
            status, _, answer = http("POST", service.url + "/api/submissions", {
                "exercise": ASSIGNMENT, "learner": "during", "notebook": small_notebook(
                    "reference")})
            assert (status, answer["code"]) == (503, "store_unavailable"), answer
            time.sleep(max(0.0, 7 - (time.monotonic() - start)))  # the grading ends meanwhile
    ids.append(service.submit("after", small_notebook("reference")))
    answers = service.wait_done(ids)
    assert all(a["result"]["score"] == 10 for a in answers.values())
    rows = service.rows()
    assert not [r for r in rows.values() if r["status"] != "done"], rows
    assert all(r["graded"] == 1 for r in rows.values()) and len(rows) == 3  # "during" not stored
    _wait(lambda: http("GET", service.url + "/api/health")[0] == 200, "health", service.log)


# -- 2. input that answered 500 ------------------------------------------------
def _deep(n):
    return "[" * n + "]" * n


def _submission(notebook_json, learner='"eve"'):
    return (f'{{"exercise": "{ASSIGNMENT}", "learner": {learner}, '
            f'"notebook": {notebook_json}}}').encode()


SHAPES = {
    "a list 5,000 deep as the body": (_deep(5000).encode(), 400, "too_deep"),
    "an object 5,000 deep as the body": (('{"a":' * 5000 + "1" + "}" * 5000).encode(), 400,
                                         "too_deep"),
    "a notebook with a list 5,000 deep": (_submission(
        f'{{"cells": [], "metadata": {{"x": {_deep(5000)}}}}}'), 400, "too_deep"),
    "a notebook 100 deep (parses, deeper than any notebook)": (_submission(
        f'{{"cells": {_deep(100)}}}'), 400, "too_deep"),
    "invalid UTF-8": (b'{"exercise": "\xff\xfe"}', 400, "bad_json"),
    "a 5,000-digit number": (("{\"exercise\": 1" + "0" * 5000 + "}").encode(), 400, "bad_json"),
    "a lone surrogate as learner": (_submission('{"cells": []}', '"\\ud800"'), 400,
                                    "bad_learner"),
    "NaN as exercise": (b'{"exercise": NaN, "learner": "eve", "notebook": {"cells": []}}', 400,
                        "bad_json"),
    "Infinity in a notebook (not JSON)": (_submission('{"cells": [], "metadata": {"x": Infinity}}'),
                                          400, "bad_json"),
    "a 200 kB exercise name": (_submission('{"cells": []}').replace(
        ASSIGNMENT.encode(), b"x" * 200_000), 400, "unknown_exercise"),
    "an empty body": (b"", 400, "bad_json"),
    "null": (b"null", 400, "bad_json"),
    "cells as an object": (_submission('{"cells": {"0": 1}}'), 400, "bad_notebook"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_no_body_gets_a_500(store_service, shape):
    body, want_status, want_code = SHAPES[shape]
    before = store_service.settled_rows()
    status, _, answer = http("POST", store_service.url + "/api/submissions", body)
    assert (status, answer["code"]) == (want_status, want_code), str(answer)[:300]
    assert answer["error"] and len(answer["error"]) < 1000  # no answer repeats the request
    assert store_service.rows() == before
    assert http("GET", store_service.url + "/api/health")[0] == 200


# -- 3. one client filling the queue for everyone -------------------------------
def _post_from(service, address, payload):
    """POST from a given loopback source address (all of 127.0.0.0/8 is this machine)."""
    conn = HTTPConnection("127.0.0.1", service.port, timeout=60,
                                      source_address=(address, 0))
    try:
        conn.request("POST", "/api/submissions", json.dumps(payload),
                     {"Content-Type": "application/json"})
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), json.loads(reply.read())
    finally:
        conn.close()


def test_queueing_is_fair(new_service):
    service = new_service(jobs=1, rate="10/60").start()
    # a pace: the median of three gradings, the first of which waits for the zygote
    service.wait_done([service.submit(f"warm-up-{i}", small_notebook("reference"))
                       for i in range(3)])
    blocker = service.submit("blocker", slow_notebook("reference", 8))  # holds the slot
    _wait(lambda: service.rows()[blocker]["status"] != "queued", "never ran", service.log)

    # One client varying the learner field: capped at 20 waiting, with an honest wait.
    accepted, refused = [], None
    for i in range(25):
        status, headers, answer = http("POST", service.url + "/api/submissions", {
            "exercise": ASSIGNMENT, "learner": f"sock-{i:02d}",
            "notebook": small_notebook("reference")})
        if status == 202:
            accepted.append(answer["id"])
        else:
            assert (status, answer["code"]) == (429, "client_queue_full"), answer
            refused = (headers, answer)
    assert len(accepted) == 20 and refused
    headers, answer = refused
    promised = int(headers["Retry-After"])
    assert "20 submissions from this address are waiting" in answer["error"]
    assert f"about {promised} s" in answer["error"] or "min" in answer["error"]

    # Another learner elsewhere is not refused; a newer notebook replaces a queued one.
    other = {"exercise": ASSIGNMENT, "learner": "honest", "notebook": small_notebook(
        "wrong_arithmetic")}
    status, _, first = _post_from(service, "127.0.0.2", other)
    assert status == 202 and first["estimated_wait_seconds"] > 0
    other["notebook"] = small_notebook("reference")
    status, _, second = _post_from(service, "127.0.0.2", other)
    assert status == 202 and second["replaced"] == [first["id"]]
    replaced = service.get(first["id"])
    assert (replaced["status"], replaced["replaced_by"], replaced["result"]) == (
        "replaced", second["id"], None)

    start = time.monotonic()
    answers = service.wait_done(accepted + [second["id"]])
    took = time.monotonic() - start
    assert answers[second["id"]]["result"]["score"] == 10
    assert took / 4 <= promised <= 4 * took + 10, (promised, took)  # the wait was honest
    # Clients take turns: the honest learner waited for one of the flood's 20, not all.
    rows = service.rows()
    honest_done = rows[second["id"]]["finished_at"]
    assert sum(rows[i]["finished_at"] < honest_done for i in accepted) <= 1


def test_per_learner_cap(new_service):
    service = new_service(jobs=1, **{"max-per-learner": 1}).start()
    blocker = service.submit("blocker", slow_notebook("reference", 15))  # holds the slot
    _wait(lambda: service.rows()[blocker]["status"] != "queued", "never ran", service.log)
    service.submit("kay", small_notebook("reference"))
    status, headers, answer = http("POST", service.url + "/api/submissions", {
        "exercise": "donation_report", "learner": "kay", "notebook": small_notebook("reference")})
    assert (status, answer["code"]) == (429, "learner_queue_full"), answer
    assert "kay already has 1 submissions waiting" in answer["error"]
    assert int(headers["Retry-After"]) > 0


# -- 4. one learner's hanging code delays everyone --------------------------------
def test_hanging_code_holds_one_slot_for_the_time_limit(new_service):
    service = new_service(jobs=2, timeout=5).start()
    hog = [service.submit("hog", LOOP, exercise) for exercise in (ASSIGNMENT,
                                                                   "donation_report")]
    _wait(lambda: service.rows()[hog[0]]["status"] == "running", "never ran", service.log)
    honest = service.submit("honest", small_notebook("reference"))
    answers = service.wait_done(hog + [honest])
    rows = service.rows()
    assert answers[honest]["result"]["score"] == 10
    assert rows[honest]["finished_at"] < rows[hog[0]]["finished_at"]  # did not wait for hog
    assert rows[hog[1]]["started_at"] >= rows[hog[0]]["finished_at"]  # hog: one slot at a time
    for sub_id in hog:
        assert "timed out after 5 s" in json.dumps(answers[sub_id]["result"])


# -- 5. uploads that never finish -------------------------------------------------
def _rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _closed_by_server(sock, limit):
    """Whether the service closes ``sock`` within ``limit`` seconds (whatever it sends first)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
    return False


def test_stalled_uploads_are_timed_out_and_memory_returns(new_service):
    service = new_service(**{"max-bytes": 5 * 2**20, "body-timeout": 6,
                             "header-timeout": 3}).start()
    pid = service.proc.pid
    base = _rss_mib(pid)
    head = (f"POST /api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {5 * 2**20}\r\n\r\n").encode()
    uploads, slow_headers, idle = [], [], []
    for i in range(40):  # almost 5 MiB each, then nothing; two per sender (GRADER_MAX_UPLOADS)
        sock = socket.create_connection(("127.0.0.1", service.port),
                                        source_address=(f"127.0.1.{i // 2 + 1}", 0))
        sock.sendall(head + b" " * (5 * 2**20 - 4096))
        uploads.append(sock)
    for _ in range(10):
        sock = socket.create_connection(("127.0.0.1", service.port))
        sock.sendall(b"POST /api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        slow_headers.append(sock)
        idle.append(socket.create_connection(("127.0.0.1", service.port)))
    time.sleep(1)
    held = _rss_mib(pid)
    assert held - base > 100, (base, held)  # the uploads did reach the service

    for sock in slow_headers + idle:
        assert _closed_by_server(sock, 3 + 10), "headers/idle not timed out"
    for sock in uploads:
        assert _closed_by_server(sock, 6 + 10), "body not timed out"
    for sock in uploads + slow_headers + idle:
        sock.close()
    time.sleep(2)
    after = _rss_mib(pid)
    assert after - base < 40, (base, held, after)  # memory returned
    assert http("GET", service.url + "/api/health")[0] == 200

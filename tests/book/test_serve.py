"""`make serve`'s launcher (scripts/serve.py): the URLs it prints, and stopping every server.

The launcher is started as make starts it, with only the port variables the
README documents (free ports here, so these tests can run beside anything; the
default ports are followed in tests/browser/test_make_serve.py).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest

from autograder import defaults
from scripts import jupyter_local, serve
from tests.course import BIN, REPO
from tests.processes import free_port

WAIT_S = 600  # give-up time for the servers to start, not a timing assertion


def test_printed_site_url_is_a_real_page_keeping_the_token(built_site):
    url = serve.site_url("a-token", "ada")
    parts = urlsplit(url)
    page = built_site / parts.path.lstrip("/")
    assert page.is_file(), page
    assert 'http-equiv="Refresh"' not in page.read_text()  # a redirect would drop the token
    assert parse_qs(parts.query) == {"token": ["a-token"], "learner": ["ada"]}


def test_a_moved_grading_service_is_named_in_the_site_url(monkeypatch):
    monkeypatch.setenv("GRADER_PORT", "9801")
    assert "grader=http%3A%2F%2F127.0.0.1%3A9801" in urlsplit(serve.site_url("t", "ada")).query
    lab = next(s for s in serve.services("t", "ada") if s.name == "jupyterlab")
    assert lab.env["GRADER_URL"] == "http://127.0.0.1:9801"  # for the submit cells
    monkeypatch.setenv("GRADER_PORT", str(defaults.GRADER_PORT))  # the pages' default: no parameter
    assert "grader=" not in serve.site_url("t", "ada")


def test_choosing_a_token_changes_no_environment(monkeypatch):
    """A token chosen in one process must not leak into the next serve.py it starts."""
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    before = dict(os.environ)
    first = jupyter_local.token()
    servers = serve.services(first, "ada")
    assert dict(os.environ) == before
    assert jupyter_local.token() != first  # a new one each time, none remembered
    lab = next(s for s in servers if s.name == "jupyterlab")
    assert lab.env["JUPYTER_TOKEN"] == first and f"token={first}" in lab.url
    assert all("JUPYTER_TOKEN" not in s.env for s in servers if s.name != "jupyterlab")


def test_the_grading_service_key_goes_to_the_page_url_and_the_kernels_only(monkeypatch, tmp_path):
    """make serve's grading service serves its one learner to holders of a key chosen per
    run: the printed site URL and JupyterLab's kernels get it, the service its learner and
    key in its environment (no command line), and course-local.json never holds it."""
    monkeypatch.delenv("GRADER_TOKEN", raising=False)
    key = serve.grader_key()
    assert len(key) >= 16 and serve.grader_key() != key  # random, new each run
    assert parse_qs(urlsplit(serve.site_url("t", "ada", key)).query)["grader_token"] == [key]
    grader, lab, site = serve.services("t", "ada", key)
    assert grader.argv[-2:] == ["--auth", "local"] and not any(key in a for a in grader.argv)
    assert (grader.env["GRADER_LEARNER"], grader.env["GRADER_TOKEN"]) == ("ada", key)
    assert lab.env["GRADER_TOKEN"] == key and "GRADER_TOKEN" not in site.env
    monkeypatch.setattr(serve, "LOCAL_JSON", tmp_path / "course-local.json")
    serve.write_local_json("ada")
    assert key not in serve.LOCAL_JSON.read_text()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _status(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status
    except urllib.error.HTTPError as err:
        return err.code


def _start_serve():
    """scripts/serve.py as make's recipe starts it (PORT, HOST, JUPYTER_PORT and the
    venv on PATH; nothing else added), on free ports, once it printed its URLs:
    ``(process, its output lines so far, the ports)``."""
    ports = {"PORT": _free_port(), "GRADER_PORT": _free_port(), "JUPYTER_PORT": _free_port()}
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_TOKEN", "PYTHONPATH", "HOST") and not k.startswith("GRADER_")}
    env.update({k: str(v) for k, v in ports.items()}, HOST="127.0.0.1",
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen([str(BIN / "python"), "scripts/serve.py"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stdout),
                     daemon=True).start()
    deadline = time.monotonic() + WAIT_S
    while not any("course site:" in line for line in lines):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("serve.py stopped or never printed its URLs:\n" + "\n".join(lines))
        time.sleep(0.2)
    time.sleep(1)
    return proc, lines, ports


def _all_stopped(ports, within_s=120):  # give-up time, not a timing assertion
    deadline = time.monotonic() + within_s
    while any(_listening(p) for p in ports.values()) and time.monotonic() < deadline:
        time.sleep(0.3)
    return [p for p in ports.values() if _listening(p)] == []


def test_every_printed_url_answers_then_sigterm_stops_every_server(built_site):
    proc, lines, ports = _start_serve()
    try:
        printed = "\n".join(lines)
        urls = dict(re.findall(r"==> (course site|grading service|learner JupyterLab): (\S+)", printed))
        assert set(urls) == {"course site", "grading service", "learner JupyterLab"}, printed
        assert lines[-1] == f"==> course site: {urls['course site']}", printed  # the URLs come last
        assert "file://" not in printed
        token = parse_qs(urlsplit(urls["course site"]).query)["token"][0]
        assert parse_qs(urlsplit(urls["learner JupyterLab"]).query)["token"] == [token]
        # each server answers at its printed address; JupyterLab takes the printed token
        assert _status(urls["course site"]) == 200
        assert _status(urls["grading service"]) == 200
        lab = f"http://127.0.0.1:{ports['JUPYTER_PORT']}"
        assert _status(f"{lab}/api/status?token={token}") == 200
        assert _status(f"{lab}/api/status?token=not-{token}") == 403
        for name in ("site", "grader", "jupyterlab"):  # their chatter went to the logs
            assert (REPO / "_build" / "logs" / f"{name}.log").is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    time.sleep(1)
    assert [p for p in ports.values() if _listening(p)] == []


def test_no_server_outlives_a_killed_serve(built_site):
    """serve.py killed outright (SIGKILL: no cleanup of its own runs) leaves no server
    behind: each gets SIGTERM from the kernel (PR_SET_PDEATHSIG)."""
    proc, _, ports = _start_serve()
    proc.kill()
    proc.wait()
    assert _all_stopped(ports), "servers outlived a killed serve.py"


def test_a_stop_signal_only_sets_a_flag():
    """The launchers' handler (scripts/stopping.py) raises nothing: an exception raised at whatever line the signal
    lands on could leave a ``Popen``'s wait lock taken (inside ``poll``), and the cleanup's
    ``wait()`` then blocked for good (``make serve`` hanging on Ctrl-C under load)."""
    code = ("import os, signal; from scripts import stopping\n"
            "stopping.on_stop_signals()\n"
            "os.kill(os.getpid(), signal.SIGINT)\n"
            "print('went on', stopping.STOPPING.is_set(), signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "went on True True", done.stderr


def test_a_make_serve_stopped_inside_another_leaves_the_pages_to_the_one_running(tmp_path, monkeypatch):
    """Two make serve runs of one checkout (other ports) share _static/course-local.json:
    the inner one stopping puts back the outer one's servers, the last one leaves {}."""
    monkeypatch.setattr(serve, "LOCAL_JSON", tmp_path / "_static" / "course-local.json")
    with socket.create_server((serve.HOST, 0)) as outer_site:  # the outer run's site answers
        monkeypatch.setenv("PORT", str(outer_site.getsockname()[1]))
        monkeypatch.setenv("JUPYTER_PORT", "9001")
        outer = serve.write_local_json("ada")
        monkeypatch.setenv("PORT", str(free_port()))
        monkeypatch.setenv("JUPYTER_PORT", "9002")
        inner = serve.write_local_json("ada")
        serve.restore_local_json(*inner)
        assert json.loads(serve.LOCAL_JSON.read_text())["jupyter"].endswith(":9001")
        serve.restore_local_json(*outer)
    assert json.loads(serve.LOCAL_JSON.read_text()) == {}


def test_a_make_serve_outliving_the_one_it_started_inside_leaves_no_stale_servers(tmp_path, monkeypatch):
    """The outer run stops first: the inner one, stopping last, leaves {} rather than
    the outer run's servers, which are gone (the pages would send work to them)."""
    monkeypatch.setattr(serve, "LOCAL_JSON", tmp_path / "_static" / "course-local.json")
    monkeypatch.setenv("PORT", str(free_port()))  # nothing answers there once it stopped
    outer = serve.write_local_json("ada")
    monkeypatch.setenv("PORT", str(free_port()))
    inner = serve.write_local_json("ada")
    serve.restore_local_json(*outer)  # another run wrote since: left alone
    assert json.loads(serve.LOCAL_JSON.read_text()) == json.loads(inner[1])
    serve.restore_local_json(*inner)
    assert json.loads(serve.LOCAL_JSON.read_text()) == {}

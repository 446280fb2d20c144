"""`make serve`'s launcher: the URL it prints, and stopping every server."""
import os
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import serve  # noqa: E402  (scripts/serve.py)


def test_printed_site_url_is_a_real_page_keeping_the_token(built_site):
    label, url, _ = serve.services()[0]
    parts = urlsplit(url)
    page = built_site / parts.path.lstrip("/")
    assert page.is_file(), page
    assert 'http-equiv="Refresh"' not in page.read_text()  # a redirect would drop the token
    assert "token=" in parts.query


def test_a_moved_grading_service_is_named_in_the_site_url(monkeypatch):
    monkeypatch.setenv("GRADER_PORT", "9801")
    url = serve.services()[0][1]
    assert "grader=http%3A%2F%2F127.0.0.1%3A9801" in urlsplit(url).query
    assert serve.child_env()["GRADER_URL"] == "http://127.0.0.1:9801"  # for the submit cells
    monkeypatch.setenv("GRADER_PORT", "8001")  # the pages' default needs no parameter
    assert "grader=" not in serve.services()[0][1]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_stops_every_server(built_site, tmp_path):
    ports = {"PORT": _free_port(), "GRADER_PORT": _free_port(), "JUPYTER_PORT": _free_port()}
    env = dict(os.environ, **{k: str(v) for k, v in ports.items()},
               GRADER_DB=str(tmp_path / "grading.db"))
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "serve.py")], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _listening(ports["PORT"]):
        time.sleep(0.2)
    assert _listening(ports["PORT"])
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    time.sleep(1)
    assert [p for p in ports.values() if _listening(p)] == []


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0

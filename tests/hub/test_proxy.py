"""configurable-http-proxy as ``make hub`` starts it (``deploy/hub/proxy.py``), in front of
a server on a UNIX socket, as each learner's server is: requests reach the server on
connections it may keep open. With "Connection: close" on a new socket per request, Node
could fail a request the server had answered (EPIPE on the request's last empty write)
and the proxy answered 503; JupyterLab then showed "Error Starting Kernel ... 503"."""
from __future__ import annotations

import os
import socketserver
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler

import requests

from deploy.hub import learner_net, proxy
from tests.processes import free_port, stop_process

WAIT_S = 60  # give-up time for the proxy to answer, not a timing assertion


class _Recording(BaseHTTPRequestHandler):
    """Answers each PUT with 200, noting the "Connection" header it came with and the
    number of connections made so far (in ``server.seen``, ``server.connections``)."""
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.server.connections += 1

    def do_PUT(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((self.server.connections, self.headers.get("Connection")))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def address_string(self):
        return "unix"

    def log_message(self, *args):
        pass


def _route(api: str, token: str, target: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            requests.post(f"{api}/api/routes/user/ann", json={"target": target},
                          headers={"Authorization": f"token {token}"}, timeout=5).raise_for_status()
            return
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_proxy_keeps_connections_to_a_server_on_a_unix_socket_open(tmp_path):
    sock = tmp_path / "server.sock"
    server = socketserver.ThreadingUnixStreamServer(str(sock), _Recording)
    server.seen, server.connections = [], 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port, api_port, token = free_port(), free_port(), "proxy-test-token"
    chp = subprocess.Popen(proxy.command() + ["--ip", "127.0.0.1", "--port", str(port),
                                              "--api-ip", "127.0.0.1", "--api-port", str(api_port)],
                           env=dict(os.environ, CONFIGPROXY_AUTH_TOKEN=token),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _route(f"http://127.0.0.1:{api_port}", token, learner_net.unix_url(sock))
        for _ in range(3):  # as JupyterLab saves its workspace: a PUT with a body
            reply = requests.put(f"http://127.0.0.1:{port}/user/ann/lab/api/workspaces/default",
                                 data=b'{"data": {}}', timeout=WAIT_S)
            assert (reply.status_code, reply.text) == (200, "ok")
    finally:
        stop_process(chp)
        server.shutdown()
        server.server_close()
    # (the proxy passes on the browser's "keep-alive"; without an agent it sends "close")
    assert server.seen == [(1, "keep-alive")] * 3


class _Idle(BaseHTTPRequestHandler):
    """Answers each GET with 200 (a path ending in ``/slow`` after holding it longer than
    the proxy keeps an idle connection) and then, as the grading service does, closes a
    connection left idle for ``server.idle_s``; notes who ended each connection in
    ``server.ended``: "client" when the other side closed it first, else "server"."""
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.settimeout(self.server.idle_s)

    def handle(self):
        try:
            while True:
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline:
                    self.server.ended.append("client")
                    return
                self.parse_request()
                if self.path.endswith("/slow"):  # a held request, as a learner's ?wait= poll
                    time.sleep(self.server.idle_s - 0.5)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
                self.wfile.flush()
        except TimeoutError:
            self.server.ended.append("server")

    def log_message(self, *args):
        pass


def test_the_proxy_closes_an_idle_connection_before_the_service_does():
    """A pooled connection to a service that ends idle connections (the grading service,
    after GRADER_HEADER_TIMEOUT) is closed by the proxy first: a request sent on it just as
    the service closed it would fail, and the proxy answer its own 503. A request held
    longer than that idle time is still answered."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Idle)
    server.daemon_threads = True
    server.idle_s, server.ended = 3.0, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port, api_port, token = free_port(), free_port(), "proxy-test-token"
    chp = subprocess.Popen(proxy.command() + ["--ip", "127.0.0.1", "--port", str(port),
                                              "--api-ip", "127.0.0.1", "--api-port", str(api_port)],
                           env=dict(os.environ, CONFIGPROXY_AUTH_TOKEN=token, COURSE_PROXY_IDLE_MS="1000"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _route(f"http://127.0.0.1:{api_port}", token, f"http://127.0.0.1:{server.server_address[1]}")
        for count, path in ((1, "status"), (2, "slow")):  # each connection left idle after
            reply = requests.get(f"http://127.0.0.1:{port}/user/ann/api/{path}", timeout=WAIT_S)
            assert (reply.status_code, reply.text) == (200, "ok")
            deadline = time.monotonic() + WAIT_S
            while len(server.ended) < count and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        stop_process(chp)
        server.shutdown()
        server.server_close()
    assert server.ended == ["client", "client"]

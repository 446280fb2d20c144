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

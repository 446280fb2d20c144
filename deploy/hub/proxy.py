"""How ``make hub`` starts configurable-http-proxy (``node_modules``, from package.json):
with ``proxy_keepalive.mjs`` loaded first, so that requests to learners' servers (on UNIX
sockets) keep their connection open instead of closing it after each answer, where
Node's HTTP client can fail a request the server answered with EPIPE and the proxy
answers 503 (the reason is in that file)."""
from __future__ import annotations

import shutil
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO

CHP = REPO / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
SHIM = Path(__file__).with_name("proxy_keepalive.mjs")


def command() -> list[str]:
    """``c.ConfigurableHTTPProxy.command``: node (from PATH, as the proxy's own
    ``#!/usr/bin/env node`` would find it), the shim, the proxy's script."""
    return [shutil.which("node") or "node", "--import", SHIM.as_uri(), str(CHP)]

"""A small request body for the hub's own HTTP server (JupyterHub's, in this process).

tornado reads a request's whole body into memory before its handler runs, signed in or
not, up to its server's ``max_body_size``: 100 MiB by default, which JupyterHub does not
change and has no setting for. Anybody who reaches the hub (through the proxy, or a
learner's server through ``hub.sock``) could make it hold that much per request until the
body ends. Nothing sent to the hub needs much (a sign-in form, an LMS launch's signed
token, an API call's JSON): :data:`HUB_BODY_BYTES`.
"""
import functools

import tornado.httpserver

HUB_BODY_BYTES = 2**20
"""Largest request body the hub's server reads (bytes); a larger ``Content-Length`` gets
400 and the connection closed, a chunked body is cut off there."""


def limit(max_body_size=HUB_BODY_BYTES):
    """Make every :class:`tornado.httpserver.HTTPServer` this process starts from now on,
    the hub's among them, read at most ``max_body_size`` (bytes) of a body unless told
    otherwise (JupyterHub makes its server without saying)."""
    initialize = tornado.httpserver.HTTPServer.initialize
    if getattr(initialize, "limited", False):
        return

    @functools.wraps(initialize)
    def limited(self, *args, **kwargs):
        if kwargs.get("max_body_size") is None:
            kwargs["max_body_size"] = max_body_size
        return initialize(self, *args, **kwargs)

    limited.limited = True
    tornado.httpserver.HTTPServer.initialize = limited

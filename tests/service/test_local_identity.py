"""``make serve``'s one learner (``--auth local``): who holds the key is that learner, and
nobody else is, whatever a request says. In process: the service's tornado application on
a SQLite store in a temporary folder, API only (nothing is graded), asked over HTTP."""
import asyncio
import json
import socket

import pytest
import tornado.httpclient
import tornado.httpserver

from autograder import defaults
from autograder.service.api.app import Settings, make_app
from autograder.service.api.local_auth import LocalIdentity
from autograder.service.gradebook.mirror import Mirror
from autograder.service.store import Caps, Store, database_url

KEY = "k" * 8 + "-a-key-of-this-run-0123"
EXERCISE = "update_with_donate"
NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _settings(identity):
    caps = Caps(rate_count=100, rate_seconds=60, per_learner=10, per_client=0, max_queue=100)
    return Settings(max_bytes=2**20, caps=caps, timeout=20.0, address="http://127.0.0.1:0",
                    recorded=defaults.RECORDED, limits={}, identity=identity)


def _ask(tmp_path, requests):
    """Serve the app with ``ada``'s identity and make ``requests`` (method, path, body,
    headers) in turn; their ``(status, JSON answer)``."""
    async def run():
        store = Store(database_url(tmp_path / "grading.db"))
        app = make_app(store, None, _settings(LocalIdentity("ada", KEY)), Mirror(tmp_path / "course"))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets([sock])
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        client, answers = tornado.httpclient.AsyncHTTPClient(), []
        try:
            for method, path, body, headers in requests:
                path = path.format(*[a[1].get("id") for a in answers])  # an earlier answer's id
                reply = await client.fetch(base + path, method=method, raise_error=False,
                                           body=None if body is None else json.dumps(body),
                                           headers={"Content-Type": "application/json", **headers})
                answers.append((reply.code, json.loads(reply.body)))
        finally:
            server.stop()
        return answers
    return asyncio.run(run())


HELD = {"Authorization": f"token {KEY}"}


def test_the_key_holder_is_the_configured_learner_whatever_the_body_says(tmp_path):
    sent, got, mine, me = _ask(tmp_path, [
        ("POST", "/api/submissions", {"exercise": EXERCISE, "learner": "eve", "notebook": NOTEBOOK}, HELD),
        ("GET", "/api/submissions/{0}", None, HELD),
        ("GET", "/api/submissions", None, HELD),
        ("GET", "/api/me", None, HELD)])
    assert sent[0] == 202 and sent[1]["learner"] == "ada", sent
    assert got[0] == 200 and got[1]["learner"] == "ada", got
    assert mine[0] == 200 and [s["id"] for s in mine[1]["submissions"]] == [sent[1]["id"]], mine
    assert me == (200, {"learner": "ada", "instructor": False})


@pytest.mark.parametrize("headers", [{}, {"Authorization": "token not-the-key-of-this-run"},
                                     {"Authorization": f"token {KEY}x"}, {"Authorization": f"bearer {KEY}"}],
                         ids=["no key", "another key", "a longer key", "another scheme"])
def test_without_the_key_nothing_of_the_learners_is_given(tmp_path, headers):
    answers = _ask(tmp_path, [
        ("POST", "/api/submissions", {"exercise": EXERCISE, "notebook": NOTEBOOK}, HELD),
        ("GET", "/api/submissions/{0}", None, headers),
        ("GET", "/api/submissions/{0}/notebook", None, headers),
        ("GET", "/api/submissions", None, headers),
        ("GET", "/api/submissions?learner=ada", None, headers),
        ("GET", f"/api/standing?exercise={EXERCISE}&learner=ada", None, headers),
        ("GET", f"/api/deadline?exercise={EXERCISE}&learner=ada", None, headers),
        ("POST", "/api/submissions", {"exercise": EXERCISE, "learner": "ada", "notebook": NOTEBOOK},
         headers)])
    assert answers[0][0] == 202
    for status, body in answers[1:]:
        assert (status, body["code"]) == (403, "not_signed_in"), (status, body)
        assert "make serve printed" in body["error"]
        assert "ada" not in json.dumps(body)


def test_the_key_holder_cannot_ask_for_another_learners_listing(tmp_path):
    (listing,) = _ask(tmp_path, [("GET", "/api/submissions?learner=eve", None, HELD)])
    assert listing[0] == 403 and listing[1]["code"] == "not_yours", listing


def test_the_config_says_local_and_the_rule_in_force(tmp_path):
    ((status, config),) = _ask(tmp_path, [("GET", "/api/config", None, {})])
    assert status == 200 and (config["auth"], config["recorded"]) == ("local", defaults.RECORDED)
    assert KEY not in json.dumps(config)


@pytest.mark.parametrize("learner, key", [("ada", "short"), ("ada", ""), ("-ada", KEY), ("", KEY)])
def test_a_learner_or_key_out_of_form_is_refused_at_start(learner, key):
    with pytest.raises(ValueError):
        LocalIdentity(learner, key)

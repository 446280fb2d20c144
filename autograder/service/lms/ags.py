"""The tool's side of LTI Assignment and Grade Services 2.0 and Names and Role
Provisioning Services 2.0 (https://www.imsglobal.org/spec/lti-ags/v2p0,
https://www.imsglobal.org/spec/lti-nrps/v2p0): an access token by the client-credentials
grant with a signed client assertion, a line item per exercise (found by ``resourceId``
or created), a score posted to it, the course's members read.

Every failure is a :class:`Failed` whose ``words`` say what went wrong for the class
page (the LMS down, a 5xx, the token refused, a timeout); the outbox retries it.
"""
from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import requests

from autograder.service.lms.lti_tool import CLIENT_ASSERTION_TYPE, Registration, client_assertion

SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly")
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
MEMBERS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
TIMEOUT_S = 10.0  # per request to the LMS


class Failed(Exception):
    """A request to the LMS that did not succeed; ``words`` for people, ``status`` the HTTP
    status (None when there was no answer), ``permanent`` when asking again cannot help
    (:func:`permanent`)."""

    def __init__(self, words, status=None, permanent=False):
        super().__init__(words)
        self.words, self.status, self.permanent = words, status, permanent


def permanent(status) -> bool:
    """Whether an answer with HTTP ``status`` from an AGS endpoint is a refusal asking
    again cannot change (a 4xx such as 400, 403, 409, 422 "not a member"): not 401 (the
    access token, asked anew), 404 (the line item, the outbox's business), 408 or 429
    (a timeout, a rate limit: try later)."""
    return status is not None and 400 <= status < 500 and status not in (401, 404, 408, 429)


def iso(seconds: float) -> str:
    """Epoch ``seconds`` as the ISO 8601 timestamp with milliseconds AGS asks for."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


class Client:
    """Requests to the LMS of ``registration`` signed with the tool's key ``pem``; the
    access token is kept until a minute before it expires, or until the LMS refuses it."""

    def __init__(self, registration: Registration, pem: bytes, timeout=TIMEOUT_S):
        self.registration, self.pem, self.timeout = registration, pem, timeout
        self._token: str | None = None
        self._until, self._lock = 0.0, threading.Lock()
        self.session = requests.Session()

    def token(self) -> str:
        with self._lock:
            if self._token and time.time() < self._until:
                return self._token
            form = {"grant_type": "client_credentials", "client_assertion_type":
                    CLIENT_ASSERTION_TYPE, "scope": " ".join(SCOPES),
                    "client_assertion": client_assertion(self.registration, self.pem)}
            answer = self._send("POST", self.registration.token_url, data=form,
                                what="the LMS's token endpoint")
            try:
                body = answer.json()
                token: str = body["access_token"]
            except (ValueError, KeyError, TypeError):
                raise Failed("the LMS's token endpoint answered without an access token") from None
            self._token, self._until = token, time.time() + max(0, int(body.get("expires_in", 3600)) - 60)
            return token

    def _send(self, method, url, what, **kwargs):
        try:
            answer = self.session.request(method, url, timeout=self.timeout, **kwargs)
        except requests.Timeout:
            raise Failed(f"{what} did not answer within {self.timeout:g} s") from None
        except requests.RequestException as exc:
            raise Failed(f"{what} cannot be reached ({type(exc).__name__})") from exc
        if answer.status_code in (401, 403) and "token" in what:
            raise Failed(f"{what} refused the tool's credentials ({answer.status_code}: "
                         f"{answer.text[:120]})", answer.status_code)
        if answer.status_code >= 400:
            raise Failed(f"{what} answered {answer.status_code} ({answer.text[:200]})",
                         answer.status_code,
                         "token" not in what and permanent(answer.status_code))
        return answer

    def _call(self, method, url, what, accept, **kwargs):
        headers = dict(kwargs.pop("headers", {}), Authorization=f"Bearer {self.token()}",
                       Accept=accept)
        try:
            return self._send(method, url, what, headers=headers, **kwargs)
        except Failed as exc:
            if exc.status == 401:  # expired or revoked: the next try asks for a new one
                with self._lock:
                    self._token = None
                exc.words = f"{what} refused the access token (401); a new one is asked next"
            raise

    # -- AGS ----------------------------------------------------------------------
    def line_item(self, lineitems_url, exercise, label, points) -> str:
        """The URL of the line item whose ``resourceId`` is ``exercise``, created
        (``label``, ``scoreMaximum`` = ``points``) when the course has none."""
        answer = self._call("GET", lineitems_url, "the LMS's line items", LINEITEMS,
                            params={"resource_id": exercise})
        found = [item for item in answer.json() if item.get("resourceId") == exercise]
        if found:
            return found[0]["id"]
        made = self._call("POST", lineitems_url, "the LMS's line items", LINEITEM,
                          json={"label": label, "scoreMaximum": points,
                                "resourceId": exercise},
                          headers={"Content-Type": LINEITEM})
        return made.json()["id"]

    def post_score(self, line_item_url, user_id, score, max_score, timestamp):
        """Post a learner's recorded grade: ``score`` of ``max_score`` points, as of epoch
        ``timestamp`` (when the recorded grade became this)."""
        base, _, query = line_item_url.partition("?")
        url = base.rstrip("/") + "/scores" + (f"?{query}" if query else "")
        self._call("POST", url, "the LMS's scores", "application/json",
                   json={"userId": user_id, "scoreGiven": score, "scoreMaximum": max_score,
                         "activityProgress": "Completed", "gradingProgress": "FullyGraded",
                         "timestamp": iso(timestamp)},
                   headers={"Content-Type": SCORE})

    # -- NRPS ---------------------------------------------------------------------
    def members(self, memberships_url) -> list[dict]:
        """Every member of the course (all pages): dicts with ``user_id``, ``roles``,
        maybe ``name``, ``status``."""
        out, url = [], memberships_url
        while url:
            answer = self._call("GET", url, "the LMS's memberships", MEMBERS)
            out += answer.json().get("members", [])
            url = answer.links.get("next", {}).get("url")
        return out

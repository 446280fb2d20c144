"""A real LTI 1.3 platform on loopback for the tests: PyPI's ``lti1p3platform`` (its
registration, keys, signed tokens and token checks) behind a small HTTP server with
in-memory stores, as an LMS would run it.

Routes (``Platform.url`` + ...): ``/jwks`` (the platform's keys), ``/token`` (the
client-credentials grant), ``/lineitems`` (AGS line items; ``?resource_id=``),
``/lineitems/<n>/scores`` and ``/results``, ``/memberships`` (NRPS).

lti1p3platform 0.1.8 skips checks a real LMS makes; this harness adds them: the token
request's assertion must have ``aud`` = the token URL, ``iss`` = ``sub`` = the client id,
an unexpired ``exp``, and a ``jti`` never seen before; a score needs a token with the
score scope, for a member of the course, with a timestamp not older than the result's.

Launches (sign-in at a tool, LTI 1.3 and the IMS Security Framework's OIDC flow):
:meth:`Platform.register_tool_login` names the tool's login initiation URL and registers
its redirect URI; :meth:`Platform.launch_page` prepares a launch and gives the page a
member opens in the LMS (``/launch/<n>``), which posts the login initiation form to the
tool as an LMS does. The tool answers with a redirect to ``/authorize``, where the
platform checks the authorization request (``client_id``, a registered ``redirect_uri``,
the ``login_hint`` and ``lti_message_hint`` it gave, the OIDC parameters) and posts the
``id_token`` (signed by lti1p3platform's launch message classes) and ``state`` to the
redirect URI. A launch may be made bad on purpose (``bad=``): ``"forged"`` (signed by
another key under the platform's key id), ``"expired"``, ``"audience"`` (for another
client id), ``"deployment"`` (for another deployment), ``"deep_linking"`` (an
``LtiDeepLinkingRequest``). :attr:`Platform.posted` keeps every id_token form posted.

Controls for the tests: :meth:`Platform.stop` / :meth:`Platform.start` (down and up again
on the same port), :attr:`Platform.fail_scores` (the next N score posts answer :attr:`Platform.fail_status`, 503),
:attr:`Platform.score_delay` (seconds each score post takes before it is taken),
:meth:`Platform.make_lineitem` and :meth:`Platform.delete_lineitem` (an instructor's
gradebook column made or deleted in the LMS; a score for a deleted one answers 404, for
someone not in the course 422). Launches may come from another LMS course or from none
(``context=``), carry any roles and the LMS's own line item of their link (``lineitem=``);
:attr:`Platform.interstitial_s` keeps the LMS's page up that long before it posts a launch.
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from datetime import datetime
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import MessageLaunchAbstract
from lti1p3platform.registration import Registration

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
BAD_LAUNCHES = ("forged", "expired", "audience", "deployment", "deep_linking")
COURSE = ("course-1", "JAX donation")  # the LMS course (context id, title) the tool is in
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"


def _pem():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class _Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs):
        return self._registration


class _Forger(Registration):
    """The platform's registration signing with another private key, under the platform's
    key id: a token only the signature check can tell from a real one."""

    def __init__(self, real, private_pem):
        super().__init__()
        self.__dict__.update(real.__dict__)
        self._real_kid = real.get_kid()
        self.set_platform_private_key(private_pem)

    def get_kid(self):
        return self._real_kid


class _Request:
    """What lti1p3platform's message classes read of a request: its query and form."""

    def __init__(self, get_data, form_data=None):
        self.get_data, self.form_data = get_data, form_data or {}


class _ResourceLinkLaunch(MessageLaunchAbstract):
    """lti1p3platform's resource link launch, its form rendered as an LMS's auto-posting page."""

    interstitial_s = 0.0

    def render_launch_form(self, launch_data, **kwargs):
        return _autopost(launch_data["launch_url"], {"id_token": launch_data["id_token"],
                                                     "state": launch_data["state"]},
                         self.interstitial_s)


def _autopost(action, fields, after_s=0.0):
    """An HTML page that posts ``fields`` to ``action`` on load (``after_s`` seconds later:
    an LMS's own page shown first), as LMSs send launches."""
    inputs = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
                     for k, v in fields.items())
    return (f'<!doctype html><html><body><form id="go" method="post" action="{escape(action)}">'
            f'{inputs}</form><script>setTimeout(() => document.getElementById("go").submit(), '
            f'{int(after_s * 1000)})</script></body></html>')


class Platform:
    """An LMS course with one tool registered (``client_id``; the tool's key set at
    ``tool_jwks_url``, fetched when first needed), its members and gradebook in memory."""

    def __init__(self, tool_jwks_url=None, tool_jwks=None, client_id="course-tool",
                 deployment_id="deploy-1"):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.private_pem, self.public_pem = _pem()
        self.kid = JWK.from_pem(self.private_pem.encode()).thumbprint()
        self.registration = Registration()
        self.registration.set_client_id(client_id).set_deployment_id(deployment_id)
        self.registration.set_platform_private_key(self.private_pem)
        self.registration.set_platform_public_key(self.public_pem)
        if tool_jwks is not None:
            self.registration.set_tool_key_set(tool_jwks)
        else:
            self.registration.set_tool_key_set_url(tool_jwks_url)
        self.lock = threading.Lock()
        self.members = {}  # user_id -> {"user_id", "name", "roles", "status"}
        self.lineitems = {}  # id (int) -> line item dict
        self.numbers = itertools.count(1)  # line items' ids, as an LMS never reuses one
        self.results = {}  # (line item id, user_id) -> the score dict it holds
        self.posts = []  # every score post taken: (line item id, score dict)
        self.taken_at = []  # the time.time() each of posts was taken (benchmarks/passback.py)
        self.refused = []  # (path, status, why) of every request refused
        self.jtis = set()
        self.fail_scores = 0
        self.fail_status = 503  # what those score posts answer
        self.interstitial_s = 0.0  # how long the LMS's page stays before it posts a launch
        self.scores_begun = 0  # score requests received (taken or not)
        self.score_delay = 0.0
        self.tool_login_url = None
        self.redirect_uris = set()
        self.launches = {}  # n -> the launch prepared (user, name, roles, target, bad)
        self.posted = []  # every id_token form posted to the tool: {"id_token", "state"}
        self.server = self.port = None
        self.start()
        self.registration.set_iss(self.url)
        self.config = _Config(registration=self.registration)

    # -- running ------------------------------------------------------------------
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_url(self):
        return self.url + "/token"

    def start(self):
        """Serve (again, on the same port after :meth:`stop`)."""
        handler = type("Handler", (_Handler,), {"platform": self})
        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port or 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        """Down: nothing answers on the port (connections are refused)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    # -- the course ---------------------------------------------------------------
    def enrol(self, user_id, name, role=LEARNER):
        self.members[user_id] = {"user_id": user_id, "name": name, "roles": [role],
                                 "status": "Active"}

    def gradebook(self):
        """``{(resourceId, user_id): scoreGiven}``: what the LMS's gradebook shows."""
        with self.lock:
            return {(self.lineitems[item].get("resourceId") or self.lineitems[item]["label"],
                     user): score["scoreGiven"]
                    for (item, user), score in self.results.items()}

    # -- launches ------------------------------------------------------------------
    def register_tool_login(self, login_url, redirect_uri):
        """The tool's OIDC login initiation URL and its one redirect (launch) URI."""
        self.tool_login_url = login_url
        self.redirect_uris.add(redirect_uri)

    def launch_page(self, user_id, name, role=LEARNER, target=None, bad=None, context=COURSE,
                    roles=None, lineitem=None):
        """Prepare a launch of ``user_id`` (display ``name``, ``role``, or every role of
        ``roles``) opening ``target`` (the target_link_uri), made bad as ``bad`` says
        (:data:`BAD_LAUNCHES`), from the LMS course ``context`` (``(id, title)``; None: a
        launch without a context claim), its resource link's own line item ``lineitem``
        (the AGS claim's ``lineitem``; None: none); the URL of the LMS's page that starts
        it. Every launch carries the AGS and NRPS claims of its course's endpoints
        (:meth:`endpoints`)."""
        assert bad in (None, *BAD_LAUNCHES), bad
        with self.lock:
            number = len(self.launches) + 1
            self.launches[number] = {"user": user_id, "name": name, "roles": roles or [role],
                                     "target": target, "bad": bad, "context": context,
                                     "lineitem": lineitem}
        return f"{self.url}/launch/{number}"

    def endpoints(self, context_id):
        """``(lineitems URL, memberships URL)`` of LMS course ``context_id``: this
        platform's served ones for :data:`COURSE`, another course's (not served) else."""
        if context_id == COURSE[0]:
            return self.url + "/lineitems", self.url + "/memberships"
        return (f"{self.url}/courses/{context_id}/lineitems",
                f"{self.url}/courses/{context_id}/memberships")

    def make_lineitem(self, label, points, resource_link_id=None):
        """An instructor makes a gradebook column (an assignment) in the LMS: its URL."""
        with self.lock:
            number = next(self.numbers)
            self.lineitems[number] = {"id": f"{self.url}/lineitems/{number}", "label": label,
                                      "scoreMaximum": points,
                                      "resourceLinkId": resource_link_id}
        return self.lineitems[number]["id"]

    def delete_lineitem(self, url):
        """An instructor deletes a column in the LMS (its scores go with it)."""
        number = int(url.rstrip("/").rsplit("/", 1)[1])
        with self.lock:
            del self.lineitems[number]
            self.results = {k: v for k, v in self.results.items() if k[0] != number}

    def _login_form(self, number):
        """The login initiation an LMS posts to the tool (Security Framework 5.1.1.1)."""
        launch = self.launches[number]
        fields = {"iss": self.url, "login_hint": launch["user"], "lti_message_hint": str(number),
                  "target_link_uri": launch["target"], "client_id": self.client_id,
                  "lti_deployment_id": self.deployment_id}
        return _autopost(self.tool_login_url, fields)

    def _authorize(self, query):
        """Check the tool's authorization request (Security Framework 5.1.1.2) and answer it
        with the launch (5.1.1.3): the page posting id_token and state. Raises ValueError
        saying why a request is refused."""
        wanted = {"response_type": "id_token", "scope": "openid", "response_mode": "form_post",
                  "prompt": "none", "client_id": self.client_id}
        wrong = [k for k, v in wanted.items() if query.get(k) != v]
        if wrong:
            raise ValueError(f"authorization request with wrong {', '.join(wrong)}")
        if query.get("redirect_uri") not in self.redirect_uris:
            raise ValueError(f"redirect_uri {query.get('redirect_uri')!r} is not registered")
        try:
            launch = self.launches[int(query.get("lti_message_hint", ""))]
        except (KeyError, ValueError):
            raise ValueError("no such launch (lti_message_hint)") from None
        if query.get("login_hint") != launch["user"]:
            raise ValueError("login_hint is not the launch's user")
        registration = self.registration
        if launch["bad"] == "forged":
            registration = _Forger(self.registration, _pem()[0])
        message = _ResourceLinkLaunch(_Request(query), _Config(registration=registration))
        message.interstitial_s = self.interstitial_s
        message.set_user_data(launch["user"], launch["roles"], full_name=launch["name"])
        message.set_resource_link_claim(f"link-{query['lti_message_hint']}", title="JAX donation")
        if launch["context"] is not None:
            message.set_launch_context_claim(launch["context"][0],
                                             context_title=launch["context"][1],
                                             context_label="JAX")
        lineitems, memberships = self.endpoints((launch["context"] or (None,))[0])
        ags = {"scope": [LINEITEM_SCOPE, SCORE_SCOPE], "lineitems": lineitems}
        if launch["lineitem"]:
            ags["lineitem"] = launch["lineitem"]
        message.set_extra_claims({AGS_CLAIM: ags, NRPS_CLAIM: {
            "context_memberships_url": memberships, "service_versions": ["2.0"]}})
        message.set_launch_url(launch["target"])
        if launch["bad"] == "expired":
            message.set_id_token_expiration(-120)  # issued now, expired two minutes ago
        if launch["bad"] == "audience":
            message.set_extra_claims({"aud": "another-tool", "azp": "another-tool"})
        if launch["bad"] == "deployment":
            message.set_extra_claims({LTI + "deployment_id": "another-deployment"})
        if launch["bad"] == "deep_linking":  # with the claims a deep-linking request has
            message.set_extra_claims({
                LTI + "message_type": "LtiDeepLinkingRequest",
                LTI + "tool_platform": {"guid": "loopback-lms", "name": "Loopback LMS"},
                LTI + "launch_presentation": {"document_target": "window"},
                "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
                    "deep_link_return_url": self.url + "/deep_link_return",
                    "accept_types": ["ltiResourceLink"],
                    "accept_presentation_document_targets": ["window"]}})
        page = message.lti_launch()
        with self.lock:
            self.posted.append(dict(re.findall(r'name="(id_token|state)" value="([^"]*)"', page)))
        return page

    # -- the checks lti1p3platform 0.1.8 does not make ------------------------------
    def check_assertion(self, assertion):
        """The tool's client assertion, decoded and checked (signature by the tool's key
        set, ``aud``, ``iss``, ``sub``, ``exp``, ``jti``); raises ValueError saying why."""
        try:
            claims = self.config.tool_validate_and_decode(assertion)
        except Exception as exc:  # a bad signature, an unknown kid, a malformed JWT
            raise ValueError(f"client assertion not accepted: {exc}") from exc
        audience = claims.get("aud")
        if self.token_url not in (audience if isinstance(audience, list) else [audience]):
            raise ValueError(f"aud {audience!r} is not the token URL")
        if claims.get("iss") != self.client_id or claims.get("sub") != self.client_id:
            raise ValueError("iss and sub must be the client id")
        if not isinstance(claims.get("exp"), (int, float)) or claims["exp"] < time.time():
            raise ValueError("the assertion has expired (or has no exp)")
        with self.lock:
            if not claims.get("jti") or claims["jti"] in self.jtis:
                raise ValueError("jti missing or replayed")
            self.jtis.add(claims["jti"])
        return claims

    def scopes_of(self, headers):
        """The scopes of the bearer token in ``headers`` (a platform-signed access token),
        or None when there is none or it is not valid."""
        auth = headers.get("Authorization", "").split()
        if len(auth) != 2 or auth[0].lower() != "bearer":
            return None
        try:
            claims = jwt.decode(auth[1], self.public_pem, algorithms=["RS256"])
        except jwt.PyJWTError:
            return None
        if claims.get("iss") != self.url or claims.get("sub") != self.client_id:
            return None
        return set(claims.get("scopes", "").split())


class _Handler(BaseHTTPRequestHandler):
    platform: Platform

    def log_message(self, *args):
        pass

    def _answer(self, status, data=None, content_type="application/json"):
        if content_type == "text/html":
            body = data.encode()
        else:
            body = b"" if data is None else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status, why):
        self.platform.refused.append((self.path, status, why))
        self._answer(status, {"error": why})

    def _body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _scoped(self, scope):
        scopes = self.platform.scopes_of(self.headers)
        if scopes is None:
            self._refuse(401, "missing or invalid access token")
            return False
        if scope not in scopes:
            self._refuse(403, f"the token lacks scope {scope}")
            return False
        return True

    def do_GET(self):
        p, path = self.platform, urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(path.query).items()}
        parts = path.path.strip("/").split("/")
        if parts[0] == "launch" and len(parts) == 2 and parts[1].isdigit() \
                and int(parts[1]) in p.launches:
            return self._answer(200, p._login_form(int(parts[1])), "text/html")
        if parts == ["authorize"]:
            try:
                return self._answer(200, p._authorize(query), "text/html")
            except ValueError as exc:
                return self._refuse(400, str(exc))
        if parts == ["jwks"]:
            jwk = Registration.get_jwk(p.public_pem)
            return self._answer(200, {"keys": [dict(jwk, kid=p.kid)]})
        if parts == ["lineitems"] and self._scoped(LINEITEM_SCOPE):
            with p.lock:
                items = [i for i in p.lineitems.values() if query.get("resource_id") in
                         (None, i.get("resourceId"))]
            return self._answer(200, items)
        if parts[0] == "lineitems" and len(parts) == 3 and parts[2] == "results" \
                and self._scoped(LINEITEM_SCOPE):
            item = int(parts[1])
            with p.lock:
                found = [{"userId": u, "resultScore": s["scoreGiven"],
                          "resultMaximum": s["scoreMaximum"]}
                         for (i, u), s in p.results.items() if i == item]
            return self._answer(200, found)
        if parts == ["memberships"] and self._scoped(NRPS_SCOPE):
            return self._answer(200, {"id": p.url + "/memberships",
                                      "context": {"id": "course-1", "title": "JAX donation"},
                                      "members": list(p.members.values())})
        if not self.wfile.closed and parts[0] not in ("lineitems", "memberships"):
            self._answer(404, {"error": "not found"})

    def do_POST(self):
        p, parts = self.platform, urlsplit(self.path).path.strip("/").split("/")
        body = self._body()
        if parts == ["token"]:
            return self._token(body)
        if parts == ["lineitems"] and self._scoped(LINEITEM_SCOPE):
            item = json.loads(body)
            with p.lock:  # as an LMS does, a second item with the same resourceId is kept
                number = next(p.numbers)  # never a deleted item's number again
                item = dict(item, id=f"{p.url}/lineitems/{number}")
                p.lineitems[number] = item
            return self._answer(201, item)
        if parts[0] == "lineitems" and len(parts) == 3 and parts[2] == "scores" \
                and self._scoped(SCORE_SCOPE):
            return self._score(int(parts[1]), json.loads(body))
        if parts[0] not in ("lineitems",):
            self._answer(404, {"error": "not found"})

    def _token(self, body):
        p = self.platform
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        try:
            p.check_assertion(form.get("client_assertion", ""))
            answer = p.config.get_access_token(form)
        except Exception as exc:  # the library's own refusals too (grant type, claims)
            return self._refuse(401, f"invalid_client: {exc}")
        self._answer(200, answer)

    def _score(self, item, score):
        p = self.platform
        with p.lock:
            p.scores_begun += 1
        if p.score_delay:
            time.sleep(p.score_delay)
        with p.lock:
            if p.fail_scores > 0:
                p.fail_scores -= 1
                return self._refuse(p.fail_status, "the gradebook is being maintained")
            if item not in p.lineitems:
                return self._refuse(404, "no such line item")
            if score.get("userId") not in p.members:
                return self._refuse(422, "not a member of the course")
            if score.get("activityProgress") is None or score.get("gradingProgress") is None:
                return self._refuse(400, "activityProgress and gradingProgress are required")
            when = datetime.fromisoformat(score["timestamp"])
            held = p.results.get((item, score["userId"]))
            if held is not None and when < datetime.fromisoformat(held["timestamp"]):
                return self._refuse(409, "a newer score is held")
            p.results[(item, score["userId"])] = score
            p.posts.append((item, score))
            p.taken_at.append(time.time())
        self._answer(200, {})

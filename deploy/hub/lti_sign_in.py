"""Sign-in to the hub by an LTI 1.3 launch from a learning-management system
(``make hub`` with ``HUB_AUTH=lti``; ``jupyterhub_config.py`` sets it up).

JupyterHub's own ``jupyterhub-ltiauthenticator`` (1.6.3, ``ltiauthenticator.lti13``)
runs the OIDC launch: the LMS posts a login initiation to ``/hub/lti13/oauth_login``,
the hub sends the browser to the LMS's authorization URL (``LTI_AUTHORIZE_URL``) with a
state and a nonce kept in encrypted cookies, and the LMS posts a signed ``id_token``
back to ``/hub/lti13/oauth_callback``. The library checks there the state, the
signature against the LMS's key set (``LTI_JWKS_URL``), ``iss`` (``LTI_ISSUER``),
``aud`` and ``azp`` (``LTI_CLIENT_ID``), ``exp``, ``iat`` no older than 10 minutes, the
nonce against the cookie, the LTI version and the claims the spec requires.

What 1.6.3 does not check at the login initiation, added here (:class:`LoginInitiation`):
that ``iss`` is ``LTI_ISSUER`` and ``client_id`` and ``lti_deployment_id``, when sent,
this tool's (1.6.3 redirected any issuer's, with ``client_id=None`` when none was sent).
Its state and nonce cookies had no ``SameSite`` (Chromium sends such a cookie on the
LMS's cross-site launch POST only within 2 minutes) and could be planted from a learner's
subdomain (login CSRF by cookie tossing): here they are ``__Host-`` cookies,
``SameSite=None; Secure``, for 10 minutes, and launches over plain HTTP at a host that
is not the loopback are refused (:class:`_LaunchCookies`).

What 1.6.3 does not check at the launch, added here (:meth:`LaunchCallback.decode_and_validate_launch_request`):

* the ``deployment_id`` claim against ``LTI_DEPLOYMENT_ID`` (the library reads none);
* the LMS course (the ``context`` claim): one LMS course per course, ``LTI_CONTEXT_ID`` or
  the first instructor launch's (:func:`autograder.service.lms.roster.admit_context`),
  since one registration and deployment can be added to any course of the LMS;
* the message type: only ``LtiResourceLinkRequest`` (the library also takes a deep-linking
  request, which asks the tool for a reply this course does not give);
* a replayed launch: the library's nonce is the hash of a cookie it clears after the
  callback, but nothing on the server remembers it, so the same ``id_token`` posted again
  with the same cookies (a captured request) signed in again. Each nonce is taken once
  and kept until its token expires, in a file of the hub's state folder
  (:class:`UsedNonces`), so a replay after a hub restart is refused too (the cookies'
  secret is kept there as well, so they would still be read).

What this module decides besides (:class:`LTISignIn`):

* the user name is :func:`autograder.service.lms.lti_tool.user_name` of the launch's ``iss``
  and ``sub`` (``lti-`` and 20 base32 characters): stable, a valid Unix name, the one the
  grading service's LMS roster uses, never the display name or e-mail (which a member
  can change, and which could name another account of the machine);
* the system user is made on the first launch (JupyterHub's
  ``LocalAuthenticator.create_system_users``, its ``adduser`` command), so each learner's
  server runs as their own system user, as under PAM;
* LTI roles to hub groups (:func:`hub_groups`), applied by the config's one post-auth hook;
* the page a launch opens: the launch's signed ``target_link_uri`` claim when it is a
  path of this hub (:func:`own_path`), so a resource link can open one exercise's page;
* the grading service learns the member (:meth:`LTISignIn.record_launch`, from the same
  post-auth hook): the launch's ``iss``, ``sub``, display name and roles go to its LMS
  roster (``lms_roster.launched`` in the course's database), so the class page shows the
  LMS's name and grades go back under their ``sub``. Only a launch that passed every
  check gets there; nothing a learner's later request says does.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from jupyterhub.auth import LocalAuthenticator
from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import IncorrectValueError, LoginError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from ltiauthenticator.utils import convert_request_to_dict
from tornado.web import HTTPError
from traitlets import Bool, Unicode, default

from autograder.service.lms import roster as lms_roster
from autograder.service.lms.lti_tool import user_name
from autograder.service.store import Store

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
ROLES = CLAIM + "roles"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
INSTITUTION = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
# LTI 1.3, appendix A.2: context (membership) roles; a sub-role is
# membership/<Role>#<SubRole>, e.g. membership/Instructor#TeachingAssistant (Canvas' TA).
INSTRUCTOR_ROLES = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}#TeachingAssistant",
                    f"{MEMBERSHIP}/Instructor#TeachingAssistant"}
LEARNER_ROLES = {f"{MEMBERSHIP}#Learner"}
# A.2.2: institution roles, used only when a launch carries no context role: Canvas
# sends a person's institution roles in every course, so a teacher elsewhere who is a
# learner here must not become an instructor here.
INSTITUTION_INSTRUCTOR = {INSTITUTION + "Instructor", INSTITUTION + "Faculty"}
INSTITUTION_LEARNER = {INSTITUTION + "Student", INSTITUTION + "Learner"}
OWN_PREFIXES = ("/hub/", "/services/", "/user/")
"""Paths a launch may open after sign-in: the hub's, the course's services', a user's server's."""
LAUNCH_COOKIE_S = 600
"""How long a launch's state and nonce cookies live (s): an LMS may show its own page
(a consent, a privacy notice) for minutes between the login initiation and the launch."""
LOOPBACK = re.compile(r"^(localhost|[^:]*\.localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$")


def secure_origin(scheme: str, host: str) -> bool:
    """Whether browsers treat the hub at ``scheme://host`` as a secure origin, where they
    keep ``Secure`` and ``__Host-`` cookies: HTTPS, or a loopback name over HTTP."""
    return scheme == "https" or bool(LOOPBACK.match(host.lower()))


def launch_cookie(name: str) -> str:
    """The name the launch's cookie ``name`` has here: ``__Host-`` + name, which browsers
    take only from the hub's own host, Secure, on ``/``, never with a Domain: a learner's
    server on ``<name>.HUB_DOMAIN`` cannot plant it (cookie tossing, a classmate signed
    in to her account)."""
    return f"__Host-{name}"


def hub_groups(roles) -> list[str]:
    """The hub groups of a launch's ``roles`` (its roles claim, a list of URIs): ``instructors``
    for Instructor or TeachingAssistant, ``learners`` for Learner (context roles; the
    institution's Instructor/Faculty or Student/Learner only when it has no context role)."""
    roles = set(roles or ())
    context = {r for r in roles if r.startswith(MEMBERSHIP)}
    if context:
        instructor = bool(context & INSTRUCTOR_ROLES) or any(
            r.startswith(f"{MEMBERSHIP}/Instructor#") for r in context)
        learner = bool(context & LEARNER_ROLES) or any(
            r.startswith(f"{MEMBERSHIP}/Learner#") for r in context)
    else:
        instructor, learner = bool(roles & INSTITUTION_INSTRUCTOR), bool(roles & INSTITUTION_LEARNER)
    return (["instructors"] if instructor else []) + (["learners"] if learner else [])


def own_path(url: str, host: str) -> str | None:
    """``url`` as a path of this hub (host ``host``), query kept, or None when it is another
    host's, not under :data:`OWN_PREFIXES` (so never ``//evil``, which browsers read as a
    host), or holds a backslash (which browsers read as a slash)."""
    if not url or "\\" in url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("", "http", "https") or (parts.netloc and parts.netloc != host):
        return None
    if not parts.path.startswith(OWN_PREFIXES):
        return None
    return urlunsplit(("", "", parts.path, parts.query, ""))


class UsedNonces:
    """The nonces of the launches taken, each until its token's ``exp`` (epoch s), in the
    JSON file ``path`` (mode 0600; None: in memory only). One hub process writes it."""

    def __init__(self, path=None):
        self.path = Path(path) if path else None
        self.seen = None  # nonce -> exp, read from the file at the first launch

    def _load(self):
        if self.seen is None:
            try:
                self.seen = {str(k): float(v) for k, v in
                             json.loads(self.path.read_text()).items()} if self.path else {}
            except FileNotFoundError:
                self.seen = {}
            except (ValueError, AttributeError):  # not a JSON object: start again (exp bounds it)
                self.seen = {}

    def take(self, nonce, exp, now=None):
        """Take ``nonce`` of a launch expiring at ``exp``; raises IncorrectValueError when
        a launch took it already. Expired nonces are forgotten (their tokens are refused
        by ``exp`` anyway)."""
        self._load()
        now = time.time() if now is None else now
        self.seen = {n: e for n, e in self.seen.items() if e >= now}
        if nonce in self.seen:
            raise IncorrectValueError("this launch was used already: launch again from the course")
        self.seen[nonce] = float(exp)
        if self.path:
            part = self.path.with_name(self.path.name + ".part")
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(self.seen, out)
            os.replace(part, self.path)  # a crash mid-write keeps the last whole file


class _LaunchCookies:
    """The launch's state and nonce cookies of both handlers: on a secure origin
    (:func:`secure_origin`) ``__Host-`` named, ``SameSite=None; Secure`` (the LMS posts the
    launch cross-site, which takes no Lax cookie after Chromium's first 2 minutes), for
    :data:`LAUNCH_COOKIE_S`; refused on plain HTTP elsewhere, where any learner's
    subdomain could plant them (:meth:`secure`)."""

    def secure(self) -> bool:
        """True on a secure origin; raises HTTPError 400 on plain HTTP to a host that is
        not the loopback (LTI 1.3 launches need TLS)."""
        scheme = self.authenticator.get_uri_scheme(self.request)
        if secure_origin(scheme, self.request.host):
            return True
        raise HTTPError(400, "LTI launches need the hub on HTTPS (LTI 1.3 requires TLS, and "
                        "over plain HTTP a learner's server could plant a classmate's launch "
                        "cookies): put HTTPS in front of the hub, as docs/lti.md says")

    def _attributes(self):
        return {"httponly": True, "secure": True, "samesite": "None", "path": "/"}


class LoginInitiation(_LaunchCookies, LTI13LoginInitHandler):
    """The library's OIDC login initiation (``/hub/lti13/oauth_login``), which first checks
    that it comes from this course's LMS: its ``iss`` is ``LTI_ISSUER``, its ``client_id``
    (when sent) and ``lti_deployment_id`` (when sent) this tool's; the authorization request
    always carries the client id (the library sent ``client_id=None`` when the LMS sent
    none). Every refusal is HTTP 400 with the hub's error page."""

    def post(self):
        args = convert_request_to_dict(self.request.arguments)
        auth = self.authenticator
        if args.get("iss") != auth.issuer:
            raise HTTPError(400, f"this login initiation is from {args.get('iss')!r}, not from "
                            "this course's LMS")
        if args.get("client_id") and args["client_id"] not in auth.client_id:
            raise HTTPError(400, f"this login initiation is for client {args['client_id']!r}, "
                            "not this tool")
        deployment = args.get("lti_deployment_id")
        if deployment and deployment != auth.deployment_id:
            raise HTTPError(400, f"this login initiation is for deployment {deployment!r}, "
                            "not this course's")
        self.secure()
        return super().post()

    get = post

    def authorize_redirect(self, *args, client_id=None, **kwargs):
        ours = sorted(self.authenticator.client_id)
        if not client_id and len(ours) != 1:
            raise HTTPError(400, "the LMS sent no client_id and this hub knows several")
        return super().authorize_redirect(*args, client_id=client_id or ours[0], **kwargs)

    def _set_oauth_cookie(self, key, value):
        self.secure()
        self._set_cookie(launch_cookie(key), value, encrypted=True,
                         expires_days=LAUNCH_COOKIE_S / 86400, **self._attributes())


class LaunchCallback(_LaunchCookies, LTI13CallbackHandler):
    """The library's callback (``/hub/lti13/oauth_callback``) with the checks it lacks
    (see the module) and the page a launch opens. Every refusal is an HTTPError JupyterHub
    shows as its error page (400; 401 for a wrong audience), never a traceback."""

    _launch = None

    def decode_and_validate_launch_request(self):
        """The library's checks, then the deployment, the message type and the nonce
        taken once. Raises IncorrectValueError (a ValidationError, which the library's
        ``post`` turns into HTTP 400) for a launch refused here."""
        id_token = super().decode_and_validate_launch_request()
        deployment = id_token.get(CLAIM + "deployment_id")
        if deployment != self.authenticator.deployment_id:
            raise IncorrectValueError(f"this launch is for deployment {deployment!r}, "
                                      "not this course's")
        kind = id_token.get(CLAIM + "message_type")
        if kind != "LtiResourceLinkRequest":
            raise IncorrectValueError(f"a {kind} launch is not taken here (only "
                                      "LtiResourceLinkRequest)")
        self.authenticator.used_nonces.take(id_token["nonce"], id_token["exp"])
        self.authenticator.admit_context(id_token)
        self._launch = id_token
        return id_token

    def _get_oauth_cookie(self, name):
        """The launch cookie ``name`` (:func:`launch_cookie`) if it is younger than
        :data:`LAUNCH_COOKIE_S`, else ""; cleared."""
        self.secure()
        real = launch_cookie(name)
        cookie = self.get_secure_cookie(real, max_age_days=LAUNCH_COOKIE_S / 86400) or b""
        self.clear_cookie(real, **self._attributes())
        return cookie.decode("utf8", "replace")

    def get_next_url(self, user=None):
        """The launch's signed ``target_link_uri`` when it is a path of this hub, else
        JupyterHub's default (the course site); the unsigned ``next`` the library kept from
        the login initiation is not used."""
        target = (self._launch or {}).get(CLAIM + "target_link_uri", "")
        return own_path(target, self.request.host) or BaseHandler.get_next_url(self, user)


class LTISignIn(LTI13Authenticator, LocalAuthenticator):
    """LTI13Authenticator with system users (LocalAuthenticator), the user name of
    :func:`autograder.service.lms.lti_tool.user_name`, the deployment id it checks, and who may
    enter: a launch with a Learner or Instructor role (:func:`hub_groups`)."""

    login_handler = LoginInitiation
    callback_handler = LaunchCallback

    deployment_id = Unicode(
        "", config=True, help="The deployment id the LMS gave this tool; launches of any "
        "other deployment are refused.")

    nonce_file = Unicode(
        "", config=True, help="JSON file keeping the nonces of launches taken until they "
        "expire (in the hub's state folder), so a replay after a restart is refused; "
        "empty: kept in memory.")

    grading_db = Unicode(
        "", config=True, help="The grading service's database (GRADER_DB: a SQLite path or "
        "a URL), where each launch records its member; empty: not recorded.")

    context_id = Unicode(
        "", config=True, help="The LMS course (context id) this course serves "
        "(LTI_CONTEXT_ID); empty: the first instructor launch pins it in the grading "
        "database. Launches of any other context are refused.")

    _used_nonces = _store = None

    @default("custom_html")
    def _launch_from_the_lms(self):
        # /hub/login: there is nothing to type here; the library's default, a "Sign in with
        # LTI 1.3" button, opens its login initiation without the LMS's parameters (a 400)
        return ('<div class="container" id="launch-from-the-lms"><h1>Open the course from your '
                "learning-management system</h1><p>This course is signed in to by a launch from "
                "the LMS (Canvas, Moodle, ...): go to your course there and open the link to "
                "this course or one of its exercises. It opens here, signed in.</p><p>Launched "
                "already? Your session may have ended: launch again from the LMS.</p></div>")

    @property
    def used_nonces(self) -> UsedNonces:
        if self._used_nonces is None:
            self._used_nonces = UsedNonces(self.nonce_file or None)
        return self._used_nonces

    @default("create_system_users")
    def _create_system_users(self):
        return True  # each learner's server runs as their own system user

    allow_all = Bool(True, config=True, help="Anyone the LMS launches with a course role "
                     "enters (the launch's signature is the check; roles: authenticate).")

    def get_username(self, token):
        """``lti-...`` of the launch's ``iss`` and ``sub``; raises LoginError (HTTP 400) for
        a launch without ``sub`` (an anonymous launch names nobody)."""
        if not token.get("sub"):
            raise LoginError("the launch names no user (no sub claim)")
        return user_name(token["iss"], token["sub"])

    async def record_launch(self, claims):
        """Give the grading service the member of a launch that passed every check
        (``claims``: its id_token, the ``auth_state`` :meth:`authenticate` returns):
        :func:`autograder.service.lms.roster.launched`. A database that cannot be written
        is logged, and the member signed in all the same (the next launch records them)."""
        if not self.grading_db:
            return
        try:
            await asyncio.to_thread(self._record, claims)
        except Exception as exc:  # noqa: BLE001 (sign-in does not depend on the roster)
            self.log.warning("the launch of %s was not recorded in the course's LMS roster: %s",
                             user_name(claims.get("iss", ""), claims.get("sub", "")), exc)

    _opening = threading.Lock()

    @property
    def store(self):
        with self._opening:  # launches at once (each in a thread): one engine, made once
            if self._store is None:
                self._store = Store(self.grading_db)
        return self._store

    def _record(self, claims):
        lms_roster.launched(self.store, claims)

    def admit_context(self, claims):
        """Refuse a launch of another LMS course than this one's (or of none): the pinned
        context (:func:`autograder.service.lms.roster.admit_context`; the first instructor
        launch pins it when ``context_id`` is empty). Raises IncorrectValueError (HTTP 400)
        saying why, or HTTPError 503 when the pin cannot be read (no launch is let in
        unchecked)."""
        instructor = "instructors" in hub_groups(claims.get(ROLES))
        try:
            if not self.grading_db:
                if not self.context_id:
                    raise lms_roster.OtherCourse("no LMS course is set for this course "
                                                 "(LTI_CONTEXT_ID) and no database to pin one")
                if lms_roster.context_of(claims) != self.context_id:
                    raise lms_roster.OtherCourse("this launch is from another LMS course")
                return
            lms_roster.admit_context(self.store, claims, instructor, self.context_id)
        except lms_roster.OtherCourse as exc:
            raise IncorrectValueError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 (a database away: refused, said so)
            self.log.warning("a launch's LMS course could not be checked: %s", exc)
            raise HTTPError(503, "the course's database cannot be reached to check the launch's "
                            "LMS course: launch again in a minute") from None

    async def authenticate(self, handler, data=None):
        """The library's authentication model (``auth_state``: the launch's claims, among
        them the LMS's display name ``name``); raises HTTPError 403 for a launch with
        neither a Learner nor an Instructor role."""
        model = await super().authenticate(handler, data)
        if not hub_groups((data or {}).get(ROLES)):
            raise HTTPError(403, "this course takes launches of its learners and instructors "
                            "only (the launch has neither role)")
        return model

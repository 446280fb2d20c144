"""Who is asking: the learner JupyterHub signed in (``make hub``).

Under ``make hub`` the grading service is a hub-managed service
(``deploy/hub/jupyterhub_config.py``) started with ``--auth hub``. Every
request is then authenticated by JupyterHub's own service auth,
:class:`jupyterhub.services.auth.HubOAuth` (no home-made sign-in):

* a browser is identified by the service's OAuth cookie (set after the hub's
  OAuth flow, ``<prefix>login``); a cookie-authenticated request that is not
  a plain page view (a ``fetch``, any POST) must carry the ``_xsrf`` cookie's
  value in ``X-XSRFToken``, or HubOAuth ignores the cookie (JupyterHub >= 4.1);
* a program sends a hub token in ``Authorization: token <token>``: the
  notebook's submit cell sends its server's ``$JUPYTERHUB_API_TOKEN``, the
  course site's pages the token the site service holds for the signed-in
  user. A browser never attaches such a header to a cross-site request, so
  token-authenticated POSTs need no XSRF token.

The learner is the hub user's ``name``; whatever a request says about itself
is not read. Instructors are the members of the hub group ``instructors``
(``--instructors`` to rename it) and the hub's admins.
"""
import re
import time
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import tornado.web
from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado.httpclient import AsyncHTTPClient

from autograder.hub_session import SessionHubOAuth
from autograder.service.store import withdrawn

INSTRUCTORS = "instructors"
ADMIN_CACHE_SECONDS = 60
PAGINATION = "application/jupyterhub-pagination+json"  # the hub's paged listings
USERS_PAGE = 200  # the hub's largest page (JupyterHub.api_page_max_limit)


@dataclass(frozen=True)
class Person:
    """A signed-in hub user: ``name`` (the learner id) and whether they see the class."""

    name: str
    instructor: bool


class HubIdentity:
    """Identify requests with JupyterHub; configured by the ``JUPYTERHUB_*``
    variables the hub gives the services it starts (API URL and token,
    ``JUPYTERHUB_SERVICE_PREFIX``, OAuth client id and access scopes)."""

    kind = "hub"
    refusal = "sign in to the course hub first (or send the hub token in an Authorization header)"

    def __init__(self, instructors_group=INSTRUCTORS):
        self.hub_auth = SessionHubOAuth(cache_max_age=60)  # its cookie holds no token
        self.instructors_group = instructors_group
        self._admins = {}  # name -> (is admin, when asked)

    @property
    def prefix(self):
        """Where the proxy sends this service's requests, e.g. ``/services/grader/``."""
        return self.hub_auth.base_url

    async def person(self, handler):
        """The :class:`Person` ``handler``'s request comes from, or None.

        None when there is no valid hub token or cookie, when a cookie comes
        without the matching XSRF token on a request that needs it, when the
        token lacks this service's ``access:services`` scope, or when it is
        a service's token rather than a user's.
        """
        model = await self.hub_auth.get_user(handler, sync=False)
        if not model or model.get("kind", "user") != "user":
            return None
        if not self.hub_auth.check_scopes(self.hub_auth.access_scopes, model):
            return None
        name = model["name"]
        instructor = self.instructors_group in model.get("groups", ()) or await self._admin(name)
        # the model is cached for a minute: an instructor demoted meanwhile (``members
        # demote`` deletes her hub user) is asked about anew, so no route reads the class,
        # another learner's submissions or notebooks as hers
        return Person(name, instructor and await self.instructor_now(name))

    async def _admin(self, name):
        # A user's token identifies only name and groups; whether the user is a
        # hub admin is asked with the service's own token (role: read:users).
        known = self._admins.get(name)
        if known and time.monotonic() - known[1] < ADMIN_CACHE_SECONDS:
            return known[0]
        model = await self._user(name)
        admin = bool(model and model.get("admin"))
        self._admins[name] = (admin, time.monotonic())
        return admin

    async def instructor_now(self, name):
        """Whether hub user ``name`` is an instructor by the hub's word now, asked on each
        instructors' request: the model of a token or cookie is cached for a minute, and
        an instructor demoted (their hub user deleted: ``members demote``) is one no longer
        at once."""
        model = await self._user(name)
        return bool(model) and (self.instructors_group in model.get("groups", ())
                                or bool(model.get("admin")))

    async def _user(self, name):
        """The hub's model of user ``name`` (dict), or None when there is none."""
        url = url_path_join(self.hub_auth.api_url, "users", quote(name, safe=""))
        reply = await AsyncHTTPClient().fetch(
            url, headers={"Authorization": f"token {self.hub_auth.api_token}"},
            raise_error=False)
        return tornado.escape.json_decode(reply.body) if reply.code == 200 else None

    async def users(self):
        """Every hub user: ``{name: {"instructor": bool, "signed_in": bool}}``, asked
        with the service's own token (role: ``list:users``, ``read:users``), page by
        page; ``signed_in``: the hub has seen them active (a configured admin who
        never came has not)."""
        users, offset = {}, 0
        while offset is not None:
            url = url_path_join(self.hub_auth.api_url, f"users?offset={offset}&limit={USERS_PAGE}")
            reply = await AsyncHTTPClient().fetch(url, headers={
                "Authorization": f"token {self.hub_auth.api_token}", "Accept": PAGINATION})
            page = tornado.escape.json_decode(reply.body)
            for model in page["items"]:
                users[model["name"]] = {
                    "instructor": self.instructors_group in model.get("groups", ()) or bool(model.get("admin")),
                    "signed_in": model.get("last_activity") is not None}
            offset = (page["_pagination"].get("next") or {}).get("offset")
        return users

    def sign_in_url(self, next_path):
        """Where a browser signs in to this service, then comes back to ``next_path``."""
        return f"{self.prefix}login?next={quote(next_path, safe='')}"

    def handlers(self):
        """The OAuth routes: the hub's redirect back, and a sign-in entry point."""
        args = {"hub_auth": self.hub_auth}
        return [(self.prefix + "oauth_callback", _Callback, args),
                (self.prefix + "login", SignIn, args)]

    def app_settings(self):
        """Tornado settings HubOAuth needs (its cookies are signed).

        A new secret each start only means a browser goes through the hub's
        OAuth flow again (no password asked while signed in to the hub)."""
        import secrets

        return {"cookie_secret": secrets.token_bytes(32)}


class _Callback(HubOAuthCallbackHandler):
    def initialize(self, hub_auth):
        self.hub_auth = hub_auth


class SignIn(HubOAuthenticated, tornado.web.RequestHandler):
    """``GET <prefix>login?next=<path>``: sign in through the hub, then go to ``next``
    (a path on this site; anything else goes to the service's own page)."""

    def initialize(self, hub_auth):
        self.hub_auth = hub_auth

    @tornado.web.authenticated
    def get(self):
        target = self.get_argument("next", "", strip=False)
        self.redirect(local_path(target, self.hub_auth.base_url) or self.hub_auth.base_url)


# What RFC 3986 allows in a URL, unencoded: no space, control character, backslash
# or non-ASCII letter, which browsers drop, turn into "/" or rewrite before they
# read where a URL points (https://url.spec.whatwg.org/#concept-basic-url-parser).
_URL_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/?#\[\]]*\Z")


def local_path(target, prefix):
    """``target`` when a browser reads it as a path under ``prefix`` on this origin, else None.

    ``target`` is a ``next=`` value as received (str); ``prefix`` a path such as
    ``/services/grader/`` (leading and trailing slash). Refused: anything a browser
    would read as another host or scheme (``//host``, ``/\\host``, ``/<TAB>/host``,
    ``https:host``), and dot segments, plain or encoded (``/services/grader/%2e%2e/``),
    which a browser resolves to a path outside ``prefix``: under the hub's origin
    that could be ``/user/<name>/``, which the hub sends on to that learner's origin.
    """
    if not _URL_CHARACTERS.match(target):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith(prefix):
        return None
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        return None
    return target


def refuse_sign_in(store, name):
    """Raise tornado's HTTPError 403 (the hub's error page says
    :data:`~autograder.service.store.withdrawn.REFUSAL`) when ``name`` was dropped from
    the course; the hub calls it on every sign-in and launch."""
    if withdrawn.kind_of(store, name):
        raise tornado.web.HTTPError(403, withdrawn.REFUSAL)

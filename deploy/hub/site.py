"""The course site as a JupyterHub service: ``_build/html`` for signed-in users.

Started by the hub (``deploy/hub/jupyterhub_config.py``, service ``course``) on
``$JUPYTERHUB_SERVICE_URL``; the proxy sends it ``/services/course/``. Every page
needs a hub sign-in (JupyterHub's :class:`~jupyterhub.services.auth.HubOAuth`:
an unknown browser is sent through the hub's login and OAuth, then back).

``GET /services/course/api/session`` answers the signed-in user's name and the
hub token this service holds for them. Its cookie holds no token: a random session id
this service maps to the token for 30 minutes
(:class:`autograder.hub_session.SessionHubOAuth`), then a page view goes through the
hub's OAuth again (no password while signed in to the hub). The pages'
scripts (``course-run.js``, ``grader.js``) use that token, in an
``Authorization`` header and never in a page URL, to start the learner's
server through the hub's API, run the lesson's code on it, and send
submissions to the grading service. The token's scopes are what this
service's OAuth client may have (``oauth_client_allowed_scopes`` in the hub
config): the user's own server and the grading service, nothing else.
The request must be a same-origin ``fetch`` carrying the ``_xsrf`` cookie's
value (HubOAuth's XSRF check), so another site cannot make a signed-in
browser fetch it.

Every file of the site (pages, scripts, styles, the theme's icon webfonts) is a
read, served with the session's cookie alone when the browser says the request
comes from a page of this origin (``Sec-Fetch-Site: same-origin``): JupyterHub
asks cookie-authenticated requests in any mode but ``navigate`` and ``no-cors``
for an XSRF token, which a stylesheet's ``@font-face`` fetch (always CORS mode)
cannot send, and each such font was sent through the hub's sign-in, a new hub
API token each time, in a loop. A request that still lacks a sign-in and is no
page view gets 403, never the sign-in (which mints a token).
"""
import asyncio
import os
import secrets
import signal
import sys

import tornado.httputil
import tornado.web
from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated

from autograder import defaults
from autograder.defaults import CHECKOUT as REPO
from autograder.hub_session import SessionHubOAuth

HTML = REPO / "_build" / "html"
LANDING = "book/intro.html"


class Session(HubOAuthenticated, tornado.web.RequestHandler):
    def initialize(self, hub_auth):
        self.hub_auth = hub_auth

    def get(self):
        user = self.current_user
        if user is None:
            self.set_status(403)
            self.finish({"error": "not signed in (reload the page)"})
            return
        self.set_header("Cache-Control", "no-store")
        self.finish({"user": user["name"], "token": self.hub_auth.get_token(self)})


READS = ("GET", "HEAD")
PAGE_VIEWS = ("navigate", None)  # Sec-Fetch-Mode; None: a client that sends none


class Pages(HubOAuthenticated, tornado.web.StaticFileHandler):
    def initialize(self, hub_auth, **kwargs):
        self.hub_auth = hub_auth
        super().initialize(**kwargs)

    def check_xsrf_cookie(self):
        """A read of a file by a page of this origin needs no XSRF token (it changes
        nothing, and another origin's request is not ``same-origin``); anything else,
        JupyterHub's check."""
        request = self.request
        if request.method in READS and request.headers.get("Sec-Fetch-Site") == "same-origin":
            return
        super().check_xsrf_cookie()

    async def get(self, path, include_body=True):
        if self.current_user is None:
            if self.request.headers.get("Sec-Fetch-Mode") not in PAGE_VIEWS:
                raise tornado.web.HTTPError(403, "not signed in: open a page of the course first")
            self.redirect(self.get_login_url())  # the hub's sign-in, then back here
            return
        if not path:
            self.redirect(self.hub_auth.base_url + LANDING)
            return
        self.xsrf_token  # noqa: B018 (a property read for its effect): on page views HubOAuth sets the _xsrf cookie the scripts send back
        await super().get(path, include_body)


class Callback(HubOAuthCallbackHandler):
    def initialize(self, hub_auth):
        self.hub_auth = hub_auth


def make_app(hub_auth):
    prefix = hub_auth.base_url
    args = {"hub_auth": hub_auth}
    return tornado.web.Application([
        (prefix + "oauth_callback", Callback, args),
        (prefix + "api/session", Session, args),
        (prefix + "(.*)", Pages, dict(args, path=str(HTML), default_filename="index.html")),
    ], cookie_secret=secrets.token_bytes(32))


async def main():
    if not (HTML / LANDING).is_file():
        sys.exit(f"no site at {HTML}: run `make book` first")
    hub_auth = SessionHubOAuth(cache_max_age=60)
    url = tornado.httputil.urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    # every route is a read: a body is refused at once (tornado reads one whole before
    # the route runs, signed in or not; 100 MiB by default)
    server = make_app(hub_auth).listen(url.port, url.hostname,
                                       max_body_size=defaults.OTHER_BODY_BYTES)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # the hub stops its services with these
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    server.stop()


if __name__ == "__main__":
    asyncio.run(main())

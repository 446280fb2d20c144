"""The course site as a JupyterHub service: ``_build/html`` for signed-in users.

Started by the hub (``deploy/hub/jupyterhub_config.py``, service ``course``) on
``$JUPYTERHUB_SERVICE_URL``; the proxy sends it ``/services/course/``. Every page
needs a hub sign-in (JupyterHub's :class:`~jupyterhub.services.auth.HubOAuth`:
an unknown browser is sent through the hub's login and OAuth, then back).

``GET /services/course/api/session`` answers the signed-in user's name and the
hub token this service holds for them (from its OAuth cookie). The pages'
scripts (``course-run.js``, ``grader.js``) use that token, in an
``Authorization`` header and never in a page URL, to start the learner's
server through the hub's API, run the lesson's code on it, and send
submissions to the grading service. The token's scopes are what this
service's OAuth client may have (``oauth_client_allowed_scopes`` in the hub
config): the user's own server and the grading service, nothing else.
The request must be a same-origin ``fetch`` carrying the ``_xsrf`` cookie's
value (HubOAuth's XSRF check), so another site cannot make a signed-in
browser fetch it.
"""
import asyncio
import os
import secrets
import signal
import sys
from pathlib import Path

import tornado.httputil
import tornado.web
from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated

HTML = Path(__file__).resolve().parents[2] / "_build" / "html"
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


class Pages(HubOAuthenticated, tornado.web.StaticFileHandler):
    def initialize(self, hub_auth, **kwargs):
        self.hub_auth = hub_auth
        super().initialize(**kwargs)

    @tornado.web.authenticated
    async def get(self, path, include_body=True):
        if not path:
            self.redirect(self.hub_auth.base_url + LANDING)
            return
        self.xsrf_token  # on page views HubOAuth sets the _xsrf cookie the scripts send back
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
    hub_auth = HubOAuth(cache_max_age=60)
    url = tornado.httputil.urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    server = make_app(hub_auth).listen(url.port, url.hostname)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # the hub stops its services with these
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    server.stop()


if __name__ == "__main__":
    asyncio.run(main())

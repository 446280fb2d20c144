"""Sign-in cookies that hold no hub token, for the course's JupyterHub services.

JupyterHub's :class:`~jupyterhub.services.auth.HubOAuth` keeps the OAuth access token
(a hub API token) in its cookie, signed but not encrypted: whoever receives the cookie
reads the token, and it works until it expires (also after its owner signs out of
the service's pages). :class:`SessionHubOAuth` is HubOAuth with a random session id in
the cookie instead; the token stays in the service's memory, mapped from that id, for
``session_seconds`` (the cookie's own lifetime too). An expired or unknown id is no
sign-in: a page view goes through the hub's OAuth again, which asks no password while
the browser is signed in to the hub, and gets a new id. A restart of the service
forgets every id the same way.

On a real ``HUB_DOMAIN`` the hub starts the services with
``JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED=1`` (deploy/hub/jupyterhub_config.py): HubOAuth
then names the cookie ``__Host-<client id>`` (``Secure``, path ``/``) and reads only that
name, which no page on a learner's subdomain can set (cookie tossing).
"""
from __future__ import annotations

import secrets
import time

from jupyterhub.services.auth import HubOAuth
from traitlets import Integer

SESSION_S = 1800  # a session id's lifetime, seconds


class SessionHubOAuth(HubOAuth):
    """HubOAuth whose cookie holds a session id, never the token (see the module)."""

    session_seconds = Integer(SESSION_S, config=True,
                              help="Lifetime of a session id (and its cookie), seconds.")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._sessions = {}  # session id -> (hub token, time.monotonic() it expires)
        self.cookie_options = {**self.cookie_options,
                               "expires_days": self.session_seconds / 86400}
        if self.cookie_host_prefix_enabled:
            # a __Host- cookie not Secure is dropped by the browser; HubOAuth makes its OAuth
            # state cookie Secure only when the service's public URL (the hub's, which
            # make hub gives as http://, HTTPS being in front) says https
            self.cookie_options["secure"] = True

    def set_cookie(self, handler, access_token):
        """After OAuth: a new session id for ``access_token``, in the cookie."""
        now = time.monotonic()
        self._sessions = {k: v for k, v in self._sessions.items() if v[1] > now}
        session = secrets.token_urlsafe(32)
        self._sessions[session] = (access_token, now + self.session_seconds)
        super().set_cookie(handler, session)

    def _get_token_cookie(self, handler):
        """The token of the cookie's session id; None when there is none, or it expired."""
        session = super()._get_token_cookie(handler)
        token, expires = self._sessions.get(session, (None, 0)) if session else (None, 0)
        return token if expires > time.monotonic() else None

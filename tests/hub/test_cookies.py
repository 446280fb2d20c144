"""What a signed-in learner's course-site cookie gives whoever receives it (a listener the
browser sent it to, a copy in a log): no hub token, and nothing for long."""
from __future__ import annotations

import base64
import time

import requests

# HubOAuth's cookies: each service's OAuth client id
COOKIES = ("service-course", "service-grader")


def signed_value(cookie):
    """The value inside a Tornado signed cookie (format 2: ``2|1:0|<len>:<time>|<len>:<name>|
    <len>:<base64 value>|<signature>``), as the bytes anyone reading the cookie reads."""
    fields = cookie.strip('"').split("|")  # a cookie jar may keep the quotes
    assert fields[0] == "2", cookie
    return base64.b64decode(fields[4].split(":", 1)[1])


def test_the_services_cookies_hold_no_hub_token_and_expire_soon(hub, sign_in):
    ada = sign_in("ada")  # signed in to the hub and the course site
    signed = ada.session.get(hub.url("/services/grader/login?next=/services/grader/"), timeout=60)
    assert signed.ok, signed.status_code  # and to the grading service, through its sign-in
    cookies = [c for c in ada.session.cookies if c.name in COOKIES]
    assert {c.name for c in cookies} == set(COOKIES), [c.name for c in ada.session.cookies]
    for cookie in cookies:
        inside = signed_value(cookie.value).decode("ascii", "replace")
        assert inside != ada.token
        # the hub takes nothing in it as a token
        reply = requests.get(hub.url("/hub/api/user"), timeout=60,
                             headers={"Authorization": f"token {inside}"})
        assert reply.status_code in (401, 403), (reply.status_code, reply.text)
        assert cookie.expires and cookie.expires - time.time() <= 3600, cookie.expires
    # while the session lives, the cookie still signs the page in (the scripts' token)
    assert ada.token and requests.get(hub.url("/hub/api/user"), timeout=60,
                                      headers=ada.headers).json()["name"] == ada.name

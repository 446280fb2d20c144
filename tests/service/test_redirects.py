"""The grading service's sign-in sends a browser back only to a path of its own.

``<prefix>login?next=...`` is reached from any link, so its ``next`` is the
attacker's: each value below is one a browser reads as another host, scheme or
path than it looks (the WHATWG URL parser drops tabs and newlines, reads ``\\``
as ``/``, resolves ``%2e%2e``). The sign-in handler runs in-process on a real
tornado server; the signed-in user is given (HubOAuth's hub round trip is what
``tests/hub/`` runs), the redirect is the handler's own.
"""
import asyncio
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlsplit

import pytest
import tornado.httpclient
import tornado.web
from jupyterhub.services.auth import HubOAuth

from autograder.service.api.auth import SignIn

PREFIX = "/services/grader/"
ORIGIN = "http://localhost"

# Each one, followed by a browser, would leave PREFIX on ORIGIN (the browser test checks it).
TRICKS = [
    "//evil.example/", "///evil.example/", "/\\evil.example/", "\\\\evil.example/",
    "/\t/evil.example/", "/\n/evil.example/", "/\r\n/evil.example/", "\t//evil.example/",
    " //evil.example/", "/\t\\evil.example/", "\x00//evil.example/", "\x1f//evil.example/",
    "https://evil.example/", "https:evil.example/", "HTTPS:/\\evil.example/",
    "javascript:alert(document.cookie)", "jav\tascript:alert(1)", "data:text/html,<script>1</script>",
    "/\u3000/evil.example/",
    PREFIX + "../../user/eve/", PREFIX + "%2e%2e/%2E%2E/user/eve/", PREFIX + ".%2e/.%2E/user/eve/",
    PREFIX + "..\\..\\user/eve/", PREFIX + "\t../../user/eve/", PREFIX[:-1] + "\\..\\user/eve/",
    "/user/eve/", "/hub/user-redirect/lab", "/services/course/",
]
# Paths of the service itself: kept as they are.
KEPT = [PREFIX, PREFIX + "class?learner=ann", PREFIX + "api/standing?exercise=x#top",
        PREFIX + "learner/%2F%2Fevil.example", PREFIX + "?next=//evil.example/"]


class _SignedIn(SignIn):
    def get_current_user(self):
        return {"name": "ann", "kind": "user"}


async def _locations(nexts):
    hub_auth = HubOAuth(base_url=PREFIX, api_token="unused", api_url="http://127.0.0.1:9/hub/api",
                        oauth_client_id="service-grader")
    app = tornado.web.Application([(PREFIX + "login", _SignedIn, {"hub_auth": hub_auth})])
    server = app.listen(0, "127.0.0.1")
    port = next(iter(server._sockets.values())).getsockname()[1]
    client = tornado.httpclient.AsyncHTTPClient()
    try:
        found = {}
        for target in nexts:
            reply = await client.fetch(
                f"http://127.0.0.1:{port}{PREFIX}login?next={quote(target, safe='')}",
                follow_redirects=False, raise_error=False)
            found[target] = (reply.code, reply.headers.get("Location"))
        return found
    finally:
        server.stop()


@pytest.fixture(scope="module")
def locations():
    """next value -> (status, Location) the sign-in answers, for every TRICKS and KEPT.

    Run on a thread of its own: when the session's shared Chromium is open (a browser
    test ran just before on this worker), Playwright's loop counts as running on the
    main thread and ``asyncio.run`` there refuses to start."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, _locations(TRICKS + KEPT)).result()


@pytest.mark.parametrize("target", TRICKS)
def test_a_trick_goes_to_the_service_page(locations, target):
    assert locations[target] == (302, PREFIX), repr(target)


@pytest.mark.parametrize("target", KEPT)
def test_a_path_of_the_service_is_kept(locations, target):
    assert locations[target] == (302, target)


def test_the_browser_agrees(locations, browser):
    """Chromium's own URL parser: every trick, as sent, leaves the service (so each
    one tests something), and every Location the sign-in answers stays on it."""
    context = browser.new_context()
    try:
        page = context.new_page()
        resolve = "([t, base]) => { const u = new URL(t, base); return [u.origin, u.pathname]; }"
        base = f"{ORIGIN}{PREFIX}login?next=x"

        def stays(target):
            origin, path = page.evaluate(resolve, [target, base])
            return origin == ORIGIN and path.startswith(PREFIX)

        for target in TRICKS:
            if target.startswith(("javascript:", "jav\t", "data:")):
                continue  # no origin to compare: a scheme of its own
            assert not stays(target), f"{target!r} is no trick: a browser stays under {PREFIX}"
        for target, (_, location) in locations.items():
            assert stays(location), f"{target!r} sent the browser to {location!r}"
            assert urlsplit(location).netloc == ""
    finally:
        context.close()

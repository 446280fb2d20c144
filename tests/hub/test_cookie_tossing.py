"""No login CSRF by cookie tossing on a real domain: ``make hub`` at ``HUB_DOMAIN=hub.test``
behind HTTPS (tests/hub/tls_front.py, ``hub.test`` and ``*.hub.test`` mapped to the
loopback in Chromium). Eve signs in and keeps her hub login cookie and both services'
session cookies; a page on her server's origin (``eve.hub.test``) plants them in Ann's
browser for the parent domain, every way a page can (``Domain=hub.test`` and
``.hub.test``, each path the hub and the services use, each name with and without
``__Host-``). Ann, signed in or not, opens the hub and both services: she is still Ann,
or nobody, never Eve (the hub's and the services' cookies are ``__Host-`` there:
deploy/hub/jupyterhub_config.py). Without HTTPS in front, at that domain, a sign-in
does not hold (the browser keeps no ``Secure`` cookie over plain HTTP)."""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from tests.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.hub.tls_front import TLSFront

WAIT_MS = 300_000  # give-up time for servers, not a timing assertion
DOMAIN = "hub.test"
FRONT = "127.0.0.2"  # the front's loopback address: on the hub's own port, as a real one
WHO_GRADES = "/services/grader/api/deadline?exercise=update_with_donate"  # names the learner
LOGIN_NAMES = ("jupyterhub-hub-login", "service-course", "service-grader")
PATHS = ("/", "/hub/", "/services/", "/services/course/", "/services/grader/")


@pytest.fixture(scope="module")
def https_hub(domain_hub, tmp_path_factory):
    """``(https URL of the hub, Chromium resolving hub.test and its subdomains to the front)``."""
    port = int(domain_hub.env["PORT"])
    front = TLSFront(tmp_path_factory.mktemp("front"), DOMAIN, port, FRONT, port)
    rules = f"MAP {DOMAIN} {FRONT}, MAP *.{DOMAIN} {FRONT}"
    yield f"https://{DOMAIN}:{port}", rules
    front.close()


@pytest.fixture
def resolving(browser, https_hub):
    """A Chromium of this test's own, resolving ``hub.test`` to the front."""
    made = browser.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + [
        f"--host-resolver-rules={https_hub[1]}"])
    yield made
    made.close()


def context(chromium):
    return chromium.new_context(ignore_https_errors=True,
                                extra_http_headers={"X-Forwarded-Proto": "https"})


def sign_in(ctx, hub, account):
    """``account`` signs in with the hub's form, then to the grading service."""
    page = ctx.new_page()
    page.goto(hub + "/hub/login", timeout=WAIT_MS)
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    with page.expect_navigation(timeout=WAIT_MS):
        page.click("#login_submit")
    page.wait_for_url("**/services/course/**", timeout=WAIT_MS)
    page.goto(hub + "/services/grader/login?next=" + quote(WHO_GRADES), timeout=WAIT_MS)
    assert who(page, hub, [account.name]) == (account.name,) * 3, page.content()[-2000:]
    page.close()


def who(page, hub, names):
    """``(hub, course site, grading service)``: whom each takes ``page``'s browser for,
    one of ``names`` or None (nobody; for the hub, the name its home page shows)."""
    page.goto(hub + "/hub/home", timeout=WAIT_MS)
    text = "" if "/hub/login" in page.url else page.inner_text("body")
    on_hub = [n for n in names if n in text]
    answers = []
    for path, field in (("/services/course/api/session", "user"), (WHO_GRADES, "learner")):
        page.goto(hub + path, timeout=WAIT_MS)
        try:
            answers.append(json.loads(page.inner_text("body")).get(field))
        except ValueError:  # a page, not the service's answer (the hub's sign-in)
            answers.append(None)
    assert len(on_hub) <= 1, text
    return (on_hub[0] if on_hub else None, *answers)


def plants(cookies):
    """What Eve's page sets with ``document.cookie``: each of her sign-in cookies, under its
    name and the other (with or without ``__Host-``), for the parent domain on each path."""
    made = []
    for c in cookies:
        bare = c["name"].removeprefix("__Host-")
        for name in (bare, "__Host-" + bare):
            for path in PATHS:
                for domain in (DOMAIN, "." + DOMAIN):
                    made.append(f"{name}={c['value']}; Domain={domain}; Path={path}; Secure; "
                                "SameSite=Lax")
            made.append(f"{name}={c['value']}; Path=/; Secure")  # her own host only
    return made


@pytest.mark.parametrize("ann_signed_in", [True, False], ids=["signed-in", "signed-out"])
def test_a_learners_subdomain_cannot_sign_a_classmate_in_as_herself(
        resolving, https_hub, accounts, ann_signed_in):
    hub = https_hub[0]
    made, _ = accounts
    eve_account, ann_account = made["bob"], made["ada"]
    eve = context(resolving)
    sign_in(eve, hub, eve_account)
    cookies = [c for c in eve.cookies() if c["name"].removeprefix("__Host-") in LOGIN_NAMES]
    assert sorted(c["name"].removeprefix("__Host-") for c in cookies) == sorted(LOGIN_NAMES)
    eve.close()

    ann = context(resolving)
    if ann_signed_in:
        sign_in(ann, hub, ann_account)
    page = ann.new_page()
    attack = ("<!doctype html><html><body><script>"
              + "".join(f"document.cookie = {json.dumps(p)};" for p in plants(cookies))
              + "</script>prize</body></html>")
    eves = f"https://eve.{DOMAIN}:{hub.rsplit(':', 1)[1]}"
    page.route(eves + "/**", lambda route: route.fulfill(status=200, content_type="text/html",
                                                        body=attack))
    page.goto(eves + "/user/eve/files/prize.html", timeout=WAIT_MS)
    planted = [c for c in ann.cookies() if c["domain"].lstrip(".") == DOMAIN
               and c["name"].removeprefix("__Host-") in LOGIN_NAMES and c["value"] in
               {e["value"] for e in cookies}]
    assert planted, "Eve's page planted nothing: the test tests nothing"
    names = [ann_account.name, eve_account.name]
    want = ann_account.name if ann_signed_in else None
    assert who(page, hub, names) == (want, want, want)
    ann.close()


def test_on_a_real_domain_over_plain_http_nobody_stays_signed_in(browser, domain_hub, accounts):
    """No HTTPS in front: the browser keeps none of the hub's ``__Host-`` cookies (they are
    ``Secure``), so a sign-in leads back to the sign-in page, never to a sign-in a
    learner's subdomain could plant (docs/deployment.md: HTTPS is required there)."""
    made, _ = accounts
    hub = f"http://{DOMAIN}:{domain_hub.env['PORT']}"
    plain = browser.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + [
        f"--host-resolver-rules=MAP {DOMAIN} 127.0.0.1, MAP *.{DOMAIN} 127.0.0.1"])
    try:
        page = plain.new_context().new_page()
        page.goto(hub + "/hub/login", timeout=WAIT_MS)
        page.fill("#username_input", made["ada"].name)
        page.fill("#password_input", made["ada"].password)
        with page.expect_navigation(timeout=WAIT_MS):
            page.click("#login_submit")
        page.wait_for_load_state("load", timeout=WAIT_MS)
        assert not [c for c in page.context.cookies() if "hub-login" in c["name"]]
        page.goto(hub + "/hub/home", timeout=WAIT_MS)
        assert "/hub/login" in page.url, page.url
    finally:
        plain.close()

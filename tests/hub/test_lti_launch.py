"""Sign-in by LTI 1.3 launch under ``make hub`` (``HUB_AUTH=lti``), in Chromium, from a
real LTI 1.3 platform on loopback (tests/lti/platform.py): the LMS's page posts the login
initiation to the hub, the hub sends the browser to the platform's authorization URL, the
platform posts a signed id_token back, as Canvas or Moodle do. A learner becomes the
system user ``lti-...`` of their ``iss`` and ``sub`` (made on the first launch, the same at
the next), an instructor joins the hub group ``instructors``, a resource link opens its
exercise's page, and forged, expired, replayed, wrong-audience, other-deployment and
deep-linking launches sign nobody in; nor do launches of another LMS course (any role, or
no context claim), which change none of the course's AGS and NRPS URLs. The login
initiation checks its issuer, client and deployment and sets ``__Host-`` launch cookies
(``SameSite=None; Secure``, 10 minutes); on a real domain the hub takes launches over
HTTPS only, where a learner's subdomain cannot plant her launch in a classmate's browser
(login CSRF by cookie tossing, tried in Chromium through HTTPS at ``hub.test``)."""
from __future__ import annotations

import html
import json
import pwd
import re
import time
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest
import requests

from autograder.service.lms import outbox, roster as lms_roster
from autograder.service.lms.lti_tool import user_name
from autograder.service.store import Store
from tests.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.hub.accounts import hub_users
from tests.hub.tls_front import TLSFront
from tests.lti.platform import COURSE, INSTRUCTOR, LEARNER

WAIT_MS = 300_000  # give-up time for servers, not a timing assertion
EXERCISE_PAGE = "/services/course/book/exercises/update_with_donate.html"
CALLBACK = "/hub/lti13/oauth_callback"


def launch(browser, platform, hub, sub, role=LEARNER, target=None, bad=None, **more):
    """A member opens the course in the LMS: ``(page, status of the hub's answer to the
    id_token, the callback request as sent: {"cookie", "body"})``; the page has followed
    every redirect after it. ``more``: :meth:`Platform.launch_page`'s (``context``,
    ``roles``)."""
    context = browser.new_context() if hasattr(browser, "new_context") else browser
    page = context.new_page()
    sent = {}

    def keep(route):
        sent.update(cookie=route.request.all_headers().get("cookie", ""),
                    body=route.request.post_data)
        route.continue_()

    page.route(f"**{CALLBACK}", keep)
    with page.expect_response(lambda r: r.url.endswith(CALLBACK), timeout=WAIT_MS) as answer:
        page.goto(platform.launch_page(sub, f"Member {sub}", role,
                                       target or hub.url("/"), bad=bad, **more))
    # the response can come before the page commits to it (a loaded machine): wait until
    # the page is no longer the LMS's, then for its load
    page.wait_for_url(lambda url: not url.startswith(platform.url), timeout=WAIT_MS)
    page.wait_for_load_state("load", timeout=WAIT_MS)
    return page, answer.value.status, sent


def signed_in_as(page, hub):
    """The user the hub's home page says is signed in in ``page``'s browser context."""
    page.goto(hub.url("/hub/home"))
    page.wait_for_load_state("load", timeout=WAIT_MS)
    found = re.search(r"\blti-[a-z2-7]{20}\b", page.content())
    return found and found.group(0)


def test_a_learners_launch_signs_in_a_system_user_of_their_iss_and_sub_the_same_each_time(
        browser, lti_hub, lti_platform):
    name = user_name(lti_platform.url, "learner-1")
    page, status, _ = launch(browser, lti_platform, lti_hub, "learner-1")
    assert status == 302, page.content()[-2000:]
    assert signed_in_as(page, lti_hub) == name
    assert pwd.getpwnam(name).pw_dir  # its system user was made on the first launch
    assert hub_users(lti_hub)[name] == ["learners"]
    page.context.close()
    again, status, _ = launch(browser, lti_platform, lti_hub, "learner-1")
    assert status == 302 and signed_in_as(again, lti_hub) == name
    assert [n for n in hub_users(lti_hub) if n == name] == [name]
    again.context.close()


def test_an_instructors_launch_joins_the_instructors_group(browser, lti_hub, lti_platform):
    page, status, _ = launch(browser, lti_platform, lti_hub, "teacher-1", role=INSTRUCTOR)
    assert status == 302, page.content()[-2000:]
    name = user_name(lti_platform.url, "teacher-1")
    assert signed_in_as(page, lti_hub) == name
    assert hub_users(lti_hub)[name] == ["instructors"]
    page.context.close()


def test_a_resource_link_to_an_exercise_opens_its_page(browser, lti_hub, lti_platform):
    page, status, _ = launch(browser, lti_platform, lti_hub, "learner-2",
                             target=lti_hub.url(EXERCISE_PAGE))
    assert status == 302
    page.wait_for_url(re.compile(re.escape(EXERCISE_PAGE) + "$"), timeout=WAIT_MS)
    assert urlsplit(page.url).path == EXERCISE_PAGE
    assert "update_with_donate" in page.content() or "donate" in page.title().lower()
    page.context.close()


def test_a_resource_link_to_another_host_opens_the_course_not_that_host(browser, lti_hub,
                                                                       lti_platform):
    page, status, _ = launch(browser, lti_platform, lti_hub, "learner-3",
                             target="http://evil.example" + EXERCISE_PAGE)
    assert status == 302
    page.wait_for_url(re.compile(re.escape(lti_hub.url("/services/course/"))), timeout=WAIT_MS)
    # another host's link is ignored whole: the course's own page, not that path on this hub
    assert urlsplit(page.url).netloc == urlsplit(lti_hub.url("/")).netloc
    assert urlsplit(page.url).path != EXERCISE_PAGE and "evil" not in page.url
    page.context.close()


@pytest.mark.parametrize("bad, status, says", [
    ("forged", 400, "Signature verification failed"),
    ("expired", 400, "Signature has expired"),
    ("audience", 401, "Audience doesn't match"),
    # the checks jupyterhub-ltiauthenticator 1.6.3 does not make (deploy/hub/lti_sign_in.py)
    ("deployment", 400, "not this course's"),
    ("deep_linking", 400, "only LtiResourceLinkRequest"),
])
def test_a_bad_launch_signs_nobody_in_and_says_why(browser, lti_hub, lti_platform, bad, status,
                                                   says):
    sub = f"bad-{bad}"
    page, got, _ = launch(browser, lti_platform, lti_hub, sub, bad=bad)
    text = page.inner_text("body")
    assert got == status and says in text, text[-2000:]
    assert "Traceback" not in page.content()
    name = user_name(lti_platform.url, sub)
    assert name not in hub_users(lti_hub)
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    assert signed_in_as(page, lti_hub) is None
    page.context.close()


def test_a_replayed_launch_is_refused_even_with_the_first_launchs_cookies(browser, lti_hub,
                                                                         lti_platform):
    """The same id_token posted again with the cookies the browser sent the first time (a
    captured request) signs nobody in: the hub takes each launch's nonce once."""
    page, status, sent = launch(browser, lti_platform, lti_hub, "learner-4")
    assert status == 302 and sent["body"] and "lti13authenticator-nonce-state" in sent["cookie"]
    page.context.close()
    replay = requests.post(lti_hub.url(CALLBACK), data=sent["body"], allow_redirects=False,
                           headers={"Cookie": sent["cookie"], "Content-Type":
                                    "application/x-www-form-urlencoded"}, timeout=60)
    assert replay.status_code == 400, replay.status_code
    assert "used already" in replay.text and "Traceback" not in replay.text
    assert not any(c.name.startswith("jupyterhub-session") or c.name == "jupyterhub-hub-login"
                   for c in replay.cookies)


ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
ANOTHER = ("course-2", "Another course")


@pytest.mark.parametrize("roles, context, says", [
    ([INSTRUCTOR], ANOTHER, "another LMS course"),
    ([LEARNER], ANOTHER, "another LMS course"),
    ([INSTRUCTOR, ADMIN], ANOTHER, "another LMS course"),
    ([INSTRUCTOR], ("course-3", COURSE[1]), "another LMS course"),  # the same title
    ([INSTRUCTOR], None, "names no LMS course"),  # no context claim
], ids=["instructor", "learner", "admin", "same-title", "no-context"])
def test_a_launch_from_another_lms_course_is_refused_and_changes_nothing(
        browser, lti_hub, lti_platform, roles, context, says):
    """The tool added to another course of the same LMS (same deployment) by its teacher:
    nobody of that course gets in, whatever their role, after this course's launches, and
    this course's AGS and NRPS URLs stay its own."""
    page, status, _ = launch(browser, lti_platform, lti_hub, "teacher-1", role=INSTRUCTOR)
    assert status == 302
    page.context.close()
    store = Store(lti_hub.env["GRADER_DB"])
    before = outbox.context_url(store, "lineitems"), outbox.context_url(store, "memberships")
    assert before == lti_platform.endpoints(COURSE[0])
    sub = f"other-{'-'.join(r.rsplit('#', 1)[1] for r in roles)}-{(context or ('none',))[0]}"
    page, status, _ = launch(browser, lti_platform, lti_hub, sub, roles=roles, context=context)
    text = page.inner_text("body")
    assert status == 400 and says in text, text[-2000:]
    assert "Traceback" not in page.content()
    name = user_name(lti_platform.url, sub)
    assert name not in hub_users(lti_hub) and signed_in_as(page, lti_hub) is None
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    assert (outbox.context_url(store, "lineitems"),
            outbox.context_url(store, "memberships")) == before
    assert name not in lms_roster.people(store)
    page.context.close()


LOGIN = "/hub/lti13/oauth_login"
LAUNCH_COOKIES = ("__Host-lti13authenticator-state", "__Host-lti13authenticator-nonce-state")


def initiation(platform, hub, headers=None, **change):
    """The LMS's login initiation posted to the hub (as its page does), with ``change``d
    fields (None: left out); the hub's answer, not followed."""
    fields = {"iss": platform.url, "login_hint": "learner-x", "lti_message_hint": "1",
              "target_link_uri": hub.url("/services/course/"), "client_id": platform.client_id,
              "lti_deployment_id": platform.deployment_id, **change}
    return requests.post(hub.url(LOGIN), data={k: v for k, v in fields.items() if v is not None},
                         headers=headers or {}, allow_redirects=False, timeout=60)


@pytest.mark.parametrize("change, says", [
    ({"iss": "http://127.0.0.1:9"}, "not from this course's LMS"),
    ({"iss": None}, "not from this course's LMS"),
    ({"client_id": "another-tool"}, "not this tool"),
    ({"lti_deployment_id": "another-deployment"}, "not this course's"),
], ids=["other-iss", "no-iss", "other-client", "other-deployment"])
def test_a_login_initiation_not_from_this_courses_lms_is_refused(lti_hub, lti_platform, change,
                                                                 says):
    answer = initiation(lti_platform, lti_hub, **change)
    assert answer.status_code == 400 and says in html.unescape(answer.text), answer.text[-2000:]
    assert "Location" not in answer.headers
    assert not [c.name for c in answer.cookies if "lti13" in c.name]


def test_a_login_initiation_asks_with_the_tools_client_id_and_cookies_that_outlive_a_slow_lms(
        lti_hub, lti_platform):
    """No ``client_id`` from the LMS: the authorization request carries the tool's, never
    "None". The launch's cookies: ``__Host-`` (no learner's subdomain can plant them),
    ``SameSite=None; Secure`` (the launch is a cross-site POST), 10 minutes."""
    answer = initiation(lti_platform, lti_hub, client_id=None)
    assert answer.status_code == 302, answer.text[-2000:]
    asked = parse_qs(urlsplit(answer.headers["Location"]).query)
    assert asked["client_id"] == [lti_platform.client_id]
    headers = answer.raw.headers.getlist("Set-Cookie")
    for name in LAUNCH_COOKIES:
        (header,) = [h for h in headers if h.startswith(name + "=")]
        attributes = {a.strip().split("=")[0].lower(): a.strip().partition("=")[2]
                      for a in header.split(";")[1:]}
        assert attributes["samesite"] == "None" and "secure" in attributes, header
        assert attributes["path"] == "/" and "domain" not in attributes, header
        lives = parsedate_to_datetime(attributes["expires"]).timestamp() - time.time()
        assert 540 < lives < 660, header


def test_launches_need_https_on_a_real_domain(lti_hub, lti_platform):
    """A hub on plain HTTP at a real domain (learners' servers on its subdomains, which
    could plant cookies for it) takes no launch; behind HTTPS (the proxy in front says
    so, ``X-Forwarded-Proto``) it does, with ``__Host-`` cookies."""
    host = "hub.test:" + urlsplit(lti_hub.url("/")).netloc.rsplit(":", 1)[1]
    plain = initiation(lti_platform, lti_hub, headers={"Host": host})
    assert plain.status_code == 400 and "need the hub on HTTPS" in html.unescape(plain.text)
    assert not [c.name for c in plain.cookies if "lti13" in c.name]
    tls = initiation(lti_platform, lti_hub, headers={"Host": host, "X-Forwarded-Proto": "https"})
    assert tls.status_code == 302, tls.text[-2000:]
    assert parse_qs(urlsplit(tls.headers["Location"]).query)["redirect_uri"] == [
        f"https://{host}{CALLBACK}"]
    assert sorted(c.name for c in tls.cookies) == sorted(LAUNCH_COOKIES)


DOMAIN = "hub.test"  # a real-looking HUB_DOMAIN: learners' servers on its subdomains


def test_a_learners_subdomain_cannot_plant_her_launch_in_a_classmates_browser(
        browser, lti_hub, lti_platform, tmp_path):
    """Login CSRF by cookie tossing, with the hub behind HTTPS at ``hub.test`` (mapped to
    the loopback in Chromium) and Eve's page on ``eve.hub.test``: Eve starts a launch of
    her own and keeps its id_token, state and cookies; her page plants those cookies for
    the parent domain, every way a page can, in Ann's browser and posts Eve's launch to
    the hub. Ann is not signed in (as Eve or anyone); her own launch still works."""
    front = TLSFront(tmp_path, DOMAIN, int(urlsplit(lti_hub.url("/")).port))
    hub = f"https://{DOMAIN}:{front.port}"
    rules = f"MAP {DOMAIN} 127.0.0.1, MAP *.{DOMAIN} 127.0.0.1"
    chromium = browser.browser_type.launch(executable_path=CHROMIUM,
                                           args=CHROMIUM_ARGS + [f"--host-resolver-rules={rules}"])
    login_before = lti_platform.tool_login_url
    lti_platform.register_tool_login(hub + LOGIN, hub + CALLBACK)

    def browser_context():
        return chromium.new_context(ignore_https_errors=True,
                                    extra_http_headers={"X-Forwarded-Proto": "https"})

    try:
        eve = browser_context()
        kept = {}

        def keep(route):  # Eve's browser: the launch's post, kept, never sent
            kept.update(body=route.request.post_data_json or route.request.post_data)
            route.abort()

        page = eve.new_page()
        page.route(f"**{CALLBACK}", keep)
        page.goto(lti_platform.launch_page("eve", "Eve", LEARNER, hub + "/services/course/"))
        page.wait_for_timeout(100)
        deadline = time.monotonic() + 60
        while "body" not in kept and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        cookies = [c for c in eve.cookies() if "lti13authenticator" in c["name"]]
        assert len(cookies) == 2, eve.cookies()
        form = dict(parse_qsl(kept["body"])) if isinstance(kept["body"], str) else kept["body"]

        plant = []  # what Eve's page tries: each name, prefixed or not, for the parent domain
        for c in cookies:
            for name in (c["name"], c["name"].removeprefix("__Host-")):
                plant += [f"{name}={c['value']}; Domain={DOMAIN}; Path=/; Secure; SameSite=None",
                          f"{name}={c['value']}; Domain=.{DOMAIN}; Path=/hub/; Secure; "
                          "SameSite=None",
                          f"{name}={c['value']}; Path=/; Secure; SameSite=None"]
        inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">'
                         for k, v in form.items())
        attack = ("<!doctype html><html><body><script>"
                  + "".join(f"document.cookie = {json.dumps(p)};" for p in plant)
                  + f'</script><form id="go" method="post" action="{hub}{CALLBACK}">{inputs}'
                  '</form><script>document.getElementById("go").submit()</script></body></html>')
        ann = browser_context()
        victim = ann.new_page()
        victim.route(f"https://eve.{DOMAIN}:{front.port}/**", lambda route: route.fulfill(
            status=200, content_type="text/html", body=attack))
        with victim.expect_response(lambda r: r.url.endswith(CALLBACK), timeout=WAIT_MS) as got:
            victim.goto(f"https://eve.{DOMAIN}:{front.port}/user/eve/files/prize.html")
        assert got.value.status == 400, got.value.status
        assert "state missing from cookies" in victim.inner_text("body")
        assert not [c for c in ann.cookies() if c["name"].startswith("jupyterhub-")
                    and c["domain"].endswith(DOMAIN)], ann.cookies()
        assert sorted(c["name"] for c in cookies) == sorted(LAUNCH_COOKIES)

        mine, status, _ = launch(ann, lti_platform, lti_hub, "ann-real", target=hub + "/hub/home")
        assert status == 302, mine.content()[-2000:]
        assert user_name(lti_platform.url, "ann-real") in mine.content()
    finally:
        lti_platform.tool_login_url = login_before
        chromium.close()
        front.close()


# Chromium sends a cookie without ``SameSite=None`` on a cross-site POST only while it is
# younger than its Lax-allow-unsafe age, 2 minutes; its ShortLaxAllowUnsafeThreshold
# feature, there for tests, makes that age 10 seconds. A Chromium of this test's own runs
# with it, so an LMS page shown past it takes seconds, not minutes.
SHORT_LAX = "--enable-features=ShortLaxAllowUnsafeThreshold"
SHORT_LAX_S = 10.0  # Chromium's age under SHORT_LAX (net/base: kShortLaxAllowUnsafeMaxAge)


def test_a_launch_posted_after_the_lms_showed_its_own_page_for_over_two_minutes_signs_in(
        browser, lti_hub, lti_platform):
    """An LMS that shows a page of its own (a consent, a notice) before it posts the launch:
    Chromium sends a cookie without ``SameSite=None`` on that cross-site POST only within 2
    minutes of setting it; the launch cookies are ``SameSite=None`` and live 10 minutes.
    In a Chromium whose window is 10 s (:data:`SHORT_LAX`), the page stays 15 s."""
    chromium = browser.browser_type.launch(executable_path=CHROMIUM,
                                           args=CHROMIUM_ARGS + [SHORT_LAX])
    lti_platform.interstitial_s = SHORT_LAX_S + 5
    try:
        page, status, _ = launch(chromium, lti_platform, lti_hub, "learner-slow")
        assert status == 302, page.inner_text("body")[-2000:]
        assert signed_in_as(page, lti_hub) == user_name(lti_platform.url, "learner-slow")
    finally:
        lti_platform.interstitial_s = 0.0
        chromium.close()

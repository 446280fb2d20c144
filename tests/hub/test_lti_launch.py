"""Sign-in by LTI 1.3 launch under ``make hub`` (``HUB_AUTH=lti``), in Chromium, from a
real LTI 1.3 platform on loopback (tests/lti/platform.py): the LMS's page posts the login
initiation to the hub, the hub sends the browser to the platform's authorization URL, the
platform posts a signed id_token back, as Canvas or Moodle do. A learner becomes the
system user ``lti-...`` of their ``iss`` and ``sub`` (made on the first launch, the same at
the next), an instructor joins the hub group ``instructors``, a resource link opens its
exercise's page, and forged, expired, replayed, wrong-audience, other-deployment and
deep-linking launches sign nobody in."""
from __future__ import annotations

import pwd
import re
from urllib.parse import urlsplit

import pytest
import requests

from autograder.service.lti_tool import user_name
from tests.hub.accounts import hub_users
from tests.lti.platform import INSTRUCTOR, LEARNER

WAIT_MS = 300_000  # give-up time for servers, not a timing assertion
EXERCISE_PAGE = "/services/course/book/exercises/update_with_donate.html"
CALLBACK = "/hub/lti13/oauth_callback"


def launch(browser, platform, hub, sub, role=LEARNER, target=None, bad=None):
    """A member opens the course in the LMS: ``(page, status of the hub's answer to the
    id_token, the callback request as sent: {"cookie", "body"})``; the page has followed
    every redirect after it."""
    context = browser.new_context()
    page = context.new_page()
    sent = {}

    def keep(route):
        sent.update(cookie=route.request.all_headers().get("cookie", ""),
                    body=route.request.post_data)
        route.continue_()

    page.route(f"**{CALLBACK}", keep)
    with page.expect_response(lambda r: r.url.endswith(CALLBACK), timeout=WAIT_MS) as answer:
        page.goto(platform.launch_page(sub, f"Member {sub}", role,
                                       target or hub.url("/"), bad=bad))
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

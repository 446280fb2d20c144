"""The rules of sign-in by LTI launch that need no hub (deploy/hub/lti_sign_in.py): which
hub groups a launch's roles give, and which target_link_uri a launch may open. The launch
itself, against make hub in Chromium: tests/hub/test_lti_launch.py."""
import importlib.util

import pytest

from tests.course import REPO

# loaded from its file, as the hub's config loads it, without putting deploy/hub (which
# holds a site.py) on every later import's path
_spec = importlib.util.spec_from_file_location("lti_sign_in", REPO / "deploy" / "hub" / "lti_sign_in.py")
lti_sign_in = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lti_sign_in)

M = "http://purl.imsglobal.org/vocab/lis/v2/membership"
I = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
HOST = "hub.example.org:4443"  # any host: own_path compares it with the URL's


@pytest.mark.parametrize("roles, groups", [
    ([f"{M}#Learner"], ["learners"]),
    ([f"{M}#Instructor"], ["instructors"]),
    ([f"{M}/Instructor#TeachingAssistant"], ["instructors"]),  # Canvas' TA
    ([f"{M}#Instructor", f"{M}#Learner"], ["instructors", "learners"]),
    # a teacher elsewhere in the institution is a learner in this course
    ([f"{I}Instructor", f"{M}#Learner"], ["learners"]),
    ([f"{I}Faculty"], ["instructors"]),  # no course role: the institution's decides
    ([f"{I}Student"], ["learners"]),
    ([f"{M}#Mentor"], []),  # neither role: the launch is refused (LTISignIn.authenticate)
    ([], []),
    (None, []),
])
def test_roles_give_hub_groups(roles, groups):
    assert lti_sign_in.hub_groups(roles) == groups


@pytest.mark.parametrize("target, opens", [
    (f"http://{HOST}/services/course/book/exercises/update_with_donate.html",
     "/services/course/book/exercises/update_with_donate.html"),
    (f"https://{HOST}/services/course/book/intro.html?x=1#top", "/services/course/book/intro.html?x=1"),
    ("/hub/home", "/hub/home"),
    ("http://evil.example/services/course/", None),
    ("//evil.example/services/course/", None),
    (f"http://{HOST}//evil.example/", None),
    (f"http://{HOST}/services\\..\\evil", None),
    (f"http://{HOST}/services/course/\\evil.example", None),
    (f"javascript://{HOST}/services/", None),
    (f"http://{HOST}/", None),  # not a course path: the hub's default page
    (f"http://{HOST}/etc/passwd", None),
    ("", None),
])
def test_a_launch_opens_only_paths_of_this_hub(target, opens):
    assert lti_sign_in.own_path(target, HOST) == opens

"""The rules of sign-in by LTI launch that need no hub (deploy/hub/lti_sign_in.py): which
hub groups a launch's roles give, which target_link_uri a launch may open, each nonce
taken once across restarts, what ``make hub`` says to register. The launch
itself, against make hub in Chromium: tests/hub/test_lti_launch.py."""
import pytest

from deploy.hub import lti_sign_in

M = "http://purl.imsglobal.org/vocab/lis/v2/membership"
I = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"  # noqa: E741 (beside M)
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


def test_a_nonce_is_taken_once_even_after_a_restart(tmp_path):
    """A new UsedNonces on the same file (the hub restarted) refuses a nonce taken before;
    expired ones are forgotten; the file is the hub's alone (0600)."""
    path, now = tmp_path / "lti-nonces.json", 1_000_000.0
    first = lti_sign_in.UsedNonces(path)
    first.take("n-1", now + 60, now=now)
    first.take("old", now + 1, now=now)
    with pytest.raises(lti_sign_in.IncorrectValueError, match="used already"):
        first.take("n-1", now + 60, now=now + 1)
    assert path.stat().st_mode & 0o777 == 0o600
    restarted = lti_sign_in.UsedNonces(path)
    with pytest.raises(lti_sign_in.IncorrectValueError, match="used already"):
        restarted.take("n-1", now + 60, now=now + 2)
    restarted.take("n-2", now + 60, now=now + 2)  # a new launch: taken
    assert set(restarted.seen) == {"n-1", "n-2"}  # "old" expired: forgotten


def test_a_nonce_file_that_is_not_json_starts_empty(tmp_path):
    path = tmp_path / "lti-nonces.json"
    path.write_text("{not json")
    lti_sign_in.UsedNonces(path).take("n-1", 2e9)  # a launch still signs in
    assert "n-1" in path.read_text()


def test_make_hub_under_lti_says_the_tools_urls_to_register():
    from scripts import hub

    said = hub.running_message("https://hub.example.org", "lti")
    assert said.startswith("==> the course hub is running: https://hub.example.org/ ")
    for url in ("/hub/lti13/oauth_login", "/hub/lti13/oauth_callback",
                "/services/grader/api/lti/jwks", "/services/course/"):
        assert "https://hub.example.org" + url in said
    assert "account of this machine" not in said
    assert "account of this machine" in hub.running_message("https://hub.example.org", "pam")

"""What a launch from an LMS tells the class views (the hub's sign-in records it with
:func:`autograder.service.lms.roster.launched`; tests/hub/test_lti_class.py does it through
``make hub``): the member's LMS name beside their user name on the class page and in the
class CSV (nbgrader's ``last_name``), and "never launched" only for the LMS's learners who
never did. The roster's other sources: tests/service/test_roster.py."""
from autograder.service.api.classroom import gradebook_csv
from autograder.service.class_views import class_page, class_stats, roster
from autograder.service.lms import outbox, roster as lms_roster
from autograder.service.lms.lti_tool import user_name
from tests.service.test_class_page import _graded, store  # noqa: F401  (a fixture)
from tests.service.test_roster import gradebook, made_gradebook  # noqa: F401  (fixtures)

ISS = "https://lms.example.edu"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"


def launch(sub, name, role=LEARNER, **more):
    """The claims of a verified launch of ``sub`` (as the hub's sign-in hands them on)."""
    return {"iss": ISS, "sub": sub, "name": name, CLAIM + "roles": [role], **more}


def test_a_launch_records_its_member_as_launched_with_the_lms_name_and_endpoints(store):  # noqa: F811
    lms_roster.remember(store, ISS, "s-1", "Ada L.", [LEARNER])  # NRPS first: not launched
    assert not lms_roster.people(store)[user_name(ISS, "s-1")]["launched"]
    ags = {"lineitems": ISS + "/courses/7/line_items", "scope": []}
    nrps = {"context_memberships_url": ISS + "/courses/7/names_and_roles"}
    course = {CLAIM + "context": {"id": "7", "title": "JAX"}}
    lms_roster.admit_context(store, launch("t-1", "Prof", INSTRUCTOR, **course), True)  # pinned
    learner = lms_roster.launched(store, launch("s-1", "Ada Lovelace", **course, **{
        "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": ags,
        "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": nrps}))
    assert learner == user_name(ISS, "s-1")
    assert lms_roster.people(store)[learner] == {"name": "Ada Lovelace", "roles": [LEARNER],
                                                 "launched": True}
    assert outbox.context_url(store, "lineitems") == ags["lineitems"]
    assert outbox.context_url(store, "memberships") == nrps["context_memberships_url"]
    # a later roster refresh keeps the launch; a launch without a name keeps given + family
    lms_roster.remember(store, ISS, "s-1", "Ada L.", [LEARNER])
    assert lms_roster.people(store)[learner]["launched"]
    other = lms_roster.launched(store, {"iss": ISS, "sub": "s-2", "given_name": "Bo",
                                        "family_name": "Diddley"})
    assert lms_roster.names(store)[other] == "Bo Diddley"


def test_the_class_page_shows_lms_names_and_never_launched_only_for_who_never_did(store, gradebook):  # noqa: F811
    ada = lms_roster.launched(store, launch("s-1", "Ada Lovelace"))
    never = lms_roster.remember(store, ISS, "s-3", "Cy Never", [LEARNER])  # NRPS only
    teacher = lms_roster.remember(store, ISS, "t-1", "Prof. T", [INSTRUCTOR])  # not a learner
    _graded(store, ada, "state alive")
    # a launch made the hub user; the hub counts no activity until a page is opened
    hub = {ada: {"instructor": False, "signed_in": False}}
    course = roster.combine(*roster.read_gradebook(gradebook), hub, lms_roster.people(store))
    assert course.learners[ada] is True and course.learners[never] is False
    assert teacher not in course.learners
    html = class_page.render(class_stats.class_data(store, "best", roster=course))
    assert f'{ada}</a> <span class="lms-name">Ada Lovelace</span></th>' in html
    assert (f'{never}</a> <span class="lms-name">Cy Never</span> '
            '<span class="absent">(never launched)</span>') in html
    assert 'Ada Lovelace</span> <span class="absent">(never launched)' not in html
    assert '?learner=cy">cy</a> <span class="absent">(never signed in)</span>' in html  # no LMS


def test_the_csv_gives_the_lms_name_beside_the_user_name_safely(gradebook):  # noqa: F811
    names = {"lti-a": "Ada Lovelace", "lti-b": '=HYPERLINK("x"), Bob\nEvil'}
    roster.enroll(gradebook, ["ada", "lti-a", "lti-b"], names)
    lines = gradebook_csv(gradebook).splitlines()
    head = lines[0].split(",")
    cells = [line.split(",") for line in lines[1:]]
    assert all(len(r) == len(head) for r in cells)  # no name adds or splits a column
    last = {r[head.index("student_id")]: r[head.index("last_name")] for r in cells}
    assert last["lti-a"] == "Ada Lovelace"
    assert last["lti-b"] == "HYPERLINK( x ) Bob Evil"  # no formula, comma, quote or line break
    roster.enroll(gradebook, ["lti-a"], {"lti-a": "Ada King"})  # the LMS's name changed
    assert "Ada King" in gradebook_csv(gradebook)

"""The class's membership without a hub: the learners group's members on the roster
before they sign in, a dropped learner kept (withdrawn) or forgotten (removed) in the
grading database and in a real nbgrader gradebook, and the grading service's gradebook
thread (:class:`~autograder.service.class_views.roster.Keeper`) never bringing a removed learner back.
The same through the real hub: tests/hub/test_drop.py."""
from nbgrader.api import Gradebook

from autograder.service.class_views import class_page, class_stats, roster
from autograder.service.commands import hub_admin
from autograder.service.gradebook.mirror import Mirror
from autograder.service.lms import roster as lms_roster
from autograder.service.store import withdrawn
from tests.service.test_class_page import _graded, store  # noqa: F401  (a fixture)
from tests.service.test_roster import gradebook, made_gradebook  # noqa: F401  (fixtures)

HUB = {"ada": {"instructor": False, "signed_in": True},
       "ins": {"instructor": True, "signed_in": True}}


def test_group_members_and_drops_are_on_the_roster_as_they_are():
    course = roster.combine(["ada"], {}, HUB, None, group=["cy", "dee", "ins", "eve"],
                            dropped={"dee": "withdrawn", "eve": "removed"})
    assert course.learners == {"ada": True, "cy": False, "dee": False}
    assert course.withdrawn == {"dee"} and "eve" not in course.learners
    assert roster.combine([], {}, None, None, ["eve"], {"eve": "removed"}).learners == {}


def test_a_withdrawn_learner_is_marked_on_the_class_page(store):  # noqa: F811
    _graded(store, "dee", None)
    course = roster.combine([], {}, HUB, None, ["dee"], {"dee": "withdrawn"})
    html = class_page.render(class_stats.class_data(store, "best", roster=course))
    assert '>dee</a> <span class="absent">(withdrawn)</span>' in html


def test_a_drop_is_kept_and_a_removal_forgets_her_work(store):  # noqa: F811
    for who in ("dee", "eve"):
        _graded(store, who, None)
        store.record_run(who, "intro")
    withdrawn.mark(store, "dee", "withdrawn")
    withdrawn.mark(store, "eve", "removed")
    assert withdrawn.kinds(store) == {"dee": "withdrawn", "eve": "removed"}
    assert withdrawn.forget(store, "eve") == 1
    assert [r.learner for r in store.submissions()] == ["dee"] and list(store.runs()) == ["dee"]
    assert withdrawn.kind_of(store, "ada") is None and withdrawn.unmark(store, "dee")
    assert withdrawn.kinds(store) == {"eve": "removed"}


def test_the_gradebook_thread_enrols_the_class_and_never_brings_a_removed_learner_back(
        store, gradebook, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.delenv("HUB_LEARNERS_GROUP", raising=False)
    mirror = Mirror(tmp_path, gradebook)
    lms_roster.remember(store, "https://lms.example", "fox", "Fox F", [lms_roster.LEARNER_ROLE])
    fox = lms_roster.user_name("https://lms.example", "fox")
    withdrawn.mark(store, "cy", "withdrawn")
    withdrawn.mark(store, "ada", "removed")
    roster.Keeper(store, mirror).round()
    with Gradebook(gradebook) as gb:
        students = {s.id: s.first_name for s in gb.students}
    assert students == {"cy": withdrawn.FIRST_NAME, "dee": "Dee", fox: None}
    with Gradebook(gradebook) as gb:  # a grade of hers written meanwhile brings her back
        gb.update_or_create_student("ada")
    roster.Keeper(store, mirror).round()  # the thread of the service's next start
    with Gradebook(gradebook) as gb:
        assert "ada" not in {s.id for s in gb.students}


def test_the_roster_commands_hub_token_is_made_once_and_private(tmp_path):
    first = hub_admin.service_token(tmp_path)
    assert hub_admin.service_token(tmp_path) == first and len(first) == 64
    assert (tmp_path / hub_admin.TOKEN_FILE).stat().st_mode & 0o777 == 0o600

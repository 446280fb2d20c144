"""The instructor's command for who is in the class (run as root, beside ``make hub``):

    python -m autograder.service.members enroll  # the class into nbgrader now
    python -m autograder.service.members drop NAME [--keep-grades | --remove-grades]
    python -m autograder.service.members readmit NAME  # undo a --keep-grades drop
    python -m autograder.service.members demote NAME  # an instructor no longer
    python -m autograder.service.members show  # who was dropped, how

(``--db`` and ``--course`` as for the service, or ``GRADER_DB`` and ``GRADER_COURSE``;
the hub's ``HUB_STATE``, ``HUB_API_PORT``, ``HUB_AUTH`` and groups as ``make hub`` reads
them.) ``drop`` does, in this order: the drop is recorded in the grading database
(:mod:`.withdrawn`: from that moment the grading service refuses her every request and
the hub her sign-in and launches); under PAM she leaves the learners group; the hub
deletes her user, which stops her server and ends every token and session of hers
(:func:`.hub_admin.end_sessions`); then her grades are kept and marked withdrawn
(``--keep-grades``, the default) or deleted (``--remove-grades``). ``demote`` takes an
instructor out of the instructors group (PAM) and deletes their hub user the same way:
their next sign-in makes them what the groups (or the LMS's roles) say then. Exit status
1 when the hub could not be reached (everything else is done; run it again once the hub
runs), 2 for a name the course does not know.
"""
from __future__ import annotations

import subprocess
import sys

from autograder import defaults
from autograder.service import config
from autograder.service.class_views import roster
from autograder.service.commands import hub_admin
from autograder.service.store import withdrawn


def _parser():
    p = config.parser("python -m autograder.service.members",
                      "Enrol the class, drop a learner, demote an instructor.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("enroll", help="enrol the learners group's members (PAM) and the LMS's "
                   "learners in nbgrader's gradebook now (the grading service does every 30 s)")
    drop = sub.add_parser("drop", help="drop a learner: refused from now on, sessions ended")
    drop.add_argument("name")
    keep = drop.add_mutually_exclusive_group()
    keep.add_argument("--keep-grades", dest="kind", action="store_const", const=withdrawn.Kind.WITHDRAWN,
                      help="keep her grades, shown as withdrawn on every view (the default)")
    keep.add_argument("--remove-grades", dest="kind", action="store_const", const=withdrawn.Kind.REMOVED,
                      help="delete her submissions and grades; no view lists her")
    drop.set_defaults(kind=withdrawn.Kind.WITHDRAWN)
    sub.add_parser("readmit", help="undo a --keep-grades drop").add_argument("name")
    sub.add_parser("demote", help="end an instructor's instructor access now").add_argument("name")
    sub.add_parser("show", help="print who was dropped, and how")
    return p


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    store, mirror = config.open_store(args)
    if args.command == "show":
        kinds = sorted(withdrawn.kinds(store).items())
        for name, kind in kinds:
            print(f"{name}: {kind}")
        if not kinds:
            print("nobody is dropped from the course")
        return 0
    if args.command == "enroll":
        added = roster.enroll(mirror.url, roster.class_learners(store))
        print(f"enrolled {len(added)} learner(s) in nbgrader's gradebook: {' '.join(added)}" if added
              else "nobody new to enrol: every learner of the class is in nbgrader's gradebook already")
        return 0
    name = args.name
    learners, staff = (_group("HUB_LEARNERS_GROUP"), _group("HUB_INSTRUCTORS_GROUP"))
    if args.command == "demote":
        if not (name in staff or _lms_instructor(store, name)):
            p.error(f"{name!r} is no instructor of this course (not in the instructors group "
                    "or an LMS instructor who launched): check the name")
        if name in staff:
            _leave(name, "HUB_INSTRUCTORS_GROUP")
        return _end(name)
    known = _known(store, mirror, name) or name in learners
    if not known:
        p.error(f"{name!r} is no learner of this course (not in the learners group, the "
                "gradebook, the LMS's roster or the grading database): check the name")
    if name in staff:
        p.error(f"{name} is an instructor: demote them first")
    if args.command == "readmit":
        if withdrawn.kind_of(store, name) != withdrawn.Kind.WITHDRAWN:
            p.error(f"{name} is not withdrawn (a removed learner's grades are gone: "
                    "add her to the learners group again)")
        withdrawn.unmark(store, name)
        withdrawn.in_gradebook(mirror.url, mirror.course, name, None)
        print(f"{name} is in the course again" + (
            f" (add her to the group {defaults.hub_setting('HUB_LEARNERS_GROUP')} again)"
            if _pam() else ""))
        return 0
    withdrawn.mark(store, name, args.kind)  # from here on she is refused everywhere
    if name in learners:
        _leave(name, "HUB_LEARNERS_GROUP")
    status = _end(name)
    if args.kind == withdrawn.Kind.REMOVED:
        count = withdrawn.forget(store, name)
        print(f"{count} submission(s) of {name} deleted")
    withdrawn.in_gradebook(mirror.url, mirror.course, name, args.kind)
    print(f"{name} is {args.kind}")
    return status


def _pam():
    return defaults.hub_setting("HUB_AUTH") == "pam"


def _group(setting):
    """The members of the hub's system group ``setting`` names, under PAM (else none)."""
    return roster.group_members(defaults.hub_setting(setting)) if _pam() else []


def _leave(name, setting):
    """Take ``name`` out of the system group ``setting`` names (``gpasswd -d``); a user
    whose primary group it is stays in it, and is refused all the same (the drop mark)."""
    group = defaults.hub_setting(setting)
    done = subprocess.run(["gpasswd", "-d", name, group], capture_output=True, text=True)
    print(f"{name} left the group {group}" if done.returncode == 0 else
          f"{name} stays in the group {group} ({done.stderr.strip()}): the hub refuses "
          "her sign-in all the same")


def _end(name):
    """End ``name``'s hub user (server, tokens, sessions): the exit status (0, or 1 when
    the hub could not be reached)."""
    try:
        deleted = hub_admin.end_sessions(name)
    except hub_admin.HubUnreachable as exc:
        print(f"the hub's sessions of {name} were NOT ended: {exc}; run this again once "
              "the hub runs (the grading service refuses her already)")
        return 1
    print(f"{name}'s hub user deleted: server stopped, every token and session ended"
          if deleted else f"{name} has no hub user (never signed in, or ended before)")
    return 0


def _lms_instructor(store, name):
    """Whether ``name`` launched from the LMS with a role other than Learner."""
    from autograder.service.lms import roster as lms_roster
    who = lms_roster.people(store).get(name)
    return bool(who and who["roles"] and not roster._learner(who["roles"]))


def _known(store, mirror, name):
    """Whether ``name`` is in the gradebook, the LMS's roster or the grading database."""
    from autograder.service.lms import roster as lms_roster
    students, _ = roster.read_gradebook(mirror.url) if not mirror.missing() else ([], {})
    return (name in students or name in lms_roster.people(store)
            or name in withdrawn.kinds(store) or bool(store.submissions(name)))


if __name__ == "__main__":
    sys.exit(main())

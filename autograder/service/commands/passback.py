"""The instructor's commands for grades back to the LMS and its roster (LTI 1.3).

    python -m autograder.service.passback status    # per learner and exercise: held or why not
    python -m autograder.service.passback resend    # post every recorded grade again
    python -m autograder.service.passback roster    # read the LMS course's members (NRPS)
    python -m autograder.service.passback send      # post what is due now, then exit

(``--db``/``--course``/``--recorded`` as for the service.) The LMS: the ``LTI_*``
settings of the environment, each one missing there taken from the registration the
grading service of that database recorded when it started (the hub's, under ``make
hub``), the tool's key from ``LTI_PRIVATE_KEY`` or ``LTI_KEY_FILE``, else the key file the
service recorded (root's: run it as the hub's user). What is still missing is named.
The running service or workers post what is due; ``resend`` marks every grade due again
(the LMS keeps one score per learner and exercise, so nothing is doubled), refused ones too.
"""
import dataclasses
import sys

from autograder import defaults
from autograder.service import config
from autograder.service.lms import outbox, roster as roster


def lms_client(store, fail):
    """The :class:`~autograder.service.lms.ags.Client` of the LMS (see the module); calls
    ``fail(words)`` (which exits) when the registration or the key cannot be had."""
    from autograder.service.lms.ags import Client
    from autograder.service.lms.lti_tool import Registration
    here = Registration.from_settings()
    kept, key_file = outbox.recorded_registration(store)
    registration = here if kept is None else Registration(**{
        f.name: getattr(here, f.name) or getattr(kept, f.name)
        for f in dataclasses.fields(Registration)})
    if not registration.can_post:
        missing = [n for n, v in (("LTI_CLIENT_ID", registration.client_id),
                                  ("LTI_TOKEN_URL", registration.token_url)) if not v]
        fail(f"no LMS registration: {' and '.join(missing)} not set here, and no grading "
             "service of this database (--db, GRADER_DB) recorded one (it does when it starts "
             "with the LMS's LTI_* settings, as make hub gives it)")
    pem = defaults.setting("LTI_PRIVATE_KEY").encode()
    if not pem:
        path = defaults.setting("LTI_KEY_FILE") or key_file or str(defaults.lti_key_file())
        try:
            with open(path, "rb") as key:
                pem = key.read()
        except OSError as exc:
            fail(f"the tool's LTI key cannot be read at {path} ({exc.strerror}): run as the "
                 "hub's user, or set LTI_KEY_FILE or LTI_PRIVATE_KEY")
    return Client(registration, pem)


def main(argv=None):
    p = config.parser("python -m autograder.service.passback",
                      "Grades back to the LMS (LTI 1.3 AGS) and its roster (NRPS).")
    p.add_argument("command", choices=("status", "resend", "roster", "send"))
    args = p.parse_args(argv)
    store, mirror = config.open_store(args)
    if args.command == "resend":
        print(f"{outbox.resend_all(store)} recorded grade(s) will be posted to the LMS again "
              "by the running service or workers")
    elif args.command == "send":
        import socket

        from autograder.service.gradebook.recorded import late_by
        from autograder.service.grading import _alive
        from autograder.service.store import process_name
        client = lms_client(store, p.error)
        store.release_dead(socket.gethostname(), _alive)  # a killed sender's posts
        sender = outbox.Sender(store, client, args.recorded,
                               lambda: late_by(mirror.deadlines), f"{process_name()}:passback")
        sender.plan()
        print(f"{sender.drain()} grade(s) posted or tried")
    elif args.command == "roster":
        client = lms_client(store, p.error)
        url = client.registration.memberships_url or outbox.context_url(store, "memberships")
        if not url:
            p.error("no memberships URL yet (a launch of the course brings it, or set "
                    "LTI_MEMBERSHIPS_URL)")
        count = roster.refresh(store, client, client.registration.issuer, url)
        print(f"{count} member(s) of the LMS course read")
    else:
        pinned = roster.pinned_context(store, roster.configured_context())
        print(f"LMS course (context): {pinned or 'none yet (the first instructor launch pins it)'}")
        for (learner, exercise), state in sorted(outbox.states(store).items()):
            print(f"{learner}\t{exercise}\t" + ("held" if state["holds"] else state["why"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The instructor's commands for grades back to the LMS and its roster (LTI 1.3).

    python -m autograder.service.passback status    # per learner and exercise: held or why not
    python -m autograder.service.passback resend    # post every recorded grade again
    python -m autograder.service.passback roster    # read the LMS course's members (NRPS)
    python -m autograder.service.passback send      # post what is due now, then exit

(``--db``/``--course``/``--recorded`` as for the service; the LMS from ``LTI_*``.)
The running service or workers post what is due; ``resend`` marks every grade due again
(the LMS keeps one score per learner and exercise, so nothing is doubled).
"""
import sys

from autograder.service import config, lms_roster as roster, outbox


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

        from autograder.service.grading import _alive, lms_client
        from autograder.service.recorded import late_by
        from autograder.service.store import process_name
        client = lms_client()
        if client is None:
            p.error("no LMS registered (LTI_CLIENT_ID, LTI_TOKEN_URL)")
        store.release_dead(socket.gethostname(), _alive)  # a killed sender's posts
        sender = outbox.Sender(store, client, args.recorded,
                               lambda: late_by(mirror.deadlines), f"{process_name()}:passback")
        sender.plan()
        print(f"{sender.drain()} grade(s) posted or tried")
    elif args.command == "roster":
        from autograder.service.grading import lms_client
        client = lms_client()
        url = (client and client.registration.memberships_url) or \
            outbox.context_url(store, "memberships")
        if client is None or not url:
            p.error("no LMS registered (LTI_CLIENT_ID, LTI_TOKEN_URL) or no memberships URL "
                    "yet (an instructor's launch brings it, or set LTI_MEMBERSHIPS_URL)")
        count = roster.refresh(store, client, client.registration.issuer, url)
        print(f"{count} member(s) of the LMS course read")
    else:
        for (learner, exercise), state in sorted(outbox.states(store).items()):
            print(f"{learner}\t{exercise}\t" + ("held" if state["holds"] else state["why"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

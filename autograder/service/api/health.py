"""What ``GET /api/health`` says, as a pure function of what the API read
(:class:`autograder.service.api.app.Health` reads it): :func:`report`."""


def report(exercises, max_bytes, *, store_problem=None, waiting=None, workers=None,
           grading_problem=None, warnings=None, gradebook_problem=None):
    """``(status, answer)``: HTTP 200 with ``answer["ok"]`` true when there is no problem,
    else 503; ``answer`` a JSON-ready dict.

    ``exercises``: the names served; ``max_bytes``: the largest notebook taken (bytes).
    ``store_problem``: the database error in words when the store could not be written or
    read, else None; ``waiting``: submissions queued or running (None: not read);
    ``workers``: the heartbeat rows of grading workers seen lately, ``[(name, slots,
    problem)]`` (None: not read); ``grading_problem``: what stops this process's grading
    threads, or None; ``warnings``: sentences that keep the service ok (gradebook points,
    out-of-date grades; None: not read); ``gradebook_problem``: nbgrader's gradebook
    error in words, or None.
    """
    problems = [store_problem] if store_problem else []
    answer = {"ok": True, "exercises": list(exercises), "max_bytes": max_bytes,
              "problems": problems}
    if waiting is not None:
        answer["waiting"] = waiting
    if grading_problem:
        problems.append(f"grading in this process: {grading_problem}")
    if workers is not None:
        answer["workers"] = sum(slots for _, slots, _ in workers)
        problems += [f"worker {name}: {problem}" for name, _, problem in workers if problem]
        if not workers and waiting:
            problems.append(f"no grading worker has reported in the last 30 s; "
                            f"{waiting} submission(s) wait")
    answer["warnings"] = list(warnings or [])
    if gradebook_problem:
        problems.append(f"nbgrader's gradebook: {gradebook_problem}")
    answer["ok"] = not problems
    return (200 if answer["ok"] else 503), answer

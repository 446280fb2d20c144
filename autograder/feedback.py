"""How a hidden test tells a learner what went wrong, and what it is worth.

Tests fail with :func:`fail`, which builds a plain-words message: what was
checked, what was expected, what came back, and a hint. The grader shows only
that message, never the test's source or its expected constants beyond what
the task statement gives.
"""


class GradeFailure(AssertionError):
    """A failed check, carrying the message a learner will read."""


def fail(checked, expected, got, hint=None):
    """Raise :class:`GradeFailure` with a four-part plain-words message."""
    lines = [f"Checked: {checked}", f"Expected: {expected}", f"Got: {got}"]
    if hint:
        lines.append(f"Hint: {hint}")
    raise GradeFailure("\n".join(lines))


def where_text(where):
    """Where a probe saw the learner's code raise, in words, or ''.

    ``where`` is :func:`autograder.exercises.common.learner_line`'s ``{"line": int,
    "code": str}`` (the line number within the cell), or None."""
    if not isinstance(where, dict) or not isinstance(where.get("line"), int):
        return ""  # none, or observations the grader cannot read: say no line
    code = str(where.get("code") or "")[:200]
    return f"line {where['line']} of your cell" + (f": `{code}`" if code else "")


def graded(points, name):
    """Mark a hidden test with its points and the name learners see."""

    def mark(fn):
        fn.points = points
        fn.title = name
        return fn

    return mark

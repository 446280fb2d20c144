"""How a hidden test tells a learner what went wrong, and what it is worth.

Tests fail with :func:`fail`, which builds a plain-words message: what was
checked, what was expected, what came back, and a hint. The grader shows only
that message, never the test's source or its expected constants beyond what
the task statement gives.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

Test = TypeVar("Test", bound=Callable[..., Any])


class GradeFailure(AssertionError):
    """A failed check, carrying the message a learner will read; ``row``, the id of the
    requirement row the observations show violated (None: every row of the check)."""

    row: str | None = None


class NotChecked(GradeFailure):
    """A check that has no evidence because another check failed first.

    ``needs`` is that other hidden test's name: the grader (:mod:`autograder.judge`)
    says "not checked" with its title, so the cause is told once, by the check that
    observed it, and not again by each check it stopped."""

    def __init__(self, checked: str, expected: str, needs: str, why: str) -> None:
        self.checked, self.expected, self.needs, self.why = checked, expected, needs, why
        super().__init__(f"Checked: {checked}\nExpected: {expected}\nGot: not checked: {why}")

    def told(self, title: str) -> str:
        """The learner's message, naming the failed check by its ``title``."""
        return (f"Checked: {self.checked}\nExpected: {self.expected}\n"
                f"Got: not checked: \"{title}\" failed (it says what was observed), and {self.why}")


def fail(checked: object, expected: object, got: object, hint: object = None,
         row: str | None = None) -> NoReturn:
    """Raise :class:`GradeFailure` with a four-part plain-words message.

    ``row``: the id of the requirement row (:mod:`autograder.requirements`) the
    observations show violated, when the check grades several; the feedback names it."""
    lines = [f"Checked: {checked}", f"Expected: {expected}", f"Got: {got}"]
    if hint:
        lines.append(f"Hint: {hint}")
    failure = GradeFailure("\n".join(lines))
    failure.row = row
    raise failure


def not_checked(checked: str, expected: str, needs: str, why: str) -> NoReturn:
    """Raise :class:`NotChecked`: ``checked`` has no evidence because hidden test
    ``needs`` failed; ``why`` says, in words, why that failure leaves nothing to check."""
    raise NotChecked(checked, expected, needs, why)


def where_text(where: object) -> str:
    """Where a probe saw the learner's code raise, in words, or ''.

    ``where`` is :func:`autograder.exercises.common.learner_line`'s ``{"line": int,
    "code": str}`` (the line number within the cell), or None."""
    if not isinstance(where, dict) or not isinstance(where.get("line"), int):
        return ""  # none, or observations the grader cannot read: say no line
    code = str(where.get("code") or "")[:200]
    return f"line {where['line']} of your cell" + (f": `{code}`" if code else "")


def graded(points: int, name: str) -> Callable[[Test], Test]:
    """Mark a hidden test with its points and the name learners see."""

    def mark(fn: Test) -> Test:
        fn.points = points  # type: ignore[attr-defined]  # read by Exercise.tests
        fn.title = name  # type: ignore[attr-defined]
        return fn

    return mark

"""The LMS's tables (LTI 1.3): who each LMS member is (``lti_people``), the course's
pinned LMS context and endpoints (``lti_context``) and each exercise's line item
(``lti_lineitems``). What they mean to the course: :mod:`autograder.service.lms.roster`
and :mod:`autograder.service.lms.outbox`."""
from sqlalchemy import delete, or_, select, update

from autograder.service.store.passback import DUE_AGAIN
from autograder.service.store.rows import Source
from autograder.service.store.schema import lti_context, lti_lineitems, lti_people, passback


def remember_person(store, learner, values, launched):
    """Write LMS member ``learner``'s row (``values``: ``issuer``, ``sub``, ``name``,
    ``roles`` as JSON text, ``seen_at``); ``launched`` sets its flag (never unset)."""
    c = lti_people.c
    values = dict(values, **({"launched": 1} if launched else {}))
    with store.engine.begin() as conn:
        if not conn.execute(update(lti_people).where(c.learner == learner)
                            .values(**values)).rowcount:
            conn.execute(lti_people.insert().values(learner=learner, **values))


def people(store):
    """Every LMS member's row: mappings of ``learner``, ``name``, ``roles`` (JSON text or
    None) and ``launched`` (0 or 1)."""
    c = lti_people.c
    with store._read() as conn:
        return conn.execute(select(c.learner, c.name, c.roles, c.launched)).mappings().all()


def context_values(store, names):
    """``{name: value}`` of the ``lti_context`` rows ``names`` that are set."""
    c = lti_context.c
    with store._read() as conn:
        return dict(conn.execute(select(c.name, c.value).where(c.name.in_(names))).all())


def remember_context(store, **values):
    """Keep the course's LMS endpoints and settings (``lineitems=...``, ``memberships=...``);
    an empty value is not kept."""
    c = lti_context.c
    with store.engine.begin() as conn:
        for name, value in values.items():
            if value and not conn.execute(update(lti_context).where(c.name == name)
                                          .values(value=value)).rowcount:
                conn.execute(lti_context.insert().values(name=name, value=value))


def pinned(store):
    """The LMS context id pinned in the database (str), or None."""
    with store._read() as conn:
        return conn.execute(select(lti_context.c.value).where(
            lti_context.c.name == "context_id")).scalar()


def pin(store, decide):
    """In one transaction: ``decide(pinned context id or None)`` says the context id the
    course serves (it raises to refuse, nothing changed); when that is another than the
    pinned one, it is pinned, and what another context brought (endpoints, line items)
    is dropped and every grade is due again, for the new course's gradebook. Raises the
    database's errors as they are (:class:`sqlalchemy.exc.IntegrityError` when another
    transaction pinned one at the same moment)."""
    c = lti_context.c
    with store.engine.begin() as conn:
        stored = conn.execute(select(c.value).where(c.name == "context_id")).scalar()
        wanted = decide(stored)
        if stored == wanted:
            return
        if stored is None:
            conn.execute(lti_context.insert().values(name="context_id", value=wanted))
        else:
            conn.execute(update(lti_context).where(c.name == "context_id").values(value=wanted))
        conn.execute(delete(lti_context).where(c.name.in_(("lineitems", "memberships"))))
        conn.execute(delete(lti_lineitems))
        conn.execute(update(passback).values(**DUE_AGAIN))


def remembered_item(store, exercise):
    """``(url, source)`` of the line item kept for ``exercise`` (source ``"lms"``: the
    LMS's own column, from a launch; None: the tool's), or None."""
    c = lti_lineitems.c
    with store._read() as conn:
        found = conn.execute(select(c.url, c.source).where(c.exercise == exercise)).first()
    return tuple(found) if found else None


def add_item(store, exercise, url):
    """Keep the tool's own line item ``url`` of ``exercise``."""
    with store.engine.begin() as conn:
        conn.execute(lti_lineitems.insert().values(exercise=exercise, url=url))


def forget_item(store, exercise, url):
    """The tool's line item ``url`` of ``exercise`` is gone from the LMS (404): forgotten,
    so the next post finds or creates it again. The LMS's own column is kept."""
    c = lti_lineitems.c
    with store.engine.begin() as conn:
        conn.execute(delete(lti_lineitems).where(c.exercise == exercise, c.url == url,
                                                 or_(c.source.is_(None), c.source != Source.LMS)))


def lms_line_item(store, exercise, url):
    """Grades of ``exercise`` go to the LMS's own line item ``url`` (the column an
    instructor made in the LMS, a launch's ``lineitem`` claim) instead of the tool's own;
    when that changes, each grade of the exercise is due again (to the new column)."""
    c = lti_lineitems.c
    with store.engine.begin() as conn:
        have = conn.execute(select(c.url, c.source).where(c.exercise == exercise)).first()
        if have is not None and tuple(have) == (url, Source.LMS):
            return
        if have is None:
            conn.execute(lti_lineitems.insert().values(exercise=exercise, url=url, source=Source.LMS))
        else:
            conn.execute(update(lti_lineitems).where(c.exercise == exercise).values(
                url=url, source=Source.LMS))
        conn.execute(update(passback).where(passback.c.exercise == exercise).values(
            **DUE_AGAIN))

"""Who the LMS's members are to the course: the ``lti_people`` table, and which LMS
course this course is (its pinned context, :func:`admit_context`).

A launch (the hub's LTI 1.3 sign-in) records its member as launched, under the hub user
name :func:`autograder.service.lms.lti_tool.user_name` made; the LMS's roster (NRPS,
:func:`refresh`) adds every member of the course, launched or not. The outbox posts a
learner's grade under their ``sub``; the class page lists the members who never launched.

One LMS course per course: a tool registered once for a whole LMS can be added by any
teacher to their own course under the same deployment id, so the launch's context (its
``context`` claim's ``id``) is pinned: ``LTI_CONTEXT_ID`` when set, else the first
instructor launch's (row ``context_id`` of ``lti_context``). Launches of any other
context are refused before anything is stored, and only launches of the pinned context
bring AGS and NRPS URLs.
"""
from __future__ import annotations

import json
import os
import re
import time
from urllib.parse import urlsplit

from sqlalchemy.exc import IntegrityError

from autograder import exercises
from autograder.service.lms.lti_tool import user_name
from autograder.service.store import lti

LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"


def remember(store, issuer, sub, name=None, roles=(), launched=False, now=None):
    """Record LMS member ``sub`` of ``issuer`` (their display ``name`` and LTI ``roles``);
    ``launched`` once they launched the tool (never unset). Their learner id."""
    learner, now = user_name(issuer, sub), time.time() if now is None else now
    lti.remember_person(store, learner, dict(issuer=issuer, sub=sub, name=name,
                                             roles=json.dumps(list(roles)), seen_at=now),
                        launched)
    return learner


def launched(store, claims, now=None):
    """Record the member of a verified launch (``claims``: its id_token's claims, as the
    hub's sign-in checked them) as launched, with the LMS's display name and roles; when
    the launch is of the pinned context (:func:`pinned_context`), keep the course's AGS
    line items and NRPS memberships URLs it brings and the LMS's own line item of the
    exercise it opens (:func:`autograder.service.store.lti.lms_line_item`). Their learner id
    (the hub user name).
    Raises KeyError for a launch without ``iss`` or ``sub``."""
    name = claims.get("name") or " ".join(
        n for n in (claims.get("given_name"), claims.get("family_name")) if n) or None
    learner = remember(store, claims["iss"], claims["sub"], name, claims.get(CLAIM + "roles") or (),
                       launched=True, now=now)
    if context_of(claims) is not None and context_of(claims) == pinned_context(store):
        ags = claims.get(AGS) if isinstance(claims.get(AGS), dict) else {}
        lti.remember_context(store, lineitems=ags.get("lineitems"),
                                memberships=(claims.get(NRPS) or {}).get("context_memberships_url"))
        exercise = exercise_of(claims.get(CLAIM + "target_link_uri"))
        if exercise and isinstance(ags.get("lineitem"), str) and ags["lineitem"]:
            lti.lms_line_item(store, exercise, ags["lineitem"])
    return learner


# -- the course's LMS context ------------------------------------------------------
class OtherCourse(ValueError):
    """A launch this course does not take for its context; the message says why."""


CONTEXT = CLAIM + "context"
EXERCISE_PAGE = re.compile(r"/services/course/book/exercises/([A-Za-z0-9_]+)\.html$")


def configured_context() -> str:
    """``LTI_CONTEXT_ID`` of the environment ("" when unset). Read here, not among
    :mod:`autograder.defaults`' settings: that file is an input of the book's drift
    report (scripts/drift.py), which an LMS setting has no bearing on."""
    return os.environ.get("LTI_CONTEXT_ID", "").strip()


def context_of(claims):
    """The ``id`` of a launch's context claim (str), or None when it has none."""
    context = claims.get(CONTEXT)
    found = context.get("id") if isinstance(context, dict) else None
    return found if isinstance(found, str) and found else None


def pinned_context(store, configured=""):
    """The context id this course serves: ``configured`` (``LTI_CONTEXT_ID``) when given,
    else the one pinned in the database (None while no instructor launched)."""
    return configured or lti.pinned(store)


def admit_context(store, claims, instructor, configured=""):
    """Check the context of a verified launch (``claims``) before anyone signs in: the
    pinned one's (see the module), or, while none is pinned, an instructor's
    (``instructor``: the launch has a course Instructor role), which pins it. Returns the
    context id; raises :class:`OtherCourse` for a launch without a context, of another
    context, or a learner's before any pin, and the database's errors as they are. A
    refused launch changes nothing stored."""
    got = context_of(claims)
    if got is None:
        raise OtherCourse("the launch names no LMS course (it has no context claim): open "
                          "the course from the LMS course it was added to")
    context = claims[CONTEXT]

    def decide(stored):  # the context the course serves, or OtherCourse
        wanted = configured or stored or (got if instructor else None)
        if wanted is None:
            raise OtherCourse("no instructor has opened this course from the LMS yet: "
                              "its instructor's first launch chooses the LMS course")
        if got != wanted:
            raise OtherCourse(
                f"this launch is from another LMS course ({context.get('title')!r}, "
                f"context {got!r}): this hub serves one LMS course, context {wanted!r}"
                + ("" if configured else " (pinned by its first instructor launch)"))
        return wanted

    for _ in range(2):  # a second pass when another launch pinned it at the same moment
        try:
            lti.pin(store, decide)
            return got
        except IntegrityError:
            continue
    raise OtherCourse("the course's LMS context changed during this launch: launch again")


def exercise_of(target):
    """The exercise whose page ``target`` (a launch's ``target_link_uri``) opens, or None
    (the course's own page, another page, an exercise not registered)."""
    found = EXERCISE_PAGE.search(urlsplit(target).path) if isinstance(target, str) else None
    return found.group(1) if found and found.group(1) in exercises.names() else None


def names(store):
    """``{learner: the LMS's display name}`` of every LMS member with one."""
    return {learner: who["name"] for learner, who in people(store).items() if who["name"]}


def people(store):
    """``{learner: {"name", "roles", "launched"}}`` of every LMS member known."""
    return {r["learner"]: {"name": r["name"], "roles": json.loads(r["roles"] or "[]"),
                           "launched": bool(r["launched"])}
            for r in lti.people(store)}


def refresh(store, client, issuer, memberships_url):
    """Read the course's members from the LMS (NRPS) into ``lti_people``; how many."""
    members = [m for m in client.members(memberships_url)
               if m.get("status", "Active") == "Active" and m.get("user_id")]
    for member in members:
        remember(store, issuer, member["user_id"], member.get("name"), member.get("roles", ()))
    return len(members)


def never_launched(store, submitted=()):
    """The class page's LMS source: ``{learner: {"name", "launched": False, "submitted"}}``
    for each LMS learner who never launched the tool (``submitted``: learner ids with a
    submission; a member who never launched has none, so it is False)."""
    return {learner: {"name": who["name"], "launched": False,
                      "submitted": learner in submitted}
            for learner, who in people(store).items()
            if not who["launched"] and (not who["roles"] or any(
                r.endswith("#Learner") or r == "Learner" for r in who["roles"]))}

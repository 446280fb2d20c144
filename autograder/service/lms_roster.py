"""Who the LMS's members are to the course: the ``lti_people`` table.

A launch (the hub's LTI 1.3 sign-in) records its member as launched, under the hub user
name :func:`autograder.service.lti_tool.user_name` made; the LMS's roster (NRPS,
:func:`refresh`) adds every member of the course, launched or not. The outbox posts a
learner's grade under their ``sub``; the class page lists the members who never launched.
"""
from __future__ import annotations

import json
import time

from sqlalchemy import select, update

from autograder.service import outbox
from autograder.service.lti_tool import user_name
from autograder.service.store import lti_people

LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"


def remember(store, issuer, sub, name=None, roles=(), launched=False, now=None):
    """Record LMS member ``sub`` of ``issuer`` (their display ``name`` and LTI ``roles``);
    ``launched`` once they launched the tool (never unset). Their learner id."""
    learner, now = user_name(issuer, sub), time.time() if now is None else now
    c = lti_people.c
    values = dict(issuer=issuer, sub=sub, name=name, roles=json.dumps(list(roles)), seen_at=now)
    with store.engine.begin() as conn:
        if launched:
            values["launched"] = 1
        if not conn.execute(update(lti_people).where(c.learner == learner)
                            .values(**values)).rowcount:
            conn.execute(lti_people.insert().values(learner=learner, **values))
    return learner


def launched(store, claims, now=None):
    """Record the member of a verified launch (``claims``: its id_token's claims, as the
    hub's sign-in checked them) as launched, with the LMS's display name and roles, and
    keep the course's AGS line items and NRPS memberships URLs it brings. Their learner id
    (the hub user name). Raises KeyError for a launch without ``iss`` or ``sub``."""
    name = claims.get("name") or " ".join(
        n for n in (claims.get("given_name"), claims.get("family_name")) if n) or None
    learner = remember(store, claims["iss"], claims["sub"], name, claims.get(CLAIM + "roles") or (),
                       launched=True, now=now)
    outbox.remember_context(store, lineitems=(claims.get(AGS) or {}).get("lineitems"),
                            memberships=(claims.get(NRPS) or {}).get("context_memberships_url"))
    return learner


def names(store):
    """``{learner: the LMS's display name}`` of every LMS member with one."""
    return {learner: who["name"] for learner, who in people(store).items() if who["name"]}


def people(store):
    """``{learner: {"name", "roles", "launched"}}`` of every LMS member known."""
    c = lti_people.c
    with store._read() as conn:
        rows = conn.execute(select(c.learner, c.name, c.roles, c.launched)).mappings().all()
    return {r["learner"]: {"name": r["name"], "roles": json.loads(r["roles"] or "[]"),
                           "launched": bool(r["launched"])} for r in rows}


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

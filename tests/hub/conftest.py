"""A real course hub for the tests: ``make hub`` as the README says, on free ports.

Runs as root only (the hub signs people in with PAM and runs each learner's
server as that learner's system user). The module creates system users of
its own (two learners, one instructor, each with a random password) in
system groups of its own, passed to the hub through the variables docs/deployment.md
lists, and removes them afterwards. The hub's state, the grading database and
a freshly released copy of the course live in a temporary folder. The hub and
its clients: tests/hub/running.py; the accounts: tests/hub/accounts.py.
"""
from __future__ import annotations

import os
import secrets

import pytest

from tests.hub.accounts import add_account, add_group, more_learners, remove_account, remove_group, remove_launched
from tests.hub.running import Signed, running_hub
from tests.lti.platform import COURSE, Platform


@pytest.fixture(scope="package")
def accounts():
    """System users and groups of this test run: ``{"ada", "bob", "ins"}`` -> Account."""
    if os.geteuid() != 0:
        pytest.skip("the class deployment tests run as root (PAM sign-in, one system user per "
                    "learner); CI runs as root")
    tag = secrets.token_hex(3)
    groups = {"learners": f"tl{tag}", "instructors": f"ti{tag}"}
    for group in groups.values():
        add_group(group)
    made = {}
    try:
        for role, group in (("ada", "learners"), ("bob", "learners"), ("ins", "instructors")):
            made[role] = add_account(f"{role}{tag}", groups[group])
        yield made, groups
    finally:
        for account in made.values():
            remove_account(account)
        for group in groups.values():
            remove_group(group)


@pytest.fixture(scope="package")
def class_of_30(accounts):
    """Thirty more learners: ``[Account]`` (see :func:`more_learners`)."""
    with more_learners(accounts, 30) as made:
        yield made


@pytest.fixture(scope="package")
def hub(accounts, released_course, tmp_path_factory):
    """The running hub (``make hub`` with free ports and this run's groups)."""
    with running_hub(accounts, released_course, tmp_path_factory.mktemp("hub")) as running:
        yield running


@pytest.fixture(scope="package")
def lti_platform():
    """An LMS on loopback (tests/lti/platform.py) for sign-in by launch; the hub's key set
    is not needed for launches (the platform signs, the hub checks)."""
    made = Platform(tool_jwks={"keys": []})
    yield made
    made.stop()


@pytest.fixture(scope="package")
def lti_hub(accounts, released_course, tmp_path_factory, lti_platform):
    """``make hub`` with ``HUB_AUTH=lti`` and the platform's registration, as docs/lti.md
    says; the platform knows the hub's login initiation and redirect URIs. The system users
    launches made are removed afterwards (:func:`remove_launched`)."""
    root = tmp_path_factory.mktemp("lti-hub")
    p = lti_platform
    with running_hub(accounts, released_course, root, HUB_AUTH="lti", LTI_ISSUER=p.url,
                     LTI_CLIENT_ID=p.client_id, LTI_AUTHORIZE_URL=p.url + "/authorize",
                     LTI_JWKS_URL=p.url + "/jwks", LTI_DEPLOYMENT_ID=p.deployment_id,
                     LTI_CONTEXT_ID=COURSE[0]) as running:  # any test may launch first
        p.register_tool_login(running.url("/hub/lti13/oauth_login"),
                              running.url("/hub/lti13/oauth_callback"))
        try:
            yield running
        finally:
            remove_launched(running)


@pytest.fixture(scope="package")
def domain_hub(accounts, released_course, tmp_path_factory):
    """``make hub`` at a real-looking domain, ``HUB_DOMAIN=hub.test`` (learners' servers on
    its subdomains), signing in with PAM; the tests put HTTPS in front (tls_front.py)."""
    with running_hub(accounts, released_course, tmp_path_factory.mktemp("domain-hub"),
                     HUB_DOMAIN="hub.test") as running:
        yield running


@pytest.fixture
def sign_in(hub, accounts):
    """``sign_in("ada")`` -> :class:`Signed` (a new session each call)."""
    made, _ = accounts
    return lambda role: Signed(hub, made[role])

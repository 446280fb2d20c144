"""An LTI 1.3 platform on loopback (tests/lti/platform.py), the tool's key and a course's
database (tests/lti/course.py) for the LMS tests."""
import pytest

from autograder.service.lms import lti_tool
from autograder.service.lms.ags import Client
from tests.lti.course import Course
from tests.lti.platform import Platform


@pytest.fixture(scope="session")
def tool_pem(tmp_path_factory):
    """The tool's private key, made as a deployment makes it (in a 0700 state folder)."""
    return lti_tool.private_key_pem(tmp_path_factory.mktemp("hub-state") / "lti-tool-key.pem")


@pytest.fixture
def platform(tool_pem):
    """A platform with this tool registered (its key set given at registration, as
    Canvas and Moodle also allow); stopped after the test."""
    made = Platform(tool_jwks=lti_tool.jwks(tool_pem))
    yield made
    made.stop()


@pytest.fixture
def registration(platform):
    return lti_tool.Registration(
        issuer=platform.url, client_id=platform.client_id, token_url=platform.token_url,
        lineitems_url=platform.url + "/lineitems", memberships_url=platform.url + "/memberships")


@pytest.fixture
def client(registration, tool_pem):
    return Client(registration, tool_pem, timeout=5.0)


@pytest.fixture
def course(tmp_path):
    return Course(tmp_path)

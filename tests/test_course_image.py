"""The course image's recipe and the workers' (deploy/image/) agree with the checkout: what
they install is pinned by the course, what they copy reaches the build (their ignore files
let it through) and is in the tests' key of the built images (tests/hub/swarm_cluster.py),
so a change to any of it builds them again; nothing a learner must not read reaches the
learners' image's build. Fast: files read (the images are built by the swarm tier, which
scans the built images too: tests/hub/test_swarm.py)."""
import re

import pytest

from autograder.exercises import private_folders
from tests.course import REPO
from tests.hub.swarm_cluster import IMAGE_INPUTS

IMAGE = REPO / "deploy" / "image"


def names(requirements: str) -> set[str]:
    """The distribution names a requirements file's text lists (lower case, ``-`` for ``_``)."""
    return {re.split(r"[\[=<>~! ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for line in requirements.splitlines() if line.strip() and not line.startswith(("#", "-"))}


def copied(dockerfile="Dockerfile") -> list[str]:
    """The checkout's paths the Dockerfile's COPY instructions take."""
    text = (IMAGE / dockerfile).read_text().replace("\\\n", " ")
    return [src for line in text.splitlines() if line.startswith("COPY ")
            for src in line.split()[1:-1] if not src.startswith("--")]


def allowed(dockerfile) -> list[str]:
    """The paths ``dockerfile``'s ignore file lets into the build (all else is ignored)."""
    return [line[1:].rstrip("/") for line in (IMAGE / f"{dockerfile}.dockerignore")
            .read_text().splitlines() if line.startswith("!")]


@pytest.mark.parametrize("requirements", ["requirements.txt", "worker-requirements.txt"])
def test_the_image_installs_only_what_the_course_pins(requirements):
    pinned = names((REPO / "requirements.txt").read_text())
    wanted = names((IMAGE / requirements).read_text())
    assert wanted and wanted <= pinned, wanted - pinned


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "worker.Dockerfile"])
def test_what_the_image_copies_reaches_the_build_and_its_key(dockerfile):
    sources = copied(dockerfile)
    assert sources and (dockerfile != "Dockerfile" or {
        "_build/html/_notebooks/lessons", "exercises/release"} <= set(sources))
    for src in sources:
        assert any(src == a or src.startswith(a + "/") for a in allowed(dockerfile)), src
        assert any(src == k or src.startswith(k + "/") for k in IMAGE_INPUTS), src


def test_no_hidden_test_or_solution_reaches_the_learners_image():
    """What the learners' image's build may read holds none of the hidden tests (every
    exercise's, registered or not), the exercises' sources (solutions) or the grader's
    service; the workers' image's build reads them."""
    private = [str(p.relative_to(REPO)) for p in private_folders()]
    private += ["exercises/source", "autograder/service", "autograder/exercises"]
    for path in allowed("Dockerfile"):
        assert not any(path == p or path.startswith(p + "/") or p.startswith(path + "/")
                       for p in private), path
    assert {"autograder", "exercises/source"} <= set(allowed("worker.Dockerfile"))

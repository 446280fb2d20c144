"""The course image's recipe (deploy/image/) agrees with the checkout: what it installs is
pinned by the course, what it copies reaches the build (its ignore file lets it through)
and is in the tests' key of a built image (tests/hub/swarm_cluster.py), so a change to
any of it builds the image again. Fast: files read (the image is built by the swarm tier)."""
import re

from tests.course import REPO
from tests.hub.swarm_cluster import IMAGE_INPUTS

IMAGE = REPO / "deploy" / "image"


def names(requirements: str) -> set[str]:
    """The distribution names a requirements file's text lists (lower case, ``-`` for ``_``)."""
    return {re.split(r"[\[=<>~! ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for line in requirements.splitlines() if line.strip() and not line.startswith(("#", "-"))}


def copied() -> list[str]:
    """The checkout's paths the Dockerfile's COPY instructions take."""
    text = (IMAGE / "Dockerfile").read_text().replace("\\\n", " ")
    return [src for line in text.splitlines() if line.startswith("COPY ")
            for src in line.split()[1:-1] if not src.startswith("--")]


def test_the_image_installs_only_what_the_course_pins():
    pinned = names((REPO / "requirements.txt").read_text())
    wanted = names((IMAGE / "requirements.txt").read_text())
    assert wanted and wanted <= pinned, wanted - pinned


def test_what_the_image_copies_reaches_the_build_and_its_key():
    allowed = [line[1:].rstrip("/") for line in
               (IMAGE / "Dockerfile.dockerignore").read_text().splitlines() if line.startswith("!")]
    sources = copied()
    assert "_build/html/_notebooks/lessons" in sources and "exercises/release" in sources
    for src in sources:
        assert any(src == a or src.startswith(a + "/") for a in allowed), src
        assert any(src == k or src.startswith(k + "/") for k in IMAGE_INPUTS), src

"""The course as ``make serve`` starts it (``scripts/serve.py``) for the browser tests:
the environment make's recipe gives it, and what it prints (:class:`Servers`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.course import REPO

WAIT_S = 600  # give-up time for servers to answer, not a timing assertion


class Servers:
    """The running course: its printed addresses, the token, the learner workspace."""

    def __init__(self, printed: dict[str, str]):
        site = urlsplit(printed["course site"])
        self.site = f"{site.scheme}://{site.netloc}/"
        self.query = site.query  # token, learner, and the moved JupyterLab and grading service
        self.token = parse_qs(site.query)["token"][0]
        self.learner = parse_qs(site.query)["learner"][0]
        lab = urlsplit(printed["learner JupyterLab"])
        self.jupyter = f"{lab.scheme}://{lab.netloc}"
        self.grader = printed["grading service"].split("/api/")[0]
        self.workspace = REPO / "_build" / "workspace"

    def url(self, rel: str) -> str:
        """The site page ``rel`` with the printed site URL's query."""
        return f"{self.site}{rel}?{self.query}"


def serve_environment(**ports: int) -> dict:
    """The environment make's serve recipe gives scripts/serve.py: the caller's, with the
    venv on PATH and the ports (README: PORT=9000 make serve); no token, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_TOKEN", "PYTHONPATH", "HOST", "PORT", "JUPYTER_PORT")
           and not k.startswith("GRADER_")}
    env.update({k: str(v) for k, v in ports.items()}, HOST="127.0.0.1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env

"""Every default of the course, in one place.

Ports, hosts, the learner-id pattern, the grading limits and the commands that
build the site and release an exercise are written here and nowhere else. They
reach

* the Makefile: ``python -m autograder.defaults NAME`` prints one (below);
* ``scripts/serve.py`` and ``scripts/jupyter_local.py`` (``make serve``),
  ``deploy/hub/jupyterhub_config.py`` (``make hub``);
* the grading service's options (``python -m autograder.service --help``), and
  the service answers the values it runs with at ``GET /api/config``;
* the pages: the site build writes :func:`for_pages` into
  ``_static/course-defaults.js`` (``book/_ext/course_run.py``), read by
  ``course-run.js`` and ``grader.js``;
* the notebooks' submit cell (``autograder/learner_submit.py``).

Standard library only, and nothing else of the package imported: under
``make hub`` this file is copied beside ``learner_submit.py`` into each
learner's home (``deploy/hub/learner_home.py``), where only those two exist.

Each setting that the environment can override is in :data:`ENVIRONMENT`,
keyed by its variable; :func:`setting` reads the environment first.
"""
from __future__ import annotations

import os
import sys

# -- where the servers listen ------------------------------------------------------
HOST = "127.0.0.1"
"""Interface every course server binds to (``HOST``); loopback: nothing is exposed."""
PORT = 8000
"""TCP port of the course site under ``make serve``; the hub's public port under ``make hub`` (``PORT``)."""
GRADER_PORT = 8001
"""TCP port of the grading service (``GRADER_PORT``)."""
JUPYTER_PORT = 8888
"""TCP port of the learner's JupyterLab under ``make serve`` (``JUPYTER_PORT``)."""
# Under make hub every fixed port is privileged (below the kernel's
# net.ipv4.ip_unprivileged_port_start, 1024): a learner's process can never listen
# there, also not while the hub, its proxy or a service restarts.
HUB_PORT = 80
"""The hub's public port under ``make hub`` (``PORT``; ``make serve`` uses :data:`PORT`)."""
HUB_API_PORT = 801
"""TCP port of JupyterHub's own API, on 127.0.0.1 (``HUB_API_PORT``)."""
PROXY_API_PORT = 802
"""TCP port of configurable-http-proxy's API, on 127.0.0.1 (``PROXY_API_PORT``)."""
HUB_GRADER_PORT = 803
"""The grading service's port behind the hub's proxy (``GRADER_PORT``; ``make serve``
uses :data:`GRADER_PORT`)."""
SITE_PORT = 804
"""TCP port of the course site as a hub service, behind the proxy, under ``make hub`` only (``SITE_PORT``)."""
HUB_DOMAIN = "localhost"
"""The hub's host name under ``make hub`` (``HUB_DOMAIN``): each learner's server is at
``<name>.HUB_DOMAIN``, an origin of its own (browsers resolve ``*.localhost`` to
loopback; a real deployment names a domain with wildcard DNS)."""

# -- who may submit ------------------------------------------------------------------
LEARNER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"
"""A learner id the grading service accepts: 1 to 64 characters, a letter or digit
first. Written in the syntax Python's ``re`` and JavaScript's ``RegExp`` share, so
the exercise pages check the same rule before sending."""

# -- the grading service's limits (python -m autograder.service) ---------------------
MAX_BYTES = 5 * 2**20
"""Largest request body the service accepts, in bytes (``GRADER_MAX_BYTES``)."""
RATE_COUNT = 10
"""Submissions one learner may make per window of :data:`RATE_SECONDS` (``GRADER_RATE``, ``count/seconds``)."""
RATE_SECONDS = 60.0
"""The rate limit's window, in seconds."""
MAX_PER_LEARNER = 3
"""Submissions of one learner waiting at once (``GRADER_MAX_PER_LEARNER``)."""
MAX_PER_CLIENT = 20
"""Submissions waiting from one client address; 0 = no cap (``GRADER_MAX_PER_CLIENT``)."""
MAX_QUEUE = 1000
"""Submissions waiting in all before new ones are refused with 503 (``GRADER_MAX_QUEUE``)."""
HEADER_TIMEOUT_S = 10.0
"""Seconds to send a request's headers, and that an idle connection is kept (``GRADER_HEADER_TIMEOUT``)."""
BODY_TIMEOUT_S = 60.0
"""Seconds to send a request's body (``GRADER_BODY_TIMEOUT``)."""
SERVICE_TIMEOUT_S = 20.0
"""Wall-clock seconds per submission in the service's sandbox (``GRADER_TIMEOUT``).
A correct exercise needs about 2 s (1.0 s on a quiet machine with JAX 0.12, benchmarks/README.md);
20 s leaves room for a machine loaded several times over, while a notebook that
never ends holds its slot for 20 s, not a minute."""
LEASE_S = 30.0
"""Seconds a claimed submission stays with its worker without renewal (``GRADER_LEASE``)."""
SLOT_BASE = 100
"""First sandbox slot of a grading process; as root a slot runs as uid 61000 + slot (``GRADER_SLOT_BASE``)."""

# -- the sandbox, for the service and the command line -------------------------------
CLI_TIMEOUT_S = 60.0
"""Wall-clock seconds per submission for ``python -m autograder`` (``--timeout``)."""
MEMORY_MIB = 4096
"""Address-space limit per submission, in MiB (``--memory-mib``, ``GRADER_MEMORY_MIB``)."""

RECORDED_RULES = ("best", "latest")
RECORDED = "best"
"""Which graded submission is a learner's grade (``GRADER_RECORDED``): ``best`` or
``latest`` (see ``autograder/service/recorded.py`` for why best is the default)."""

# -- the commands behind make book and make release ----------------------------------
SITE_BUILD = ("jupyter-book", "build", ".", "--warningiserror", "--nitpick", "--keep-going",
              "--builder", "html")
"""The strict site build, run at the repository root: warnings are errors, nitpicky
references, every page tried before failing (``make book``, the site tests)."""
RELEASE = ("nbgrader", "generate_assignment", "--force", "--log-level=ERROR")
"""nbgrader's release of one exercise, run in ``exercises/``; the exercise's name
follows (``make release``, the tests' released course, the benchmarks)."""

DRIFT_PYTHON = "/usr/bin/python3.11"
"""The interpreter ``make drift`` builds its throwaway venv with (Debian's, which needs
no download beyond the package registries); ``DRIFT_PYTHON=...`` picks another."""

ENVIRONMENT = {
    "HOST": HOST, "PORT": PORT, "GRADER_PORT": GRADER_PORT, "JUPYTER_PORT": JUPYTER_PORT,
    "HUB_API_PORT": HUB_API_PORT, "PROXY_API_PORT": PROXY_API_PORT, "SITE_PORT": SITE_PORT,
    "HUB_DOMAIN": HUB_DOMAIN,
    "GRADER_MAX_BYTES": MAX_BYTES, "GRADER_RATE": f"{RATE_COUNT}/{RATE_SECONDS:g}",
    "GRADER_MAX_PER_LEARNER": MAX_PER_LEARNER, "GRADER_MAX_PER_CLIENT": MAX_PER_CLIENT,
    "GRADER_MAX_QUEUE": MAX_QUEUE, "GRADER_HEADER_TIMEOUT": HEADER_TIMEOUT_S,
    "GRADER_BODY_TIMEOUT": BODY_TIMEOUT_S, "GRADER_TIMEOUT": SERVICE_TIMEOUT_S,
    "GRADER_MEMORY_MIB": MEMORY_MIB, "GRADER_LEASE": LEASE_S, "GRADER_SLOT_BASE": SLOT_BASE,
    "GRADER_RECORDED": RECORDED,
}
"""Environment variable -> its default, for every default the environment can change."""


def setting(name: str) -> str:
    """``$name``, else its default from :data:`ENVIRONMENT`, as text (as the environment
    holds it). Raises KeyError for a variable this module has no default for."""
    return os.environ.get(name, str(ENVIRONMENT[name]))


HUB_ENVIRONMENT = dict(ENVIRONMENT, PORT=HUB_PORT, GRADER_PORT=HUB_GRADER_PORT)
""":data:`ENVIRONMENT` as ``make hub`` reads it: the public and grading ports differ."""


def hub_setting(name: str) -> str:
    """:func:`setting` under ``make hub`` (defaults from :data:`HUB_ENVIRONMENT`)."""
    return os.environ.get(name, str(HUB_ENVIRONMENT[name]))


def hub_public_url() -> str:
    """Where browsers open the hub under ``make hub``: ``http://HUB_DOMAIN[:PORT]``
    (no port shown for HTTP's own, 80), each read from the environment first."""
    port = int(hub_setting("PORT"))
    return f"http://{hub_setting('HUB_DOMAIN')}" + ("" if port == 80 else f":{port}")


def grader_url(host: str | None = None) -> str:
    """The grading service's address under ``make serve``: ``http://HOST:GRADER_PORT``,
    each read from the environment first (``host`` given: that host instead)."""
    return f"http://{host or setting('HOST')}:{setting('GRADER_PORT')}"


def site_origin() -> str:
    """The course site's origin under ``make serve``: ``http://HOST:PORT`` (environment first)."""
    return f"http://{setting('HOST')}:{setting('PORT')}"


def site_build_argv(bin_dir: str | os.PathLike = "") -> list[str]:
    """:data:`SITE_BUILD` as a list, its program from ``bin_dir`` when given (a venv's ``bin/``)."""
    return [os.path.join(bin_dir, SITE_BUILD[0]), *SITE_BUILD[1:]]


def release_argv(exercise: str, bin_dir: str | os.PathLike = "") -> list[str]:
    """:data:`RELEASE` of ``exercise``, its program from ``bin_dir`` when given."""
    return [os.path.join(bin_dir, RELEASE[0]), *RELEASE[1:], exercise]


def for_pages() -> dict:
    """What the pages need (``window.COURSE_DEFAULTS``): the ports their scripts
    assume when a site URL names no other, and the learner-id pattern."""
    return {"host": HOST, "graderPort": GRADER_PORT, "jupyterPort": JUPYTER_PORT,
            "learnerPattern": LEARNER_PATTERN}


def _printable(name: str) -> str:
    value = ENVIRONMENT[name] if name in ENVIRONMENT else globals()[name]
    return " ".join(value) if isinstance(value, tuple) else str(value)


def main(argv: list[str]) -> int:
    """``python -m autograder.defaults NAME...``: each default on its own line; a
    command (``SITE_BUILD``, ``RELEASE``) as words joined by spaces, for make.
    NAME is an environment variable of :data:`ENVIRONMENT` or a constant here."""
    names = list(ENVIRONMENT) + [n for n in globals()
                                 if n.isupper() and n not in ENVIRONMENT and n != "ENVIRONMENT"]
    unknown = [n for n in argv if n not in names]
    if not argv or unknown:
        print(f"usage: python -m autograder.defaults NAME...; unknown: {' '.join(unknown)}; "
              f"names: {' '.join(names)}", file=sys.stderr)
        return 2
    for name in argv:
        print(_printable(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

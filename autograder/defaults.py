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

Every setting a person can change (its default, environment variables,
command-line flag, help, and whether ``GET /api/config`` shows it) is a row of
:data:`SETTINGS`; :func:`setting` reads the environment first, and
:mod:`autograder.options` makes the programs' options from the rows.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

# -- where the servers listen ------------------------------------------------------
HOST = "127.0.0.1"
"""Interface every course server binds to; loopback: nothing is exposed."""
PORT = 8000
"""TCP port of the course site under ``make serve`` (``make hub``: :data:`HUB_PORT`)."""
GRADER_PORT = 8001
"""TCP port of the grading service under ``make serve``."""
JUPYTER_PORT = 8888
"""TCP port of the learner's JupyterLab under ``make serve``."""
# Under make hub every fixed port is privileged (below the kernel's
# net.ipv4.ip_unprivileged_port_start, 1024): a learner's process can never listen
# there, also not while the hub, its proxy or a service restarts.
HUB_PORT = 80
"""The hub's public port under ``make hub`` (``PORT``; ``make serve`` uses :data:`PORT`)."""
HUB_API_PORT = 801
"""TCP port of JupyterHub's own API, on 127.0.0.1."""
PROXY_API_PORT = 802
"""TCP port of configurable-http-proxy's API, on 127.0.0.1."""
HUB_GRADER_PORT = 803
"""The grading service's port behind the hub's proxy (``GRADER_PORT``; ``make serve``
uses :data:`GRADER_PORT`)."""
SITE_PORT = 804
"""TCP port of the course site as a hub service, behind the proxy, under ``make hub`` only."""
HUB_DOMAIN = "localhost"
"""The hub's host name under ``make hub``: each learner's server is at
``<name>.HUB_DOMAIN``, an origin of its own (browsers resolve ``*.localhost`` to
loopback; a real deployment names a domain with wildcard DNS)."""

# -- who may submit ------------------------------------------------------------------
LEARNER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"
"""A learner id the grading service accepts: 1 to 64 characters, a letter or digit
first. Written in the syntax Python's ``re`` and JavaScript's ``RegExp`` share, so
the exercise pages check the same rule before sending."""

# -- the grading service's limits (python -m autograder.service) ---------------------
MAX_BYTES = 5 * 2**20
"""Largest request body the service accepts, in bytes."""
RATE_COUNT = 10
"""Submissions one learner may make per window of :data:`RATE_SECONDS`."""
RATE_SECONDS = 60.0
"""The rate limit's window, in seconds."""
MAX_PER_LEARNER = 3
"""Submissions of one learner waiting at once."""
MAX_PER_CLIENT = 20
"""Submissions waiting from one client address; 0 = no cap."""
MAX_QUEUE = 1000
"""Submissions waiting in all before new ones are refused with 503."""
MAX_HELD = 4
"""Polls (``?wait=``) of one learner the service holds at once; more are answered at once,
unheld, so a learner's client cannot tie up the service's or the proxy's connections."""
MAX_UPLOADS = 2
"""Submissions of one learner (of one client address without sign-in) being sent to the
service at once, each holding up to :data:`MAX_BYTES` of its memory; more are read and
dropped as they come, then answered 429."""
OTHER_BODY_BYTES = 64 * 2**10
"""Largest body of a request to any route but ``api/submissions`` (a lesson run is 1 KiB):
the HTTP server reads such a body into memory before its route runs, signed in or not."""
LEARNER_BYTES = 256 * 2**20
"""Bytes of stored notebooks one learner may hold in the service's database, every
submission counted (50 at the largest size, thousands of usual ones); 0 = no quota."""
HEADER_TIMEOUT_S = 10.0
"""Seconds to send a request's headers, and that an idle connection is kept."""
BODY_TIMEOUT_S = 60.0
"""Seconds to send a request's body."""
SERVICE_TIMEOUT_S = 20.0
"""Wall-clock seconds per submission in the service's sandbox.
A correct exercise needs about 2 s (0.98 s on a quiet machine with JAX 0.12, benchmarks/README.md);
20 s leaves room for a machine loaded several times over, while a notebook that
never ends holds its slot for 20 s, not a minute."""
LEASE_S = 30.0
"""Seconds a claimed submission stays with its worker without renewal."""
SLOT_BASE = 100
"""First sandbox slot of a grading process; as root a slot runs as uid 61000 + slot."""

# -- the sandbox, for the service and the command line -------------------------------
CLI_TIMEOUT_S = 60.0
"""Wall-clock seconds per submission for ``python -m autograder`` and Gradescope."""
COMPILE_CACHE = "/var/cache/jax-donation-course/compile"
"""The grader's compile cache folder (autograder/sandbox/compile_cache.py); empty: off.
Used only where grading runs as root and the folder and every one above it are root's
alone (elsewhere grading compiles everything, as with it off); outside the checkout, so
every checkout on the machine shares it, and under /var, which learners' processes see
as an empty mount. Grades are the same with it and without (docs/security.md)."""
MEMORY_MIB = 4096
"""Address-space limit per submission, in MiB (every grader)."""

# -- each learner's server under make hub --------------------------------------------
HUB_MEMORY_MIB = 2048
"""Memory of a learner's server, all its processes together (JupyterLab, kernels,
terminals, files in its /tmp and /dev/shm), in MiB. JupyterLab takes about 150 MiB and a
kernel that has run a lesson's JAX about 400 MiB: room for a few notebooks open at once."""
HUB_PROCESSES = 1024
"""Processes and threads of a learner's server. XLA's CPU client starts a few threads per
core in each kernel; 1024 leaves room for several kernels on a large machine."""
HUB_CPUS = 2.0
"""Cores' time a learner's server may use at most (0: no cap); besides, the servers share
the processor equally when it is busy."""
HUB_HOME_MIB = 1024
"""Size of each learner's home, in MiB (a file system of its own, see
``deploy/hub/learner_disk.py``; 0: the home as the system made it, unbounded)."""
HUB_MAX_HELD_PER_LEARNER = 64
"""Requests and websockets the hub's proxy holds at once for one person (the owner of the
hub token a request carries, whatever it is sent to); more are answered 429 at once.
JupyterLab holds one websocket per open notebook's kernel and per terminal, one for its
event stream, and at most 6 requests at once (a browser's limit per origin): ten
notebooks and five terminals are about 22, the course pages a few more."""
HUB_MAX_HELD_ANONYMOUS = 1024
"""Requests and websockets the hub's proxy holds at once that carry no hub token it knows
(sign-in, pages signed in by cookie), all together; when full, a newcomer ends the
oldest held longer than 2 s, else it is answered 503."""

RECORDED_RULES = ("best", "latest")
RECORDED = "best"
"""Which graded submission is a learner's grade: ``best`` or ``latest`` (see
``autograder/service/gradebook/recorded.py`` for why best is the default)."""

POINTS_DECIMALS = 2
"""Points as people read them (pages, the submit cell, the command line): rounded to this
many decimals by :func:`points_text`, the one rule; machine formats (JSON, CSV,
results.json, the LMS's scores) carry the unrounded number."""


def points_text(points: float) -> str:
    """``points`` as every view prints them: the exact value of the float rounded to
    :data:`POINTS_DECIMALS` decimals, a tie away from zero, trailing zeros dropped
    (``7.5``, ``8``, ``0.67`` for 2/3, ``0.13`` for 0.125); the same as JavaScript's
    ``Number(x.toFixed(2))``, which the course site's pages print (``book/_static/grader.js``).
    Raises TypeError for a value that is not a number."""
    from decimal import ROUND_HALF_UP, Decimal

    exact = Decimal(float(points)).quantize(Decimal(1).scaleb(-POINTS_DECIMALS), ROUND_HALF_UP)
    text = f"{exact:f}".rstrip("0").rstrip(".") if "." in f"{exact:f}" else f"{exact:f}"
    return "0" if text in ("-0", "") else text


HUB_AUTHS = ("pam", "lti")
"""How people sign in under ``make hub``: PAM (the machine's accounts, the default) or an
LTI 1.3 launch from a learning-management system (``deploy/hub/lti_sign_in.py``)."""

VISIBILITIES = ("visible", "after_published")
"""Gradescope visibilities a hidden test's entry may have for learners."""

# -- the course's virtual environment ----------------------------------------------
NOT_KEPT = ("rfc3987-syntax",)
"""Packages pip installs for requirements.txt that ``make venv`` removes again.
rfc3987-syntax comes with jsonschema's ``format-nongpl`` extra, which jupyter-events asks
for; its import compiles a Lark grammar, 1.5 s of CPU in every process that imports
jsonschema: through nbformat, every nbgrader command, the grader reading a notebook, the
grading service and its workers, and every Jupyter server (measured on 2 cores: ``import
nbformat`` 1.29 s -> 0.18 s, ``nbgrader --version`` 2.7 s -> 1.1 s). Without it jsonschema
leaves IRI formats unchecked, which nothing in the course relies on; ``pip check`` stays
clean (pip does not check an extra's packages)."""


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

CHECKOUT = Path(__file__).resolve().parent.parent
"""The course checkout this file is in: the one place that says where it is (every other
module, script, test and benchmark imports it; the course is installed editable, so this
file is always the checkout's). The grading service's database and course default to
places in it; in a learner's home, where no such setting is read, it means nothing."""


# -- the table of settings -----------------------------------------------------------
class Rate(NamedTuple):
    """A rate limit: ``count`` submissions per ``seconds``."""

    count: int  # type: ignore[assignment]  # the field's name says it best; tuple.count unused
    seconds: float

    def __str__(self):
        return f"{self.count}/{self.seconds:g}"


def rate(text: str) -> Rate:
    """``"10/60"`` as a :class:`Rate`; raises ArgumentTypeError (argparse's way of
    saying which option is wrong) for any other shape."""
    try:
        count, seconds = text.split("/")
        return Rate(int(count), float(seconds))
    except ValueError:
        raise argparse.ArgumentTypeError("must look like 10/60 (submissions/seconds)") from None


def cores(text: str) -> int:
    """``"cores"``: this machine's processor count; else the number ``text`` says."""
    return (os.cpu_count() or 1) if text == "cores" else int(text)


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: the option parsers (:mod:`autograder.options`),
    ``GET /api/config`` and the settings table of ``autograder/SERVICE.md`` are made from it.

    ``name`` is what ``python -m autograder.defaults NAME`` prints and :func:`setting`
    reads; ``env`` the environment variables that override ``default``, the first set
    one winning; ``flag`` its command-line option ("" for none); ``parse`` turns text
    (the command line's or the environment's) into its value; ``shown`` is its key in
    ``/api/config``'s ``limits`` ("" when not shown); ``default_text`` says the default
    in words where its value alone would not.
    """

    name: str
    default: object
    help: str
    env: tuple = ()
    flag: str = ""
    parse: Callable = str
    choices: tuple = ()
    shown: str = ""
    default_text: str = ""

    @property
    def dest(self) -> str:
        """Its attribute in parsed options: ``--max-bytes`` is ``max_bytes``."""
        return self.flag.lstrip("-").replace("-", "_")

    def said_default(self) -> str:
        """The default as ``--help`` and the docs say it."""
        if self.default_text:
            return self.default_text
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)


def _port(name, value, help, flag=""):
    return Setting(name, value, help, env=(name,), flag=flag, parse=int)


SETTINGS = (
    # where the servers listen
    Setting("HOST", HOST, "interface every course server binds to", env=("HOST",)),
    _port("PORT", PORT, "TCP port of the course site (make serve) or of the hub (make hub)"),
    _port("GRADER_PORT", GRADER_PORT, "TCP port of the grading service", flag="--port"),
    _port("JUPYTER_PORT", JUPYTER_PORT, "TCP port of the learner's JupyterLab under make serve"),
    _port("HUB_API_PORT", HUB_API_PORT, "TCP port of JupyterHub's own API, on 127.0.0.1"),
    _port("PROXY_API_PORT", PROXY_API_PORT, "TCP port of configurable-http-proxy's API"),
    _port("SITE_PORT", SITE_PORT, "TCP port of the course site as a hub service (make hub)"),
    Setting("HUB_DOMAIN", HUB_DOMAIN, "the hub's host name; learners' servers are at "
            "<name>.HUB_DOMAIN", env=("HUB_DOMAIN",)),
    Setting("HUB_STATE", str(CHECKOUT / ".hub-state"), "folder of the hub's database and "
            "cookie secret (make hub)", env=("HUB_STATE",), default_text=".hub-state in the checkout"),
    Setting("HUB_LEARNERS_GROUP", "course-learners", "system group whose members sign in "
            "to the hub as learners", env=("HUB_LEARNERS_GROUP",)),
    Setting("HUB_INSTRUCTORS_GROUP", "course-instructors", "system group whose members sign "
            "in to the hub as instructors", env=("HUB_INSTRUCTORS_GROUP",)),
    Setting("HUB_ADMINS", "", "comma-separated user names of the hub's admins (they see the "
            "class too)", env=("HUB_ADMINS",), default_text="none"),
    Setting("HUB_MEMORY_MIB", HUB_MEMORY_MIB, "MiB of memory of each learner's server, all "
            "its processes together (a process past it is killed: a kernel restarts)",
            env=("HUB_MEMORY_MIB",), parse=int),
    Setting("HUB_PROCESSES", HUB_PROCESSES, "processes and threads of each learner's server",
            env=("HUB_PROCESSES",), parse=int),
    Setting("HUB_CPUS", HUB_CPUS, "cores' time each learner's server may use at most (0: no "
            "cap; busy servers share the processor equally)", env=("HUB_CPUS",), parse=float),
    Setting("HUB_HOME_MIB", HUB_HOME_MIB, "MiB of each learner's home, a file system of its "
            "own (0: unbounded, the home as the system made it)", env=("HUB_HOME_MIB",),
            parse=int),
    Setting("HUB_MAX_HELD_PER_LEARNER", HUB_MAX_HELD_PER_LEARNER, "requests and websockets "
            "the hub's proxy holds at once for one person, by her hub token (more: 429 at "
            "once)", env=("HUB_MAX_HELD_PER_LEARNER",), parse=int),
    Setting("HUB_MAX_HELD_ANONYMOUS", HUB_MAX_HELD_ANONYMOUS, "requests and websockets the "
            "hub's proxy holds at once without a hub token it knows, all together",
            env=("HUB_MAX_HELD_ANONYMOUS",), parse=int),
    Setting("HUB_AUTH", "pam", "how people sign in to the hub (make hub): 'pam' with an "
            "account of the machine; 'lti' by a launch from the LMS (LTI_ISSUER, "
            "LTI_CLIENT_ID, LTI_AUTHORIZE_URL, LTI_JWKS_URL, LTI_DEPLOYMENT_ID), each member "
            "getting a system user on first launch, see deploy/hub/lti_sign_in.py",
            env=("HUB_AUTH",), choices=HUB_AUTHS),
    # make hub with learners' servers on a Docker Swarm (deploy/hub/swarm_spawner.py)
    Setting("HUB_SPAWNER", "local", "where learners' servers run (make hub): 'local', a "
            "process of her system user; 'swarm', a container on a Docker Swarm",
            env=("HUB_SPAWNER",), choices=("local", "swarm")),
    Setting("HUB_SWARM_HUB_IP", "", "the address of the hub's machine that the swarm's "
            "nodes reach (its API and the grading service listen there)",
            env=("HUB_SWARM_HUB_IP",), default_text="none: required with HUB_SPAWNER=swarm"),
    Setting("HUB_SWARM_DOCKER_HOST", "unix:///var/run/docker.sock", "a swarm manager's "
            "engine", env=("HUB_SWARM_DOCKER_HOST",)),
    Setting("HUB_SWARM_IMAGE", "course-server:latest", "the course image (deploy/image/), "
            "on every node", env=("HUB_SWARM_IMAGE",)),
    Setting("HUB_SWARM_HOMES", "", "folder of learners' homes, one each, on storage the "
            "nodes share", env=("HUB_SWARM_HOMES",), default_text="swarm-homes in HUB_STATE"),
    Setting("HUB_SWARM_NOFILE", 1024, "RLIMIT_NOFILE of a learner's server's processes",
            env=("HUB_SWARM_NOFILE",), parse=int),
    Setting("HUB_SWARM_NPROC", 4096, "RLIMIT_NPROC of the learner's uid on the node",
            env=("HUB_SWARM_NPROC",), parse=int),
    # the notebooks' submit cell (make serve and make hub set these for it)
    Setting("GRADER_LEARNER", "", "who the submit cell submits as", env=("GRADER_LEARNER",),
            default_text="the hub's user, else the operating-system user"),
    Setting("GRADER_URL", "", "where the submit cell sends a notebook", env=("GRADER_URL",),
            default_text="http://HOST:GRADER_PORT"),
    Setting("GRADER_TOKEN", "", "make serve's key to its grading service (--auth local), "
            "sent by its pages and submit cells", env=("GRADER_TOKEN",),
            default_text="a new random one at each make serve"),
    # the grading service and its workers
    Setting("GRADER_HOST", HOST, "interface the grading service listens on",
            env=("GRADER_HOST", "HOST"), flag="--host", default_text=f"HOST or {HOST}"),
    Setting("GRADER_DB", str(CHECKOUT / "grading.db"), "the database: a SQLite path or "
            "postgresql://user:password@host/dbname (shared by every process; nbgrader's "
            "gradebook lives there too)", env=("GRADER_DB",), flag="--db",
            default_text="grading.db in the checkout"),
    Setting("GRADER_COURSE", str(CHECKOUT / "exercises"), "nbgrader course folder (its "
            "gradebook.db with SQLite, and submitted/)", env=("GRADER_COURSE",), flag="--course",
            default_text="exercises/ in the checkout"),
    Setting("GRADER_RECORDED", RECORDED, "which graded submission is a learner's grade, in "
            "the gradebook, the CSV and the class view", env=("GRADER_RECORDED",),
            flag="--recorded", choices=RECORDED_RULES),
    Setting("GRADER_ORIGINS", None, "comma-separated origins allowed by CORS",
            env=("GRADER_ORIGINS",), flag="--origins", default_text="the course site on PORT"),
    Setting("GRADER_MAX_BYTES", MAX_BYTES, "largest request accepted, in bytes",
            env=("GRADER_MAX_BYTES",), flag="--max-bytes", parse=int, shown="max_bytes"),
    Setting("GRADER_RATE", Rate(RATE_COUNT, RATE_SECONDS), "submissions per learner per "
            "seconds, N/S", env=("GRADER_RATE",), flag="--rate", parse=rate, shown="rate"),
    Setting("GRADER_MAX_PER_LEARNER", MAX_PER_LEARNER, "a learner's submissions waiting",
            env=("GRADER_MAX_PER_LEARNER",), flag="--max-per-learner", parse=int,
            shown="max_per_learner"),
    Setting("GRADER_MAX_PER_CLIENT", MAX_PER_CLIENT, "submissions waiting from one client "
            "address (0: no cap, e.g. behind a proxy where every request has the proxy's "
            "address)", env=("GRADER_MAX_PER_CLIENT",), flag="--max-per-client", parse=int,
            shown="max_per_client"),
    Setting("GRADER_MAX_QUEUE", MAX_QUEUE, "submissions waiting before new ones get 503",
            env=("GRADER_MAX_QUEUE",), flag="--max-queue", parse=int, shown="max_queue"),
    Setting("GRADER_MAX_HELD", MAX_HELD, "a learner's polls held at once (?wait=); more are "
            "answered at once", env=("GRADER_MAX_HELD",), flag="--max-held", parse=int,
            shown="max_held"),
    Setting("GRADER_MAX_UPLOADS", MAX_UPLOADS, "a learner's submissions being sent at once, "
            "each holding up to GRADER_MAX_BYTES of memory; more get 429",
            env=("GRADER_MAX_UPLOADS",), flag="--max-uploads", parse=int, shown="max_uploads"),
    Setting("GRADER_LEARNER_BYTES", LEARNER_BYTES, "bytes of stored submissions per learner "
            "(0: no quota)", env=("GRADER_LEARNER_BYTES",), flag="--learner-bytes", parse=int,
            shown="learner_bytes"),
    Setting("GRADER_HEADER_TIMEOUT", HEADER_TIMEOUT_S, "seconds to send a request's headers, "
            "and that an idle connection is kept", env=("GRADER_HEADER_TIMEOUT",),
            flag="--header-timeout", parse=float),
    Setting("GRADER_BODY_TIMEOUT", BODY_TIMEOUT_S, "seconds to send a request's body",
            env=("GRADER_BODY_TIMEOUT",), flag="--body-timeout", parse=float),
    Setting("GRADER_JOBS", "cores", "submissions graded in parallel by this process (0: the "
            "API alone)", env=("GRADER_JOBS",), flag="--jobs", parse=cores,
            default_text="this machine's cores"),
    Setting("GRADER_SLOT_BASE", SLOT_BASE, "first sandbox slot (uid 61000+slot when root); "
            "keep it apart from other graders on the machine", env=("GRADER_SLOT_BASE",),
            flag="--slot-base", parse=int),
    Setting("GRADER_TIMEOUT", SERVICE_TIMEOUT_S, "seconds per submission in the sandbox",
            env=("GRADER_TIMEOUT",), flag="--timeout", parse=float, shown="timeout_s"),
    Setting("GRADER_MEMORY_MIB", MEMORY_MIB, "address-space limit per submission, in MiB",
            env=("GRADER_MEMORY_MIB",), flag="--memory-mib", parse=int, shown="memory_mib"),
    Setting("GRADER_LEASE", LEASE_S, "seconds a claimed submission stays with its worker "
            "without renewal (renewed every third); after that another worker grades it",
            env=("GRADER_LEASE",), flag="--lease", parse=float),
    Setting("GRADER_COMPILE_CACHE", COMPILE_CACHE, "folder of the grader's compile cache "
            "(root's, mode 0700; used only when grading runs as root; empty: off): every "
            "grader on the machine shares it; derived, so left out of backups",
            env=("GRADER_COMPILE_CACHE",)),
    Setting("GRADER_AUTH", "none", "'hub' when JupyterHub runs the service (make hub): "
            "learners are hub users, see autograder/service/api/auth.py; 'local' under make "
            "serve: its one learner, GRADER_LEARNER, for requests holding GRADER_TOKEN, see "
            "autograder/service/api/local_auth.py; 'none': the learner a request names",
            env=("GRADER_AUTH",), flag="--auth", choices=("none", "hub", "local")),
    # a learning-management system (LTI 1.3): grades back, its roster
    Setting("LTI_ISSUER", "", "the LMS's issuer (iss of its launches, e.g. "
            "https://canvas.instructure.com)", env=("LTI_ISSUER",), default_text="none"),
    Setting("LTI_CLIENT_ID", "", "the client id the LMS gave this tool", env=("LTI_CLIENT_ID",),
            default_text="none (no LMS)"),
    Setting("LTI_TOKEN_URL", "", "the LMS's OAuth 2 access-token URL (grades back, roster)",
            env=("LTI_TOKEN_URL",), default_text="none"),
    Setting("LTI_LINEITEMS_URL", "", "the course's AGS line items URL (its launches' "
            "lineitems claim)", env=("LTI_LINEITEMS_URL",), default_text="none"),
    Setting("LTI_MEMBERSHIPS_URL", "", "the course's NRPS memberships URL (its launches' "
            "context_memberships_url claim)", env=("LTI_MEMBERSHIPS_URL",), default_text="none"),
    Setting("LTI_AUTHORIZE_URL", "", "the LMS's OIDC authorization URL, where a launch "
            "sends the browser from the hub's login initiation (HUB_AUTH=lti)",
            env=("LTI_AUTHORIZE_URL",), default_text="none"),
    Setting("LTI_JWKS_URL", "", "the LMS's public key set (JWKS) URL, whose keys sign its "
            "launches (HUB_AUTH=lti)", env=("LTI_JWKS_URL",), default_text="none"),
    Setting("LTI_DEPLOYMENT_ID", "", "the deployment id the LMS gave this tool (its launches' "
            "deployment_id claim; HUB_AUTH=lti)", env=("LTI_DEPLOYMENT_ID",),
            default_text="none"),
    Setting("LTI_KEY_FILE", "", "the tool's "
            "private RSA key (PEM; made, mode 0600, when missing)", env=("LTI_KEY_FILE",),
            default_text="lti-tool-key.pem in HUB_STATE"),
    Setting("LTI_PRIVATE_KEY", "", "the tool's private RSA key itself (PEM), instead of "
            "LTI_KEY_FILE", env=("LTI_PRIVATE_KEY",), default_text="none"),
    # the command line and Gradescope
    Setting("CLI_JOBS", "cores", "parallel submissions", flag="--jobs", parse=cores,
            default_text="this machine's cores"),
    Setting("CLI_TIMEOUT", CLI_TIMEOUT_S, "seconds per submission", flag="--timeout",
            parse=float),
    Setting("CLI_MEMORY_MIB", MEMORY_MIB, "address-space limit per submission, in MiB",
            flag="--memory-mib", parse=int),
    Setting("GRADESCOPE_VISIBILITY", VISIBILITIES[0], "each hidden test's visibility for "
            "learners on Gradescope", env=("GRADESCOPE_VISIBILITY",), flag="--visibility",
            choices=VISIBILITIES),
)
"""Every setting of the course, each once."""

STORE = ("GRADER_DB", "GRADER_COURSE", "GRADER_RECORDED")
"""What every process of the service takes (the instructor's commands too)."""
GRADING = ("GRADER_JOBS", "GRADER_SLOT_BASE", "GRADER_TIMEOUT", "GRADER_MEMORY_MIB",
           "GRADER_LEASE")
"""What a process of the service that grades takes besides :data:`STORE`."""
WORKER = STORE + GRADING
"""The settings of ``python -m autograder.service.worker``."""
SERVICE = STORE + ("GRADER_HOST", "GRADER_PORT", "GRADER_ORIGINS", "GRADER_MAX_BYTES",
                   "GRADER_RATE", "GRADER_MAX_PER_LEARNER", "GRADER_MAX_PER_CLIENT",
                   "GRADER_MAX_QUEUE", "GRADER_MAX_HELD", "GRADER_MAX_UPLOADS",
                   "GRADER_LEARNER_BYTES",
                   "GRADER_HEADER_TIMEOUT",
                   "GRADER_BODY_TIMEOUT",
                   *GRADING, "GRADER_AUTH")
"""The settings of ``python -m autograder.service``, in ``--help``'s order."""
CLI = ("CLI_JOBS", "CLI_TIMEOUT", "CLI_MEMORY_MIB")
"""The grading settings of ``python -m autograder``."""
LTI = ("LTI_ISSUER", "LTI_CLIENT_ID", "LTI_TOKEN_URL", "LTI_LINEITEMS_URL",
       "LTI_MEMBERSHIPS_URL", "LTI_KEY_FILE", "LTI_PRIVATE_KEY", "LTI_AUTHORIZE_URL",
       "LTI_JWKS_URL", "LTI_DEPLOYMENT_ID")
"""The LMS's registration of this tool (environment only: the hub, the service and every
worker read the same variables; ``autograder/service/lms/lti_tool.py``)."""
GRADESCOPE = ("GRADESCOPE_VISIBILITY", "CLI_TIMEOUT", "CLI_MEMORY_MIB")
"""The settings of a Gradescope zip's build and its ``run_autograder``."""

BY_NAME = {s.name: s for s in SETTINGS}
ENVIRONMENT = {var: s.default for s in SETTINGS for var in s.env[:1]}
"""Environment variable -> its default, for every setting the environment can change."""
HUB_DEFAULTS = {"PORT": HUB_PORT, "GRADER_PORT": HUB_GRADER_PORT}
"""The settings whose defaults ``make hub`` changes."""
HUB_ENVIRONMENT = dict(ENVIRONMENT, **HUB_DEFAULTS)
""":data:`ENVIRONMENT` as ``make hub`` reads it: the public and grading ports differ."""


def environment_text(name: str) -> str | None:
    """The text the environment gives setting ``name`` (its first variable that is
    set), else None. Raises KeyError for a name :data:`SETTINGS` does not hold."""
    for var in BY_NAME[name].env:
        if var in os.environ:
            return os.environ[var]
    return None


def setting(name: str) -> str:
    """Setting ``name`` as text: the environment's, else its default. Raises KeyError
    for a name :data:`SETTINGS` does not hold."""
    text = environment_text(name)
    return text if text is not None else str(BY_NAME[name].default)


def hub_setting(name: str) -> str:
    """:func:`setting` under ``make hub`` (defaults from :data:`HUB_ENVIRONMENT`)."""
    text = environment_text(name)
    return text if text is not None else str(HUB_ENVIRONMENT[name])


def hub_public_url() -> str:
    """Where browsers open the hub under ``make hub``: ``http://HUB_DOMAIN[:PORT]``
    (no port shown for HTTP's own, 80), each read from the environment first."""
    port = int(hub_setting("PORT"))
    return f"http://{hub_setting('HUB_DOMAIN')}" + ("" if port == 80 else f":{port}")


def lti_key_file() -> Path:
    """Where the tool's private LTI key is: ``LTI_KEY_FILE``, else ``lti-tool-key.pem`` in
    the hub's state folder (``HUB_STATE``, mode 0700), each read from the environment first."""
    return Path(setting("LTI_KEY_FILE") or Path(setting("HUB_STATE")) / "lti-tool-key.pem")


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
    assume when a site URL names no other, the learner-id pattern, and the grading
    rule the service starts with by default (said as the default when no service answers)."""
    return {"host": HOST, "graderPort": GRADER_PORT, "jupyterPort": JUPYTER_PORT,
            "learnerPattern": LEARNER_PATTERN, "recorded": RECORDED}


def _printable(name: str) -> str:
    value = BY_NAME[name].default if name in BY_NAME else globals()[name]
    return " ".join(value) if isinstance(value, tuple) and not isinstance(value, Rate) else str(value)


def settings_table(names) -> str:
    """The Markdown table of settings ``names`` (variable, option, default, what it is),
    as ``autograder/SERVICE.md`` shows it (a test keeps that page equal to this)."""
    rows = ["| variable | option | default | what it sets |", "| --- | --- | --- | --- |"]
    for setting_ in (BY_NAME[n] for n in names):
        choices = f" ({', '.join(setting_.choices)})" if setting_.choices else ""
        rows.append(f"| `{setting_.env[0]}` | `{setting_.flag}` | {setting_.said_default()} | "
                    f"{setting_.help}{choices} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    """``python -m autograder.defaults NAME...``: each default on its own line; a
    command (``SITE_BUILD``, ``RELEASE``) as words joined by spaces, for make.
    NAME is a setting of :data:`SETTINGS` or a constant here.
    ``python -m autograder.defaults --service-table`` prints :func:`settings_table` of
    the service's settings."""
    if argv == ["--service-table"]:
        print(settings_table(SERVICE), end="")
        return 0
    names = list(BY_NAME) + [n for n in globals() if n.isupper() and n not in BY_NAME
                             and n not in ("ENVIRONMENT", "HUB_ENVIRONMENT", "BY_NAME")]
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

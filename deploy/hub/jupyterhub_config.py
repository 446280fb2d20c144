"""JupyterHub configuration for a class: ``make hub`` (see docs/deployment.md, "For a class").

One machine: the hub and configurable-http-proxy (``node_modules``, from
package.json) on http://HOST:PORT; behind the proxy

* ``/services/course/``: the course site, signed-in users only (``site.py``);
* ``/services/grader/``: the grading service (``python -m autograder.service
  --auth hub``), with the grader and the gradebook ``make serve`` uses;
* ``/user/<name>/``: each learner's JupyterLab (``course_spawner.py``), as the
  learner's own system user when the hub runs as root; with ``HUB_SPAWNER=swarm`` a
  container of the course image on a Docker Swarm instead (``swarm_spawner.py``).

Sign-in (``HUB_AUTH``): ``lti``, a launch from the LMS (``lti_sign_in.py``), or by
default ``pam``, JupyterHub's PAMAuthenticator (the machine's accounts). Learners are
the members of the system group ``$HUB_LEARNERS_GROUP`` (default
``course-learners``), instructors of ``$HUB_INSTRUCTORS_GROUP`` (default
``course-instructors``), who also become the hub group ``instructors`` the
grading service shows the class to. No password or secret is in this file:
the hub's cookie secret and database are made in ``$HUB_STATE`` (default
``.hub-state/``, mode 0700, gitignored), so a restart keeps every sign-in.

One origin per learner (JupyterHub's ``subdomain_host``): the hub and the
course's services are at ``http://HUB_DOMAIN:PORT`` (default
``http://localhost``), each learner's server at
``http://<name>.HUB_DOMAIN:PORT/user/<name>/``. What a learner's server serves
(a file in their home, an extension they installed) runs on their own origin:
it cannot read the hub's or the course's cookies, pages or tokens.

Ports (environment; defaults in ``autograder/defaults.py``, ``HUB_ENVIRONMENT``):
``PORT`` (public), ``HOST``, ``HUB_API_PORT`` (the hub's own API),
``PROXY_API_PORT`` (the proxy's API), ``GRADER_PORT``, ``SITE_PORT`` (the course
site behind the proxy). All are privileged by default, so no learner's process
can listen on one, not even while its server restarts; a port chosen at or above
``net.ipv4.ip_unprivileged_port_start`` is warned about at start.
"""
import asyncio
import grp
import os
import re
import sys
from pathlib import Path

from jupyterhub.utils import subdomain_hook_idna

from autograder.defaults import CHECKOUT as REPO, hub_public_url, hub_setting as setting
from autograder.service.commands import hub_admin
from deploy.hub import bodies, course_spawner, proxy

c = get_config()  # noqa: F821
bodies.limit()  # the hub reads small bodies only (deploy/hub/bodies.py)

env = os.environ.get
HOST = setting("HOST")
PORT = int(setting("PORT"))
PUBLIC = hub_public_url()  # what browsers open
STATE = Path(setting("HUB_STATE")).resolve()
STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
STATE.chmod(0o700)
LEARNERS = setting("HUB_LEARNERS_GROUP")
INSTRUCTORS = setting("HUB_INSTRUCTORS_GROUP")
PYTHON = sys.executable  # the venv's interpreter (reachable by learners: course_spawner)

# -- the hub, its proxy, its state ---------------------------------------------
c.JupyterHub.bind_url = f"http://{HOST}:{PORT}"
c.JupyterHub.subdomain_host = PUBLIC
_LOOPBACK = re.compile(r"^(localhost|.*\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$")


def _origin_of(name, domain, kind):
    """A learner's server on ``<name>.<domain>`` (JupyterHub's own naming); the course's
    two services stay on the hub's origin, where no learner content is ever served."""
    return domain if kind == "service" else subdomain_hook_idna(name, domain, kind)


c.JupyterHub.subdomain_hook = _origin_of
# On a real domain a page on <name>.HUB_DOMAIN can set cookies for HUB_DOMAIN itself, which
# the browser sends to the hub and the services: eve's own login cookie planted in ann's
# browser would sign ann in as eve (login CSRF by cookie tossing). ``__Host-`` cookies (the
# hub's login cookie, the services' sessions, each learner server's) come only from their
# own host, and only over HTTPS (Secure): so on a real domain the hub needs HTTPS in front.
# On the loopback (``localhost``, one machine, plain HTTP) they stay unprefixed.
REAL_DOMAIN = not _LOOPBACK.match(setting("HUB_DOMAIN").lower())
c.JupyterHub.cookie_host_prefix_enabled = REAL_DOMAIN
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(setting("HUB_API_PORT"))
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = proxy.command()  # configurable-http-proxy, kept alive to servers
# the proxy (started with the hub's environment) caps what it holds per person, asking the
# hub whose each token is (proxy_keepalive.mjs); on a real domain it reads __Host- cookies only
os.environ.update(HUB_MAX_HELD_PER_LEARNER=str(int(setting("HUB_MAX_HELD_PER_LEARNER"))),
                  HUB_MAX_HELD_ANONYMOUS=str(int(setting("HUB_MAX_HELD_ANONYMOUS"))),
                  COURSE_PROXY_WHOAMI=f"http://127.0.0.1:{setting('HUB_API_PORT')}/hub/api/user",
                  COURSE_PROXY_COOKIE_PREFIX="__Host-" if REAL_DOMAIN else "",
                  # the proxy closes a pooled idle connection before the grading service
                  # would (proxy_keepalive.mjs says why)
                  COURSE_PROXY_IDLE_MS=str(int(float(setting("GRADER_HEADER_TIMEOUT")) * 500)))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{setting('PROXY_API_PORT')}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.proxy_class = proxy.CourseProxy  # signals a leftover proxy only if it is ours

# -- sign-in -------------------------------------------------------------------
AUTH = setting("HUB_AUTH")
LTI_NEEDS = ("LTI_ISSUER", "LTI_CLIENT_ID", "LTI_AUTHORIZE_URL", "LTI_JWKS_URL", "LTI_DEPLOYMENT_ID")
if AUTH == "pam":
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.allowed_groups = {LEARNERS, INSTRUCTORS}
elif AUTH == "lti":
    # a launch from the LMS (lti_sign_in.py); its system user is made on the first launch
    missing = [n for n in LTI_NEEDS if not setting(n)]
    if missing:
        sys.exit(f"==> HUB_AUTH=lti needs the LMS's registration: set {', '.join(missing)}")
    from deploy.hub import lti_sign_in
    c.JupyterHub.authenticator_class = lti_sign_in.LTISignIn
    c.LTISignIn.issuer = setting("LTI_ISSUER")
    c.LTISignIn.client_id = {setting("LTI_CLIENT_ID")}
    c.LTISignIn.authorize_url = setting("LTI_AUTHORIZE_URL")
    c.LTISignIn.jwks_endpoint = setting("LTI_JWKS_URL")
    c.LTISignIn.deployment_id = setting("LTI_DEPLOYMENT_ID")
    # the LMS course; unset: the first instructor launch pins it
    c.LTISignIn.context_id = lti_sign_in.lms_roster.configured_context()
    c.LTISignIn.nonce_file = str(STATE / "lti-nonces.json")  # a replay after a restart: refused
    c.LTISignIn.grading_db = setting("GRADER_DB")  # where a launch records its member
else:
    sys.exit(f"==> HUB_AUTH={AUTH}: say pam or lti")
c.Authenticator.manage_groups = True  # hub groups follow the system groups or the LMS's roles


async def _groups(authenticator, handler, authentication):
    """The hub groups of a user who signed in (the one place they are decided): under PAM
    'instructors' for members of the system group; under LTI the launch's roles
    (``lti_sign_in.hub_groups``: 'instructors', 'learners'), and the grading service's
    LMS roster learns the member (``LTISignIn.record_launch``). A dropped learner's
    sign-in or launch ends here, on the hub's error page (``members drop``)."""
    await asyncio.to_thread(_refuse_dropped, authentication["name"])
    if AUTH == "lti":
        launch = authentication.get("auth_state") or {}
        authentication["groups"] = lti_sign_in.hub_groups(launch.get(lti_sign_in.ROLES))
        await authenticator.record_launch(launch)
        return authentication
    name = authentication["name"]
    try:
        members = grp.getgrnam(INSTRUCTORS).gr_mem
    except KeyError:
        members = []
    authentication["groups"] = ["instructors"] if name in members else []
    return authentication


c.Authenticator.post_auth_hook = _groups
_dropped_db = []  # the grading database, opened on the first sign-in


def _refuse_dropped(name):
    """HTTPError 403 when ``name`` was dropped from the course (autograder/service/store/withdrawn.py);
    503 while the grading database cannot say (nobody is let in unchecked)."""
    from sqlalchemy.exc import SQLAlchemyError
    from tornado.web import HTTPError

    from autograder.service.api.auth import refuse_sign_in
    from autograder.service.store import Store
    try:
        if not _dropped_db:
            _dropped_db.append(Store(setting("GRADER_DB")))
        refuse_sign_in(_dropped_db[0], name)
    except SQLAlchemyError as exc:
        print(f"==> sign-in of {name} refused: the grading database cannot be read ({exc})",
              file=sys.stderr, flush=True)
        raise HTTPError(503, "the course's database cannot be read right now: try again "
                        "in a minute") from None
# Hub admins (comma-separated user names) see the class too, and the hub's admin page.
c.Authenticator.admin_users = {n.strip() for n in setting("HUB_ADMINS").split(",") if n.strip()}

# -- who may do what (JupyterHub scopes) -----------------------------------------
USER_SCOPES = [f"{scope}!user" for scope in (
    "servers", "access:servers", "read:servers", "start:servers", "delete:servers",
    "read:users", "read:users:name", "read:users:groups", "read:users:activity",
    "users:activity", "read:tokens", "read:shares", "users:shares", "read:users:shares")]
c.JupyterHub.load_roles = [
    # every user: their own server, and the course's two services. JupyterHub's "self" less
    # "tokens": each token a user mints is a row of the hub's database for as long as she
    # likes, so a learner would fill the hub's disk at her pace (tokens she needs are made
    # for her: her server's, the services' by OAuth)
    {"name": "user", "scopes": [*USER_SCOPES, "access:services!service=course",
                                "access:services!service=grader"]},
    # the grading service asks the hub who is an admin (admins are instructors too)
    # and who its users are (the class page's roster)
    {"name": "grader-service", "services": ["grader"], "scopes": ["read:users", "list:users"]},
    # the instructor's members command (autograder/service/commands/members.py): a dropped learner's or a
    # demoted instructor's server stopped and hub user deleted, with every token of theirs
    {"name": "roster-command", "services": ["roster"], "scopes": ["admin:servers", "delete:users"]},
]

# -- the learners' servers -----------------------------------------------------
c.JupyterHub.spawner_class = course_spawner.CourseSpawner
c.Spawner.cmd = [PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 180
# $JUPYTERHUB_API_TOKEN in the learner's kernels: the submit cell sends it to the grader
c.Spawner.server_token_scopes = ["users:activity!user", "access:services!service=grader"]
# The course pages (on the hub's origin) run lesson code on the learner's server (its
# own origin) with the page's hub token: in an Authorization header, and for the
# kernel's WebSocket in its URL (browsers' WebSockets can send no header, and
# Chromium sends no Sec-Fetch-Mode that JupyterHub would look for instead).
c.Spawner.args = [f"--ServerApp.allow_origin={PUBLIC}"]
c.Spawner.environment = {
    "JUPYTERHUB_ALLOW_TOKEN_IN_URL": "1",
    "GRADER_URL": f"{PUBLIC}/services/grader",
    "JAX_PLATFORMS": "cpu",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "PATH": f"{Path(PYTHON).parent}:/usr/local/bin:/usr/bin:/bin",
    "PYTHONPATH": course_spawner.course_lib,  # the submit cell's module
}
c.Spawner.env_keep = ["LANG", "LC_ALL"]
# HUB_SPAWNER=swarm: each server a container on a Docker Swarm (swarm_spawner.py), with
# the same limits; the hub's API and the grading service then listen where nodes reach them.
if setting("HUB_SPAWNER") not in ("local", "swarm"):
    sys.exit(f"==> HUB_SPAWNER={setting('HUB_SPAWNER')}: say local or swarm")
SWARM = setting("HUB_SPAWNER") == "swarm"
if SWARM:
    from deploy.hub import swarm_spawner
    GRADER_HOST = swarm_spawner.configure(c, STATE, setting("GRADER_PORT"))
    os.environ["COURSE_PROXY_WHOAMI"] = f"http://{GRADER_HOST}:{setting('HUB_API_PORT')}/hub/api/user"
    c.Spawner.mem_limit = f"{int(setting('HUB_MEMORY_MIB'))}M"
    c.Spawner.cpu_limit = float(setting("HUB_CPUS")) or None
    c.CourseSwarmSpawner.pids = int(setting("HUB_PROCESSES"))
elif os.geteuid() == 0:
    # Each server in a network namespace of its own (course_spawner, learner_net): it
    # listens on a UNIX socket, and reaches the hub and the grader through two more, in
    # a folder of this hub's own (one per state folder: test hubs run side by side).
    SOCKETS = course_spawner.learner_net.socket_folder(STATE)
    c.CourseSpawner.socket_root = str(SOCKETS)
    c.CourseSpawner.grader_address = f"127.0.0.1:{setting('GRADER_PORT')}"
    c.CourseSpawner.hub_connect_url = course_spawner.learner_net.unix_url(SOCKETS / "hub.sock")
    c.Spawner.environment["GRADER_SOCKET"] = str(SOCKETS / "grader.sock")
    # each server's limits (course_spawner, learner_disk), all its processes together
    c.CourseSpawner.memory_mib = int(setting("HUB_MEMORY_MIB"))
    c.CourseSpawner.processes = int(setting("HUB_PROCESSES"))
    c.CourseSpawner.cpus = float(setting("HUB_CPUS"))
    c.CourseSpawner.home_mib = int(setting("HUB_HOME_MIB"))
    c.CourseSpawner.home_images = str(STATE / "homes")

# -- the course's services -----------------------------------------------------
GRADER_HOST = GRADER_HOST if SWARM else "127.0.0.1"  # where learners' servers reach it
_service_env = {"PATH": env("PATH", "/usr/bin:/bin"), "HOME": env("HOME", "/root"),
                "JAX_PLATFORMS": "cpu", "LANG": "C.UTF-8",
                # their session cookies __Host- too (HubOAuth reads this; the hub passes
                # its setting to learners' servers itself, not to services)
                "JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED": str(int(REAL_DOMAIN))}
c.JupyterHub.services = [
    {
        "name": "course",
        "url": f"http://127.0.0.1:{setting('SITE_PORT')}",
        "command": [PYTHON, str(REPO / "deploy" / "hub" / "site.py")],
        "timeout": 120,
        "cwd": str(REPO),
        "environment": _service_env,
        "display": True,
        "oauth_no_confirm": True,
        # the token the pages get: start and use the user's own server, submit
        "oauth_client_allowed_scopes": ["servers!user", "access:servers!user",
                                        "access:services!service=grader"],
    },
    {
        "name": "grader",
        "url": f"http://{GRADER_HOST}:{setting('GRADER_PORT')}",
        "command": [PYTHON, "-m", "autograder.service", "--auth", "hub", "--host", GRADER_HOST,
                    "--port", setting("GRADER_PORT"), "--origins", ""],
        "cwd": str(REPO),
        # the grading service's settings, and the LMS's registration (grades back; its
        # key, when not given in LTI_PRIVATE_KEY, is made in the hub's state folder)
        "environment": dict(_service_env, HUB_STATE=str(STATE), **{
            k: v for k, v in os.environ.items()
            if k.startswith(("GRADER_", "LTI_")) and k != "GRADER_PORT"}),
        "display": True,
        "oauth_no_confirm": True,
        "timeout": 600,  # seconds to start: it imports JAX before it listens (slow when loaded)
    },
]
# The hub token of the instructor's members command (autograder/service/commands/members.py,
# hub_admin.py): a service named roster, with no server of its own.
c.JupyterHub.services.append({"name": "roster", "api_token": hub_admin.service_token(STATE)})
if AUTH == "pam":  # the class is the learners group, signed in or not (roster.group_learners)
    next(s for s in c.JupyterHub.services if s["name"] == "grader")["environment"].update(
        HUB_LEARNERS_GROUP=LEARNERS, HUB_INSTRUCTORS_GROUP=INSTRUCTORS)
# The hub's admins are instructors to the grading service without asking the hub (the
# gradebook thread and the LMS sender leave their test submissions out: roster.staff).
next(s for s in c.JupyterHub.services if s["name"] == "grader")["environment"]["HUB_ADMINS"] = \
    setting("HUB_ADMINS")
# The hub's home page opens the course site.
c.JupyterHub.default_url = "/services/course/"


def _unprivileged(ports):
    """The ``{name: port}`` a learner's process could listen on (at or above the
    kernel's first unprivileged port)."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        first = 1024
    return {name: port for name, port in ports.items() if port >= first}


_open = _unprivileged({n: int(setting(n)) for n in ("PORT", "HUB_API_PORT", "PROXY_API_PORT",
                                                    "GRADER_PORT", "SITE_PORT")})
if _open:
    print(f"==> WARNING: {', '.join(f'{n}={p}' for n, p in _open.items())}: a learner's process "
          "can listen on these ports while the server behind one restarts (keep them below "
          "1024, the defaults)", file=sys.stderr, flush=True)

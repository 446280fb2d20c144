"""The learner's local JupyterLab: its workspace, its configuration, and the server.

``make book`` runs ``python scripts/jupyter_local.py workspace`` after the site
build; ``make serve`` (scripts/serve.py) runs ``python scripts/jupyter_local.py serve``.

The workspace (``_build/workspace/``, gitignored) holds

* ``lessons/<lesson>.ipynb``: each lesson as a notebook (the site build writes
  them to ``_build/html/_notebooks/lessons/``, the same files the pages offer for
  download);
* ``<exercise>/<exercise>.ipynb``: each released exercise notebook
  (``exercises/release/``, made by ``make release``), laid out as nbgrader lays
  out a fetched assignment.

Regenerating never overwrites a notebook the learner has changed: a file is
replaced only while it still matches what was last written there.

The server is JupyterLab with nbgrader's Validate button and none of nbgrader's
menu (the assignment list needs an nbgrader exchange, which this course does not
use: learners submit to the grading service; formgrader, the course list and
create assignment are instructor tools). It listens on 127.0.0.1 only (``allow_remote_access = False`` also
checks the Host header, against DNS rebinding), allows cross-origin requests from
the course site's origin only (``allow_origin``, so thebe on the site pages can
start kernels), and requires a token that is random for every ``make serve``:

* not token-less: without a token, thebe's cross-origin POSTs would need
  jupyter_server's XSRF check turned off, and any local process could use it;
* not a fixed token: jupyter_server skips its Origin and XSRF checks for
  token-authenticated requests, so a token published with the course would let
  any web page the learner visits run code in their kernels.

The token reaches the pages through the site URL ``make serve`` prints
(``?token=...``; ``course-run.js`` keeps it in the browser's localStorage for
this site) and JupyterLab through its printed URL. ``make serve`` chooses it once
(:func:`token`) and hands that same value to the server it starts
(``$JUPYTER_TOKEN`` in that child's environment only), which writes it to its
config file (mode 0600), never to its command line or its kernels' environment.
Set ``JUPYTER_TOKEN`` to choose it yourself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

# Where make book and make serve keep things, under the checkout (main() reads it from
# autograder.defaults). Nothing else here imports the course: under make hub a copy of this
# file lays each learner's home where the repository is hidden (deploy/hub/learner_home.py),
# naming its own folders.
WORKSPACE = Path("_build", "workspace")
CONFIG_DIR = Path("_build", "jupyter-config")  # <port>/ per server: two make serve runs keep their own token
SITE_NOTEBOOKS = Path("_build", "html", "_notebooks", "lessons")
RELEASE = Path("exercises", "release")
MANIFEST = ".course-generated.json"

DEFAULT_TOKEN = ""  # none baked into the site: make serve makes a random one

# Learners see nbgrader's Validate button only. The assignment list and its fetch and
# submit buttons need an nbgrader exchange directory; this course has none (learners
# submit to the grading service), so it would only say "Error fetching courses!".
SERVER_EXTENSIONS = {
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.validate_assignment": True,
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}
DISABLED_LAB_PLUGINS = {
    "@jupyter/nbgrader:menu": True,  # the "Nbgrader" menu: every entry in it is off below
    "@jupyter/nbgrader:assignment-list": True,
    "@jupyter/nbgrader:formgrader": True,
    "@jupyter/nbgrader:create-assignment": True,
    "@jupyter/nbgrader:course-list": True,
    # no "news from jupyter.org" prompt: nothing here talks to the internet
    "@jupyterlab/apputils-extension:announcements": True,
}
# The learner server's settings that make serve and make hub share.
LAB_APP = {
    # nothing from the internet: no news feed, no update check, no PyPI extension manager
    "LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
               "extension_manager": "readonly"},
}
# nbgrader (Validate) reads nbgrader_config.py from the server's working directory.
# The released graded cells are empty (their tests are hidden), so nbgrader's default
# Validate, which looks at graded cells only, passes every answer: validate_all makes
# it fail on any cell that raises or writes to stderr, the self-check among them.
NBGRADER_CONFIG = ("c = get_config()  # noqa: F821\n"
                   "c.CourseDirectory.course_id = 'jax-donation'\n"
                   "c.Execute.timeout = 120\n"
                   "c.Validator.validate_all = True\n"
                   "c.Validator.failed_warning = (\n"
                   "    'VALIDATION FAILED ON {num_failed} CELL(S): each raised an error or wrote '\n"
                   "    'to stderr when the notebook ran from the top. Validate runs the '\n"
                   "    'self-checks, not the hidden graded checks: submit to be graded.\\n')\n")

# Defaults the learner can still change in JupyterLab's settings. The submit cell
# (autograder/learner_submit.py) grades the notebook as saved after it ran: it
# waits for the save, which autosave makes within seconds instead of two minutes.
AUTOSAVE_S = 2
LAB_OVERRIDES = {"@jupyterlab/docmanager-extension:plugin": {"autosave": True,
                                                             "autosaveInterval": AUTOSAVE_S}}


def write_lab_overrides(settings_dir: Path) -> None:
    """JupyterLab's ``overrides.json`` (LAB_OVERRIDES) in its ``app_settings_dir``."""
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "overrides.json").write_text(json.dumps(LAB_OVERRIDES, indent=1))


def lab_url(host: str, port: int | str, token: str, path: str = "") -> str:
    """JupyterLab's URL for ``path`` (relative to the workspace), with the token."""
    tree = f"/tree/{quote(path)}" if path else ""
    query = f"?token={quote(token)}" if token else ""
    return f"http://{host}:{port}/lab{tree}{query}"


def token() -> str:
    """A token for the learner server: $JUPYTER_TOKEN, else a new random one.

    Each call without $JUPYTER_TOKEN makes a new one and changes no environment:
    the caller passes the value it got to the server it starts."""
    return os.environ.get("JUPYTER_TOKEN") or secrets.token_urlsafe(24)


def site_query(port: int | str, token: str) -> str:
    """What the site URL carries so its pages find the learner JupyterLab: its token,
    and its address when the port is not the pages' default (``autograder.defaults``,
    importable from the repository only: make serve's side, not a learner's home)."""
    from autograder.defaults import JUPYTER_PORT

    params = []
    if str(port) != str(JUPYTER_PORT):
        params.append("jupyter=" + quote(f"http://127.0.0.1:{port}", safe=""))
    params.append("token=" + quote(token, safe=""))
    return "?" + "&".join(params)


def _shown(path: Path) -> Path:
    """``path`` as whoever ran the command reads it: relative to where they are, when inside."""
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def _sha(path: Path) -> str:
    """What a learner can have changed in a notebook: its cells' types and sources.

    Opening a notebook makes JupyterLab save it with its own kernelspec and
    language metadata (and running it adds outputs); neither is an edit to keep."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        key = json.dumps([(c.get("cell_type"), "".join(c.get("source", ""))) for c in cells])
    except (ValueError, KeyError, TypeError, AttributeError):
        key = path.read_bytes().hex()  # not a notebook we can read: any byte change counts
    return hashlib.sha256(key.encode()).hexdigest()


NEW_VERSION = "{stem} (new version).ipynb"  # beside a notebook the learner edited


def offer_new_version(rel: str, source: Path, target: Path, manifest: dict) -> None:
    """A new release of a notebook the learner edited: lay it beside theirs as
    :data:`NEW_VERSION`, opening with a cell that says so, never overwriting their
    notebook (nor a new-version copy they edited since). ``manifest`` records what was
    laid (``rel + "#new"``: the copy's hash; ``"#from"``: the release's)."""
    offered = target.with_name(NEW_VERSION.format(stem=target.stem))
    if manifest.get(rel + "#from") == _sha(source) and offered.exists():
        return  # offered already
    if offered.exists() and manifest.get(rel + "#new") not in (None, _sha(offered)):
        print(f"==> a new version of {target.name} exists; keeping your edited {offered.name}")
        return
    nb = json.loads(source.read_text(encoding="utf-8"))
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": (
        f"**A new version of this exercise was released.** Your own notebook, "
        f"`{target.name}`, is kept exactly as you left it, beside this one. To use the new "
        "version, copy your answer into this notebook and submit from here; either "
        "notebook can be submitted.")})
    offered.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    manifest[rel + "#new"], manifest[rel + "#from"] = _sha(offered), _sha(source)
    print(f"==> a new version of {target.name} is beside it: {offered.name}")


# make book rewrites the workspace and the site's lesson notebooks at every build while a
# JupyterLab or a server may be reading them: a file is written only when its bytes
# change, whole, by a rename (a reader gets the old bytes or the new, never half).
def write_if_changed(path: Path, data: bytes) -> bool:
    """Make ``path`` hold ``data``: nothing when it already does, else a new file renamed
    into place (its folders made), with the owner and mode of the file it replaces (0644
    for a new one; a workspace that ``sudo make hub`` updates stays its user's). Returns
    whether it wrote. Raises OSError as writing does."""
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
        old = path.stat()
    except OSError:
        old = None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, old.st_mode & 0o7777 if old else 0o644)
        if old and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, old.st_uid, old.st_gid)
            except PermissionError:  # only root gives a file away; others write their own
                pass
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def build_workspace(workspace: Path, lessons: Path, release: Path) -> list[Path]:
    """Copy lesson and exercise notebooks into ``workspace``; returns the notebooks there."""
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path = workspace / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    wanted = {f"lessons/{nb.name}": nb for nb in sorted(lessons.glob("*.ipynb"))}
    if not wanted:
        raise SystemExit(f"no lesson notebooks in {lessons}: build the site first (make book)")
    # the helper the lessons' hidden cells assert their rules with (book/lessons/course_rules.py)
    wanted.update({f"lessons/{py.name}": py for py in sorted(lessons.glob("*.py"))})
    for folder in sorted(p for p in release.iterdir() if p.is_dir()) if release.is_dir() else []:
        for nb in sorted(folder.glob("*.ipynb")):
            wanted[f"{folder.name}/{nb.name}"] = nb
    for rel, source in wanted.items():
        target = workspace / rel
        if target.exists() and manifest.get(rel) not in (None, _sha(target)):
            print(f"==> keeping your edited {_shown(target)}")
            if rel.endswith(".ipynb") and _sha(source) != manifest[rel]:
                offer_new_version(rel, source, target, manifest)
            continue
        write_if_changed(target, source.read_bytes())  # an open notebook is left alone
        manifest[rel] = _sha(target)
    write_if_changed(manifest_path, json.dumps(manifest, indent=1, sort_keys=True).encode())
    return [workspace / rel for rel in wanted]


def write_config(config_dir: Path, workspace: Path, site_origin: str, token: str) -> None:
    """A JUPYTER_CONFIG_DIR for the learner server (written fresh on every start)."""
    (config_dir / "labconfig").mkdir(parents=True, exist_ok=True)
    server = {
        "ServerApp": {
            "ip": "127.0.0.1",
            "open_browser": False,
            "root_dir": str(workspace),
            "allow_origin": site_origin,
            "allow_credentials": False,
            "allow_remote_access": False,
            "jpserver_extensions": SERVER_EXTENSIONS,
            "allow_root": hasattr(os, "geteuid") and os.geteuid() == 0,
        },
        "IdentityProvider": {"token": token},
        "LabApp": {**LAB_APP["LabApp"], "app_settings_dir": str(config_dir / "labsettings")},
    }
    config_file = config_dir / "jupyter_server_config.json"
    config_file.touch(mode=0o600)
    config_file.chmod(0o600)  # it holds the token
    config_file.write_text(json.dumps(server, indent=1))
    (config_dir / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": DISABLED_LAB_PLUGINS}, indent=1))
    write_lab_overrides(config_dir / "labsettings")
    (workspace / "nbgrader_config.py").write_text(NBGRADER_CONFIG)


def server_command(port: int | str, site_origin: str, token: str,
                   workspace: Path, config_dir: Path) -> tuple[list[str], dict, Path]:
    """``(argv, env, cwd)`` that start the learner JupyterLab on 127.0.0.1:``port``."""
    write_config(config_dir, workspace, site_origin, token)
    env = dict(os.environ)
    env.update({
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JAX_PLATFORMS": env.get("JAX_PLATFORMS", "cpu"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        # .venv's tools: its kernels run the submit cell and nbgrader Validate, which import
        # the course (installed there, editable)
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    env.pop("JUPYTER_TOKEN", None)  # the config file says which token
    argv = [sys.executable, "-m", "jupyterlab", f"--port={port}", "--port-retries=0", "--no-browser"]
    return argv, env, workspace


def main(argv=None) -> int:
    from autograder.defaults import CHECKOUT, setting, site_origin

    workspace = CHECKOUT / WORKSPACE

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("workspace", help="(re)generate _build/workspace from the built site and exercises/release")
    serve = sub.add_parser("serve", help="run the learner JupyterLab (what make serve starts)")
    serve.add_argument("--port", default=setting("JUPYTER_PORT"))
    serve.add_argument("--site-origin", default=None,
                       help="origin of the course site (default http://$HOST:$PORT)")
    args = parser.parse_args(argv)
    if args.command == "workspace":
        notebooks = build_workspace(workspace, CHECKOUT / SITE_NOTEBOOKS, CHECKOUT / RELEASE)
        print(f"==> learner workspace: {WORKSPACE}/ ({len(notebooks)} notebooks)")
        return 0
    if not (workspace / "lessons").is_dir():
        build_workspace(workspace, CHECKOUT / SITE_NOTEBOOKS, CHECKOUT / RELEASE)
    origin = args.site_origin or site_origin()
    chosen = token()
    if not os.environ.get("JUPYTER_TOKEN"):  # run alone, not by make serve: say which token
        print(f"==> learner JupyterLab: {lab_url('127.0.0.1', args.port, chosen)}", flush=True)
    command, env, cwd = server_command(args.port, origin, chosen, workspace,
                                       CHECKOUT / CONFIG_DIR / str(args.port))
    os.chdir(cwd)
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    sys.exit(main())

"""Back up everything a course keeps, while it runs, and restore it.

    python -m autograder.service.backup save DEST       (make backup BACKUP=DEST)
    python -m autograder.service.backup restore DEST    (make restore BACKUP=DEST; servers stopped)

(``--db``/``--course`` as for the service, or ``GRADER_DB``/``GRADER_COURSE``; the
hub's folder is ``HUB_STATE``'s, as for ``make hub``.) ``DEST`` is a new folder:

- ``grading.db``: the submissions, every notebook and result (SQLite's online backup
  API: a consistent copy while the service writes), or ``grading.pgdump`` from
  ``pg_dump`` for PostgreSQL (one snapshot, nbgrader's tables included: the
  gradebook lives in that database then);
- ``gradebook.db``: nbgrader's gradebook, with every due date and extension (SQLite);
- ``nbgrader_config.py``: the course's late policy; ``submitted/``: the notebooks the
  gradebook's grades are of;
- ``hub-state/``: the hub's database (online backup) and cookie secret, when there is one;
- ``manifest.json``: what was copied, from where, when, and how many submissions.

The grades' source is ``grading.db``: it is copied first, and on restore the service
writes every recorded grade into the restored gradebook again (each submission's
gradebook state is cleared), so a grade mirrored between the two copies is never lost
or doubled. A submission queued or being graded at the time is graded after the restore.
"""
import argparse
import datetime
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from autograder import defaults
from autograder.service import config

HUB_DB = "jupyterhub.sqlite"


def sqlite_copy(src, dest):
    """Copy the SQLite database ``src`` into ``dest`` with SQLite's online backup API
    (consistent while others write; replaces ``dest``'s contents)."""
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(Path(src).resolve().as_uri() + "?mode=ro", uri=True, timeout=60)
    target = sqlite3.connect(dest, timeout=60)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def _places(args):
    """``(store url, course folder, hub state folder)``."""
    from autograder.service.store import database_url
    return database_url(args.db), Path(args.course), Path(defaults.setting("HUB_STATE"))


def save(args, dest):
    """Write the backup into the new folder ``dest``; the manifest (a dict)."""
    from autograder.service.store import url_text
    url, course, hub = _places(args)
    dest.mkdir(parents=True)
    copied = []
    if url.get_backend_name() == "sqlite":
        sqlite_copy(url.database, dest / "grading.db")
        copied.append("grading.db")
    else:
        plain = url_text(url.set(drivername="postgresql"))
        subprocess.run(["pg_dump", "--format=custom", f"--file={dest / 'grading.pgdump'}",
                        f"--dbname={plain}"], check=True)
        copied.append("grading.pgdump")
    if (course / "gradebook.db").exists():
        sqlite_copy(course / "gradebook.db", dest / "gradebook.db")
        copied.append("gradebook.db")
    if (course / "nbgrader_config.py").exists():
        shutil.copy2(course / "nbgrader_config.py", dest / "nbgrader_config.py")
        copied.append("nbgrader_config.py")
    if (course / "submitted").is_dir():
        shutil.copytree(course / "submitted", dest / "submitted", symlinks=True)
        copied.append("submitted/")
    if hub.is_dir():
        shutil.copytree(hub, dest / "hub-state", symlinks=True,
                        ignore=shutil.ignore_patterns(HUB_DB, f"{HUB_DB}-*"))
        if (hub / HUB_DB).exists():
            sqlite_copy(hub / HUB_DB, dest / "hub-state" / HUB_DB)
        os.chmod(dest / "hub-state", 0o700)  # the cookie secret
        copied.append("hub-state/")
    manifest = {"made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "database": url.render_as_string(hide_password=True), "course": str(course),
                "hub_state": str(hub), "copied": copied}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def restore(args, src):
    """Put the backup in ``src`` back where ``args`` say (the servers must be stopped)."""
    from autograder.service.store import Store, url_text
    url, course, hub = _places(args)
    copied = json.loads((src / "manifest.json").read_text())["copied"]
    if "grading.db" in copied:
        if url.get_backend_name() != "sqlite":
            raise SystemExit("this backup holds a SQLite grading.db; --db names PostgreSQL")
        sqlite_copy(src / "grading.db", url.database)
    else:
        plain = url_text(url.set(drivername="postgresql"))
        subprocess.run(["pg_restore", "--clean", "--if-exists", "--no-owner",
                        f"--dbname={plain}", str(src / "grading.pgdump")], check=True)
    if "gradebook.db" in copied:
        sqlite_copy(src / "gradebook.db", course / "gradebook.db")
    if "nbgrader_config.py" in copied:
        shutil.copy2(src / "nbgrader_config.py", course / "nbgrader_config.py")
    if "submitted/" in copied:
        shutil.copytree(src / "submitted", course / "submitted", symlinks=True, dirs_exist_ok=True)
    if "hub-state/" in copied:
        hub.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copytree(src / "hub-state", hub, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(HUB_DB))
        if (src / "hub-state" / HUB_DB).exists():
            sqlite_copy(src / "hub-state" / HUB_DB, hub / HUB_DB)
    Store(url).remirror()  # the gradebook is written again from the grades


def main(argv=None):
    p = config.parser("python -m autograder.service.backup",
                      "Back up a course while it runs (save), or put a backup back (restore).")
    p.add_argument("action", choices=("save", "restore"))
    p.add_argument("folder", type=Path, help="the backup's folder (save: a new one)")
    args = p.parse_args(argv)
    if args.action == "save":
        if args.folder.exists():
            p.error(f"{args.folder} exists: name a new folder")
        manifest = save(args, args.folder)
        print(f"backed up {', '.join(manifest['copied'])} into {args.folder}")
    else:
        if not (args.folder / "manifest.json").exists():
            p.error(f"{args.folder} holds no backup (no manifest.json)")
        restore(args, args.folder)
        print(f"restored {args.folder}: start the course again; the grading service writes "
              "every recorded grade into the gradebook again as it starts")
    return 0


if __name__ == "__main__":
    sys.exit(main())

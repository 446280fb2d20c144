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
- ``course-files/``: the course's own files (hidden tests, source notebooks, the
  exercise registry and metadata, ``nbgrader_config.py``: :mod:`course_files`), which
  decide every check and point; ``submitted/``: the notebooks the gradebook's grades are of;
- ``hub-state/``: the hub's database (online backup), cookie secret and LTI files,
  when there is one;
- ``manifest.json``: what was copied, from where, when, how many submissions, and
  each course file's SHA-256 and mode.

Learners' work and the hub's secrets: every folder of a backup is made 0700 and every
file 0600, whatever the umask or the folder above. What only means something to the
running processes of this machine (process ids, locks, sockets: :func:`machine_state`)
is never copied, nor put back from an older backup: a pid put back would name
whatever process has that number on the machine it is restored on.

The grades' source is ``grading.db``: it is copied first, and on restore the service
writes every recorded grade into the restored gradebook again (each submission's
gradebook state is cleared), so a grade mirrored between the two copies is never lost
or doubled. A submission queued or being graded at the time is graded after the restore.
A restore puts the backup's course files back where the checkout's differ (and says
which), so the restored grades are of the course that graded them.
"""
import contextlib
import datetime
import json
import os
import shutil
import stat
import sys
from pathlib import Path

from autograder import defaults
from autograder.service import config
from autograder.service.commands import course_files
from autograder.service.store import dumps

HUB_DB = "jupyterhub.sqlite"
COURSE_FILES = "course-files"
# What names live state of this machine's processes rather than the course's data.
LIVE_SUFFIXES = (".pid", ".lock", ".lck", ".sock", ".socket")
SQLITE_SIDE = ("-journal", "-wal", "-shm")  # copied through SQLite's online backup instead
PID_BYTES = 24  # a file this small holding one number is a process id


@contextlib.contextmanager
def private():
    """Files and folders made meanwhile in this process are 0600/0700 (umask 077)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def lock_down(root):
    """Make the folder ``root`` and every folder below it 0700, every file 0600 (links
    are not followed: a backup holds none)."""
    for top, _dirs, names in os.walk(root):
        os.chmod(top, 0o700)
        for name in names:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                os.chmod(path, 0o600)


def machine_state(path):
    """Why ``path`` is state of this machine's running processes, not the course's (a
    str), or None: a socket, pipe or device; a link (it names a place on this machine);
    a pid or lock file (by its name, or a tiny file holding one number); a SQLite
    journal beside its database."""
    path = Path(path)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return "a socket, pipe or device"
    if path.name.endswith(LIVE_SUFFIXES):
        return "a process id, lock or socket file"
    if path.name.endswith(SQLITE_SIDE):
        return "a database's journal"
    if stat.S_ISREG(info.st_mode) and info.st_size <= PID_BYTES and \
            path.read_bytes().strip().isdigit():
        return "a process id"
    return None


def _copy_tree(src, dest, left_out, skip=()):
    """Copy the folder ``src`` into ``dest`` (made or merged), without
    :func:`machine_state` and the names in ``skip``; what is left out goes into
    ``left_out`` (a list of ``{"path", "why"}``)."""
    def ignore(folder, names):
        out = set()
        for name in names:
            why = "copied apart" if name in skip else machine_state(Path(folder) / name)
            if why:
                out.add(name)
                if why != "copied apart":
                    left_out.append({"path": str(Path(folder) / name), "why": why})
        return out
    shutil.copytree(src, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def _places(args):
    """``(store url, course folder, hub state folder)``."""
    from autograder.service.store import database_url
    return database_url(args.db), Path(args.course), Path(defaults.setting("HUB_STATE"))


def save(args, dest):
    """Write the backup into the new folder ``dest`` (0700, every file 0600); the
    manifest (a dict)."""
    url, course, hub = _places(args)
    with private():
        dest.mkdir(parents=True)
        copied, left_out = [], []
        if url.get_backend_name() == "sqlite":
            dumps.sqlite_copy(url.database, dest / "grading.db")
            copied.append("grading.db")
            count = dumps.count(dest / "grading.db")
        else:
            count = dumps.pg_dump(url, dest / "grading.pgdump")
            copied.append("grading.pgdump")
        if (course / "gradebook.db").exists():
            dumps.sqlite_copy(course / "gradebook.db", dest / "gradebook.db")
            copied.append("gradebook.db")
        listing = course_files.listing(course)
        for key, path in course_files.files(course).items():
            (dest / COURSE_FILES / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / COURSE_FILES / key)
        copied.append(f"{COURSE_FILES}/")
        if (course / "submitted").is_dir():
            _copy_tree(course / "submitted", dest / "submitted", left_out)
            copied.append("submitted/")
        if hub.is_dir():
            _copy_tree(hub, dest / "hub-state", left_out, skip=(HUB_DB,))
            if (hub / HUB_DB).exists():
                dumps.sqlite_copy(hub / HUB_DB, dest / "hub-state" / HUB_DB)
            copied.append("hub-state/")
        manifest = {"made": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    "database": url.render_as_string(hide_password=True), "course": str(course),
                    "hub_state": str(hub), "copied": copied, "submissions": count,
                    "course_files": listing, "left_out": left_out}
        (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        lock_down(dest)
    return manifest


def put_course_back(src, manifest, course):
    """Put the backup's course files back where the checkout's differ; ``(changed,
    extra)`` as :func:`course_files.differing` says (the extra ones are left as they are);
    ``changed`` is None for a backup that holds no course files."""
    saved = manifest.get("course_files")
    if saved is None:  # a backup from before course files were kept: the checkout's stay
        return None, []
    changed, extra = course_files.differing(saved, course)
    for key in changed:
        course_files.put_back(key, src / COURSE_FILES / key, saved[key]["mode"], course)
    return changed, extra


def restore(args, src):
    """Put the backup in ``src`` back where ``args`` say (the servers must be stopped);
    ``(changed, extra)``: the course files put back (None: the backup holds none), and
    those the backup lacks. SystemExit, before anything is touched, for a backup of the
    other database kind or naming a course file outside its place."""
    from autograder.service.store import Store
    url, course, hub = _places(args)
    manifest = json.loads((src / "manifest.json").read_text())
    copied = manifest["copied"]
    if "grading.db" not in copied and url.get_backend_name() == "sqlite":
        raise SystemExit("this backup holds a PostgreSQL dump; --db names a SQLite file")
    if "grading.db" in copied and url.get_backend_name() != "sqlite":
        raise SystemExit("this backup holds a SQLite grading.db; --db names PostgreSQL")
    with private():
        for key in manifest.get("course_files") or {}:
            try:  # a name that leaves its place: refused before anything is touched
                course_files.where(key, course)
            except ValueError as exc:
                raise SystemExit(f"{src}: {exc}; nothing was restored") from None
        changed, extra = put_course_back(src, manifest, course)
        if "grading.db" in copied:
            dumps.sqlite_copy(src / "grading.db", url.database)
        else:
            dumps.pg_restore(url, src / "grading.pgdump")
        if "gradebook.db" in copied:
            dumps.sqlite_copy(src / "gradebook.db", course / "gradebook.db")
        if "nbgrader_config.py" in copied:  # a backup from before course-files/
            shutil.copy2(src / "nbgrader_config.py", course / "nbgrader_config.py")
        if "submitted/" in copied:
            _copy_tree(src / "submitted", course / "submitted", [])
        if "hub-state/" in copied:
            hub.mkdir(mode=0o700, parents=True, exist_ok=True)
            _copy_tree(src / "hub-state", hub, [], skip=(HUB_DB,))
            if (src / "hub-state" / HUB_DB).exists():
                dumps.sqlite_copy(src / "hub-state" / HUB_DB, hub / HUB_DB)
        Store(url).remirror()  # the gradebook is written again from the grades
    return changed, extra


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
        print(f"backed up {', '.join(manifest['copied'])} ({manifest['submissions']} "
              f"submissions) into {args.folder} (readable by its owner only)")
    else:
        if not (args.folder / "manifest.json").exists():
            p.error(f"{args.folder} holds no backup (no manifest.json)")
        changed, extra = restore(args, args.folder)
        if changed is None:
            print("this backup holds no course files (an older version made it): the "
                  "checkout's hidden tests and sources stay; they must be those it was graded by")
        elif changed:
            print("put the backup's course files back (they differed here): " + ", ".join(changed))
        if extra:
            print("course files the backup does not hold, left as they are: " + ", ".join(extra))
        print(f"restored {args.folder}: start the course again; the grading service writes "
              "every recorded grade into the gradebook again as it starts")
    return 0


if __name__ == "__main__":
    sys.exit(main())

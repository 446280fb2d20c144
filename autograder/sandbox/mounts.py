"""Private mount namespaces: empty folders over what a learner must not see, and the
course's Python bound back under them.

Runs in the learner's process (:mod:`autograder.sandbox.confine` calls it after
``unshare``, as root, before dropping to the sandbox uid), and in the forked child that
becomes a learner's JupyterLab server under the hub (``deploy/hub/course_spawner.py``).
Both need the same thing: the venv's interpreter may live where an unprivileged uid
cannot go (pyenv's, in root's home, mode 0700), so the interpreter's prefix and the venv
are bound back, at the paths Python knows them by, under the covers.
"""
from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence

Kept = tuple[str, str]  # (where Python names a folder, the folder it really is)

MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
STAGING = "/mnt"  # an existing folder outside every cover
SMALL = "size=1m,mode=0755"  # a cover that only holds the paths bound back into it


def libc() -> ctypes.CDLL:
    """The C library, with ``errno`` kept for :func:`mount`."""
    return ctypes.CDLL(None, use_errno=True)


def mount(lib: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None) -> None:
    """``mount(2)``; raises OSError (with errno) when it fails."""
    def enc(s: str | None) -> bytes | None:
        return None if s is None else str(s).encode()
    if lib.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {source} on {target}")


def interpreter_paths() -> list[Kept]:
    """``[(where, real)]``: the interpreter's prefix (``sys.base_prefix``) and the venv
    (``sys.prefix``), each at the path Python names it by and the folder it really is
    (a venv may be reached through a symbolic link)."""
    return sorted({(os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_prefix)),
                   (sys.prefix, os.path.realpath(sys.prefix))})


def under(paths: Iterable[Kept], covers: Collection[str]) -> list[Kept]:
    """Those ``(where, real)`` of ``paths`` that a folder of ``covers`` would hide, without
    any nested in another kept one (its parent brings it back)."""
    hidden = [(w, r) for w, r in paths if any(w == c or w.startswith(c + "/") for c in covers)]
    return [(w, r) for w, r in hidden
            if not any(w != o and w.startswith(o + "/") for o, _ in hidden)]


def cover(lib: ctypes.CDLL, covers: Mapping[str, str], keep: Sequence[Kept]) -> None:
    """Mount an empty tmpfs on each folder of ``covers`` (``{folder: tmpfs options}``, in
    its order: a folder below an earlier cover is made on that cover, so it is there
    even where the machine has none), then bind each ``(where, real)`` of ``keep`` back
    at ``where``; :data:`STAGING` is left an empty cover too.

    Call it inside a fresh mount namespace whose root is already private. What is kept
    is parked under :data:`STAGING` first, since a cover may hide its source. Raises
    OSError when a mount fails.
    """
    mount(lib, "tmpfs", STAGING, "tmpfs", 0, "size=1m,mode=0700")
    for i, (_, real) in enumerate(keep):
        os.mkdir(f"{STAGING}/{i}")
        mount(lib, real, f"{STAGING}/{i}", None, MS_BIND | MS_REC, None)
    made: list[str] = []
    for target, options in covers.items():
        if not os.path.lexists(target) and any(target.startswith(c + "/") for c in made):
            os.makedirs(target, mode=0o755)  # below an earlier cover: made on it
        if os.path.isdir(target) and not os.path.islink(target):
            mount(lib, "tmpfs", target, "tmpfs", 0, options)
            made.append(target)
    for i, (where, _) in enumerate(keep):
        os.makedirs(where, mode=0o755, exist_ok=True)
        mount(lib, f"{STAGING}/{i}", where, None, MS_BIND | MS_REC, None)
    lib.umount2(STAGING.encode(), MNT_DETACH)
    # and covered like the other folders that are not the system's own: a disk an
    # administrator mounted there (a copy of the course, a backup) is not learners' to see
    mount(lib, "tmpfs", STAGING, "tmpfs", 0, SMALL)


def make_root_private(lib: ctypes.CDLL) -> None:
    """Stop mounts made here from reaching the parent namespace (``MS_PRIVATE`` on /)."""
    mount(lib, "none", "/", None, MS_REC | MS_PRIVATE, None)

"""The grader's compile cache with real learner processes: a learner's process cannot add,
replace or spoil an entry another learner's grading loads, whichever way it tries, and a
grade with the cache is the grade without it (a spoiled entry included).

Root only (sandbox uids, mount namespaces); a cache of their own, warmed once per module,
and a zygote with it and one without, each started once per module (:func:`zygotes`), as
a grader keeps one zygote for every submission it grades.
"""
import ast
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder import load, pipeline, sandbox
from autograder.exercises import get
from autograder.sandbox import compile_cache, uids, warm

EXERCISE = "update_with_donate"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: sandbox uids")


@pytest.fixture(scope="module")
def cache():
    """A cache root (root's, 0700) with ``update_with_donate`` warm; its one folder. Below
    /var/tmp, so that every folder above the root is one a sandbox uid may pass through
    (pytest's own are root's, 0700): the root's owner and modes alone keep it out."""
    top = Path(tempfile.mkdtemp(prefix="compile-cache-test-", dir="/var/tmp"))
    top.chmod(0o755)
    root = top / "cache"
    try:
        warm.warm_all([EXERCISE], folder=root)
        (folder,) = [p for p in root.iterdir() if p.is_dir()]
        yield folder
    finally:
        shutil.rmtree(top, ignore_errors=True)


def tree(folder):
    """Everything about ``folder`` a learner could change: each name, its kind, owner,
    mode and bytes (a sorted list)."""
    found = []
    for base, dirs, files in os.walk(folder.parent):
        for name in sorted(dirs + files):
            path = os.path.join(base, name)
            info = os.lstat(path)
            raw = open(path, "rb").read() if os.path.isfile(path) else b""
            found.append((path, info.st_mode, info.st_uid, hashlib.sha256(raw).hexdigest()))
    return sorted(found)


def zygote(folder, monkeypatch):
    """A zygote of its own, started with the cache at ``folder``'s root (None: off)."""
    monkeypatch.setenv("GRADER_COMPILE_CACHE", str(folder.parent) if folder else "")
    z = sandbox.Zygote()
    z.launch([EXERCISE])
    return z


@pytest.fixture(scope="module")
def zygotes():
    """``with zygotes(folder) as z``: the module's zygote with the cache at ``folder``'s
    root (None: off), started on first use and kept to the module's end, with
    ``GRADER_COMPILE_CACHE`` set to that root meanwhile (a zygote compares its cache
    folders with the setting's at every grading and starts afresh where they differ).
    A zygote each test started anew cost an interpreter importing JAX each (19 in all)."""
    made = {}

    @contextlib.contextmanager
    def using(folder):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GRADER_COMPILE_CACHE", str(folder.parent) if folder else "")
            if folder not in made:
                made[folder] = sandbox.Zygote()
                made[folder].launch([EXERCISE])
            yield made[folder]

    try:
        yield using
    finally:
        for z in made.values():
            z.stop()


def grade(z, cells, slot=7):
    """``(GradingResult as a comparable dict, the learner's cache counts, output tail)``."""
    sub = load.Submission(name="s", path=None, exercise=EXERCISE)
    sub.cells = [load.Cell(label=label, source=source) for label, source in cells]
    hex_digest = "ab" * 32
    request = {"exercise": EXERCISE, "seed": pipeline.seed_for(hex_digest), "memory_mib": 4096,
               "hide": [], "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
    with sandbox.lease_uid(slot) as lease:
        outcome = z.send(request, sandbox.Limits(seconds=120), lease)
    result = pipeline.judged(sub, outcome, hex_digest).to_record()
    result.pop("seconds", None)
    return result, (outcome.reply or {}).get("compile_cache"), outcome.output_tail


def sample(name):
    return [("the answer cell", (get(EXERCISE).samples / f"{name}.py").read_text())]


# What a learner's code tries on the cache: each a function of the folder's path that
# returns None when it changed nothing, else what it did. Run in a learner's process (the
# sandbox: its mount namespace and uid) and in a plain process of a sandbox uid that sees
# the real folder (the uid alone must stop it).
ATTEMPTS = textwrap.dedent(r'''
    import glob, os, shutil

    def _first(folder):
        found = sorted(glob.glob(os.path.join(folder, "*-cache")))
        return found[0] if found else os.path.join(folder, "jit_add-0-cache")

    def add_entry(folder):
        with open(os.path.join(folder, "jit_planted-0-cache"), "wb") as f:
            f.write(b"planted")
        return "added an entry"

    def overwrite_entry(folder):
        with open(_first(folder), "r+b") as f:
            f.write(b"planted")
        return "overwrote an entry"

    def replace_entry(folder):
        mine = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mine")
        with open(mine, "wb") as f:
            f.write(b"planted")
        os.replace(mine, _first(folder))
        return "replaced an entry"

    def link_entry(folder):
        os.symlink("/proc/self/environ", os.path.join(folder, "jit_linked-0-cache"))
        return "linked an entry"

    def unlink_entry(folder):
        os.unlink(_first(folder))
        return "removed an entry"

    def rewrite_manifest(folder):
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            f.write('{"key": {}, "entries": {"jit_planted-0": "00"}}')
        return "rewrote the manifest"

    def chmod_folder(folder):
        os.chmod(folder, 0o777)
        return "opened the folder to all"

    def chmod_entry(folder):
        os.chmod(_first(folder), 0o666)
        return "opened an entry to all"

    def plant_next_version(folder):
        os.makedirs(os.path.join(os.path.dirname(folder), "update_with_donate-next"))
        return "made a folder for a next version"

    def rename_folder(folder):
        os.rename(folder, folder + "-gone")
        return "moved the folder"

    def jax_write_path(folder):
        import jax, jax.numpy as jnp
        from jax._src import compilation_cache
        before = set(os.listdir(folder)) if os.access(folder, os.R_OK) else None
        jax.config.update("jax_compilation_cache_dir", folder)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_raise_persistent_cache_errors", True)
        compilation_cache.reset_cache()
        jax.jit(lambda x: x * 3 + 1)(jnp.arange(7.0)).block_until_ready()
        after = set(os.listdir(folder)) if os.access(folder, os.R_OK) else None
        return "JAX wrote an entry" if before is not None and after != before else None

    def _mine(content=b"planted"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mine-%d" % os.getpid())
        with open(path, "wb") as f:
            f.write(content)
        return path

    def hardlink_into(folder):
        os.link(_mine(), os.path.join(folder, "jit_hardlinked-0-cache"))
        return "hard-linked a file of its own in as an entry"

    def hardlink_over(folder):
        staged = os.path.join(folder, ".staged")
        os.link(_mine(), staged)
        os.replace(staged, _first(folder))
        return "hard-linked a file of its own over an entry"

    def hardlink_out(folder):
        out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "out-%d" % os.getpid())
        os.link(_first(folder), out)
        with open(out, "r+b") as f:
            f.write(b"planted")
        return "wrote an entry through a hard link of its own"

    def proc_fd(folder):
        """Any descriptor of any process that names the cache, reopened for writing."""
        wrote = None
        for fd in glob.glob("/proc/[0-9]*/fd/*") + glob.glob("/proc/self/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(os.path.dirname(folder)):
                with open(fd, "r+b") as f:
                    f.write(b"planted")
                wrote = "wrote through " + fd
        if wrote is None:
            os.open(os.path.join(folder, "manifest.json"), os.O_WRONLY)
        return wrote

    def rename_folder_into_place(folder):
        mine = os.path.join(os.environ.get("TMPDIR", "/tmp"), "folder-%d" % os.getpid())
        os.makedirs(mine, exist_ok=True)
        with open(os.path.join(mine, "manifest.json"), "w") as f:
            f.write('{"key": {}, "entries": {}}')
        os.rename(mine, folder)
        return "renamed a folder of its own over the cache's"

    ATTEMPTS = [add_entry, overwrite_entry, replace_entry, link_entry, unlink_entry,
                rewrite_manifest, chmod_folder, chmod_entry, plant_next_version,
                rename_folder, jax_write_path, hardlink_into, hardlink_over, hardlink_out,
                proc_fd, rename_folder_into_place]

    def forge_channel(folder):
        """The socket a learner's process asks its supervisor for entries on, written to
        as if it took entries: a key with an entry's bytes after it, keys that are paths,
        a line too long, a length prefix; then asked for a key it planted."""
        import socket
        said = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                if not os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
                    continue
                conn = socket.socket(fileno=os.dup(int(fd)))
            except OSError:
                continue
            conn.settimeout(2)
            for line in (b"jit_planted-0\n" + (7).to_bytes(8, "big") + b"planted\n",
                         b"../manifest.json\n", b"jit_planted-0-cache/../../x\n",
                         b"PUT jit_planted-0 7\nplanted\n", b"k" * 5000 + b"\n",
                         b"jit_planted-0\n"):
                try:
                    conn.sendall(line)
                    size = int.from_bytes(conn.recv(8), "big")
                    said.append(size)
                except OSError as exc:
                    said.append(type(exc).__name__)
        return "the channel served a planted key" if any(
            isinstance(x, int) and x > 0 for x in said) else None

    def attempt_all(folder):
        said = {}
        for attempt in ATTEMPTS:
            try:
                said[attempt.__name__] = attempt(folder) or "nothing changed"
            except Exception as exc:
                said[attempt.__name__] = f"refused: {type(exc).__name__}"
        return said
''')


def test_a_learner_uid_cannot_touch_the_cache_even_where_it_sees_it(cache):
    """Without the mount namespace's cover, the folder's owner and modes alone refuse every
    attempt of a sandbox uid (JAX started as root first, so its own write path is tried
    by the uid with a backend running; its errors raised, not warned)."""
    before = tree(cache)
    with sandbox.lease_uid(8) as lease:
        code = (ATTEMPTS + "\nimport jax, jax.numpy as jnp, sys\n"
                "jax.jit(jnp.sin)(1.0).block_until_ready()\n"
                f"os.setgroups([]); os.setgid({lease.uid}); os.setuid({lease.uid})\n"
                f"print(repr(attempt_all({str(cache)!r})))\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, JAX_PLATFORMS="cpu"), timeout=300)
        uids.kill_uid(lease)
    said = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert len(said) == 16, said
    assert all(v.startswith("refused: PermissionError") for v in said.values()), said
    assert tree(cache) == before


def test_a_submission_cannot_touch_the_cache_and_the_next_grade_is_unchanged(cache, zygotes):
    """A submission tries every attempt on the cache's real path (JAX's own write path
    too); the cache is byte for byte as it was, and the next learner's grade is the one
    graded without a cache, from the cache's entries."""
    before = tree(cache)
    with zygotes(None) as off:
        want, counts, _ = grade(off, sample("reference"))
    assert counts is None
    with zygotes(cache) as on:
        attack = ATTEMPTS + (f"\nATTEMPTS.append(forge_channel)\n"
                             f"print('SAID', attempt_all({str(cache)!r}))\n")
        _, _, tail = grade(on, sample("reference") + [("cell 2", attack)])
        assert "SAID" in tail and "forge_channel" in tail, tail  # every attempt ran
        said = ast.literal_eval(tail[tail.index("SAID") + 5:].strip().splitlines()[0])
        assert said["forge_channel"] == "nothing changed", said
        got, counts, _ = grade(on, sample("reference"))
    assert tree(cache) == before
    assert got == want
    assert counts["hits"] > 0 and counts["misses"] == 0, counts


def test_a_spoiled_entry_costs_only_its_compile(cache, zygotes, monkeypatch, tmp_path):
    """Every entry of a copy of the cache spoiled a different way (flipped, truncated,
    another program's bytes, a link): the grade is the grade without a cache."""
    copy_root = tmp_path / "spoiled"
    copy_root.mkdir(mode=0o700)
    tmp_path.chmod(0o755)
    folder = copy_root / cache.name
    shutil.copytree(cache, folder)
    entries = sorted(folder.glob(f"*{compile_cache.SUFFIX}"))
    ways = [lambda p: p.write_bytes(b"X" + p.read_bytes()[1:]),
            lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
            lambda p, other=entries[0]: p.write_bytes(other.read_bytes() if p != other else b""),
            lambda p: (p.unlink(), p.symlink_to(entries[0]))]
    for i, path in enumerate(entries):
        ways[i % len(ways)](path)
    with zygotes(None) as off:
        want, _, _ = grade(off, sample("reference"))
    on = zygote(folder, monkeypatch)  # its own: the spoiled copy is this test's
    try:
        got, counts, _ = grade(on, sample("reference"))
    finally:
        on.stop()
    assert got == want
    assert counts["hits"] == 0 and counts["misses"] > 0, counts  # each one compiled instead


@pytest.mark.parametrize("name", ["reference", "lambda_helper", "wrong_arithmetic", "no_donation",
                                  "reads_donated", "no_jit"])
def test_grades_are_the_same_with_the_cache_and_without(cache, zygotes, name):
    """Full-mark answers the cache was warmed with and wrong ones it was not: the same
    result, check by check and word for word."""
    grades = []
    for folder in (None, cache):
        with zygotes(folder) as z:
            grades.append(grade(z, sample(name))[0])
    assert grades[0] == grades[1]


def memory_holds(pid, needles):
    """Which of ``needles`` (bytes) are anywhere in the readable memory of process ``pid``."""
    found = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            found.update(n for n in needles if n in chunk)
    return found


def test_no_process_a_learner_is_forked_from_holds_an_entry(cache, zygotes):
    """The zygote (which every supervisor and learner's process is forked from) holds the
    folders' paths, never an entry: after a grading served by the cache none of the
    entries' bytes is anywhere in its memory, so no learner's process can read one it did
    not compile itself."""
    needles = {p.read_bytes()[4:260] for p in cache.glob(f"*{compile_cache.SUFFIX}")}
    with zygotes(cache) as z:
        _, counts, _ = grade(z, sample("reference"))
        assert counts["hits"] > 0
        assert memory_holds(z.proc.pid, needles) == set()


# Memory hogs: a right answer, then code that holds memory in its process. Generated from
# where the memory is held, what allocates it, and how far it goes (to the limit, where
# MemoryError escapes its cell; to the limit with the error caught and the memory kept;
# just under the limit, leaving a few MiB of its address space). Each is graded with the
# cache and without: the grade is what the learner's code did to its process, never how
# much memory the grader's own compiles needed after it.
HOLDERS = {
    "list": ("hog = []\n", "hog.append({chunk})"),
    "global_array": ("import sys\nsys.modules['__main__'].__dict__.setdefault('hog', [])\n",
                     "globals()['hog'].append({chunk})"),
    "closure": ("def _keeper():\n    kept = []\n    return kept.append, kept\n"
                "keep, _kept = _keeper()\ndel _kept\n", "keep({chunk})"),
}
SOURCES = {
    "bytes": "bytes(CHUNK)",  # calloc: address space, no pages touched
    "numpy": "np.zeros(CHUNK, np.uint8)",
    "jnp": "jnp.zeros(CHUNK, jnp.uint8)",  # XLA's allocator: RESOURCE_EXHAUSTED at the limit
}
ENDS = {
    "to_the_limit": "while True:\n    {add}\n",
    "caught": "try:\n    while True:\n        {add}\nexcept BaseException:\n    pass\n",
    "just_under": ("while _free() > CHUNK + MARGIN:\n    {add}\n"),
}
HOG_PRELUDE = '''
import resource
import numpy as np
import jax.numpy as jnp
CHUNK, MARGIN = {chunk} * 2**20, {margin} * 2**20

def _free():
    """Bytes of this process's address-space limit not mapped yet."""
    size = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize"))
    return resource.getrlimit(resource.RLIMIT_AS)[0] - size * 1024
'''
HOG_MEMORY_MIB = 2048  # a JAX process with its backend started maps about 1.2 GiB of it


def hogs():
    """``{name: answer cell}``: every source x end x whether the answer was called (its
    backend started, its program compiled) before the hog or only defined, in chunks of
    32 and of 256 MiB (which leave more of the limit unmapped), the holder taken in turn;
    just under the limit by two margins."""
    found, holders = {}, sorted(HOLDERS)
    for source, chunk in SOURCES.items():
        for end, loop in ENDS.items():
            for margin in ((8, 160) if end == "just_under" else (0,)):
                for before in ("called", "defined"):
                    for mib in (32, 256):
                        holder = holders[len(found) % len(holders)]
                        setup, add = HOLDERS[holder]
                        body = loop.format(add=add.format(chunk=chunk))
                        call = ("update_with_donate(jnp.ones(4), jnp.ones(4))\n"
                                if before == "called" else "")
                        name = (f"{holder}-{source}-{end}" + (f"-{margin}" if margin else "")
                                + f"-{before}-{mib}")
                        found[name] = (RIGHT_ANSWER + HOG_PRELUDE.format(margin=margin, chunk=mib)
                                       + setup + call + body)
    return found


RIGHT_ANSWER = '''
import jax
_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
def update_with_donate(state, delta):
    return _add(state, delta)
'''


def grade_hog(z, answer, slot):
    """:func:`grade` with :data:`HOG_MEMORY_MIB`: the result without what differs from run
    to run (the learner's printed output)."""
    sub = load.Submission(name="s", path=None, exercise=EXERCISE)
    sub.cells = [load.Cell(label="the answer cell", source=answer)]
    hex_digest = "cd" * 32
    request = {"exercise": EXERCISE, "seed": pipeline.seed_for(hex_digest),
               "memory_mib": HOG_MEMORY_MIB, "hide": [],
               "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
    with sandbox.lease_uid(slot) as lease:
        outcome = z.send(request, sandbox.Limits(seconds=120, memory_mib=HOG_MEMORY_MIB), lease)
    result = pipeline.judged(sub, outcome, hex_digest)
    return {"score": result.score, "status": result.status}, result.output


def test_a_memory_hog_grades_the_same_with_the_cache_and_without(cache, zygotes):
    """Every hog of :func:`hogs`: the same points and status with the cache and without;
    the ones whose code reached the limit get the memory status, the others their points."""
    family, got = hogs(), {}
    for label, folder in (("off", None), ("on", cache)):
        with zygotes(folder) as z, ThreadPoolExecutor(2) as pool:  # two at a time, as --jobs 2
            graded = pool.map(lambda item, z=z: grade_hog(z, item[1], 9 + item[0] % 2)[0],
                              enumerate(family.values()))
            got[label] = dict(zip(family, graded))
    differ = {n: (got["off"][n], got["on"][n]) for n in family if got["off"][n] != got["on"][n]}
    assert not differ, differ
    wrong = {n: v for n, v in got["on"].items()
             if v != ({"score": 0, "status": "memory"} if "-to_the_limit-" in n
                      else {"score": 10, "status": "graded"})}
    assert not wrong, wrong

"""The grader's compile cache with real learner processes: a learner's process cannot add,
replace or spoil an entry another learner's grading loads, whichever way it tries, and a
grade with the cache is the grade without it (a spoiled entry included).

Root only (sandbox uids, mount namespaces); a cache of their own, warmed once per module.
"""
import ast
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
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
ATTEMPTS = textwrap.dedent('''
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

    ATTEMPTS = [add_entry, overwrite_entry, replace_entry, link_entry, unlink_entry,
                rewrite_manifest, chmod_folder, chmod_entry, plant_next_version,
                rename_folder, jax_write_path]

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
    assert len(said) == 11 and all(v.startswith("refused: PermissionError") for v in said.values()), said
    assert tree(cache) == before


def test_a_submission_cannot_touch_the_cache_and_the_next_grade_is_unchanged(cache, monkeypatch):
    """A submission tries every attempt on the cache's real path (JAX's own write path
    too); the cache is byte for byte as it was, and the next learner's grade is the one
    graded without a cache, from the cache's entries."""
    before = tree(cache)
    off = zygote(None, monkeypatch)
    try:
        want, counts, _ = grade(off, sample("reference"))
    finally:
        off.stop()
    assert counts is None
    on = zygote(cache, monkeypatch)
    try:
        attack = ATTEMPTS + f"\nprint('SAID', attempt_all({str(cache)!r}))\n"
        _, _, tail = grade(on, sample("reference") + [("cell 2", attack)])
        assert "SAID" in tail and "jax_write_path" in tail, tail  # every attempt ran
        got, counts, _ = grade(on, sample("reference"))
    finally:
        on.stop()
    assert tree(cache) == before
    assert got == want
    assert counts["hits"] > 0 and counts["misses"] == 0, counts


def test_a_spoiled_entry_costs_only_its_compile(cache, monkeypatch, tmp_path):
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
    off = zygote(None, monkeypatch)
    try:
        want, _, _ = grade(off, sample("reference"))
    finally:
        off.stop()
    on = zygote(folder, monkeypatch)
    try:
        got, counts, _ = grade(on, sample("reference"))
    finally:
        on.stop()
    assert got == want
    assert counts["hits"] == 0 and counts["misses"] > 0, counts  # each one compiled instead


@pytest.mark.parametrize("name", ["reference", "lambda_helper", "wrong_arithmetic", "no_donation",
                                  "reads_donated", "no_jit"])
def test_grades_are_the_same_with_the_cache_and_without(cache, monkeypatch, name):
    """Full-mark answers the cache was warmed with and wrong ones it was not: the same
    result, check by check and word for word."""
    grades = []
    for folder in (None, cache):
        z = zygote(folder, monkeypatch)
        try:
            grades.append(grade(z, sample(name))[0])
        finally:
            z.stop()
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


def test_no_process_a_learner_is_forked_from_holds_an_entry(cache, monkeypatch):
    """The zygote (which every supervisor and learner's process is forked from) holds the
    folders' paths, never an entry: after a grading served by the cache none of the
    entries' bytes is anywhere in its memory, so no learner's process can read one it did
    not compile itself."""
    needles = {p.read_bytes()[4:260] for p in cache.glob(f"*{compile_cache.SUFFIX}")}
    z = zygote(cache, monkeypatch)
    try:
        _, counts, _ = grade(z, sample("reference"))
        assert counts["hits"] > 0
        assert memory_holds(z.proc.pid, needles) == set()
    finally:
        z.stop()

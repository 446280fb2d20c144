"""The compilation cache learner processes read (autograder/sandbox/compile_cache.py).

In the sandbox, as root: a run given a staging folder writes JAX's entries into it;
once sealed, a learner's process reads them (a cache hit, JAX's own event) but can
neither write into the folder nor list it, and the command line leaves each exercise
it graded more than once with a sealed folder. Without isolation no request names a
cache. Sealing keeps JAX's entries only (no link, no folder), root's and 0644.
"""
import json
import os
import stat

import pytest

from autograder import sandbox
from autograder.sandbox import compile_cache
from autograder.sandbox.confine import CACHE_TARGET
from tests.course import grader_cli
from tests.grading.helpers import released_notebook, samples_dir, with_answer

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the cache is bound in namespaces only root makes")
COMPILE = """
import errno, json, os
import jax, jax.monitoring, jax.numpy as jnp
events = []
jax.monitoring.register_event_listener(lambda event, **kw: events.append(event))
jax.jit(lambda x: x * 3 + 1)(jnp.ones(7)).block_until_ready()
where = jax.config.jax_compilation_cache_dir
def attempt(act):
    try:
        act()
        return "allowed"
    except OSError as exc:
        return errno.errorcode[exc.errno]
print("REPORT", json.dumps({"dir": where, "hit": "/jax/compilation_cache/cache_hits" in events,
      "list": attempt(lambda: os.listdir(where)) if where else None,
      "write": attempt(lambda: open(os.path.join(where, "mine-cache"), "w").close()) if where else None}))
"""


def _report(cache, writable=False):
    """What :data:`COMPILE` printed in a sandboxed run given ``cache``."""
    request = {"exercise": "update_with_donate", "seed": 1, "memory_mib": 2048, "hide": [],
               "cells": [{"label": "cell 1", "source": COMPILE}]}
    if cache:
        request.update(compile_cache=str(cache), compile_cache_writable=writable)
    outcome = sandbox.run(request, sandbox.Limits(seconds=60))
    line = next(line for line in outcome.output_tail.splitlines() if line.startswith("REPORT "))
    return json.loads(line.removeprefix("REPORT "))


@ROOT_ONLY
def test_a_sealed_cache_is_read_but_never_written_nor_listed(tmp_path):
    parent = tmp_path / "root"
    parent.mkdir(mode=0o700)
    staging = parent / "staging"
    staging.mkdir()
    os.chmod(staging, 0o777)
    warm = _report(staging, writable=True)
    assert warm["hit"] is False and warm["dir"] == CACHE_TARGET
    assert any(p.name.endswith(compile_cache.ENTRY_SUFFIX) for p in staging.iterdir())
    compile_cache._seal(staging)
    sealed = {p.name: p.read_bytes() for p in staging.iterdir()}
    after = _report(staging)
    assert after == {"dir": CACHE_TARGET, "hit": True, "list": "EACCES", "write": "EROFS"}
    assert {p.name: p.read_bytes() for p in staging.iterdir()} == sealed


@ROOT_ONLY
def test_the_command_line_seals_each_exercise_it_grades_twice(released_course, tmp_path):
    nb = with_answer(released_notebook(released_course),
                     (samples_dir() / "reference.py").read_text())
    for name in ("a", "b"):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    proc = grader_cli(tmp_path / "a.ipynb", tmp_path / "b.ipynb", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    folder = compile_cache.sealed("update_with_donate")
    assert folder and os.path.dirname(folder) == str(compile_cache.ROOT)
    entries = list(os.scandir(folder))
    assert entries and all(e.stat(follow_symlinks=False).st_uid == 0
                           and stat.S_IMODE(e.stat().st_mode) == 0o644 for e in entries)


def test_no_cache_is_named_without_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert compile_cache.for_request("update_with_donate") == {}


@ROOT_ONLY
def test_sealing_keeps_only_entries_root_owned(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "abc-cache").write_bytes(b"x")
    (staging / "notes.txt").write_text("x")
    (staging / "sub").mkdir()
    (staging / "link-cache").symlink_to("/etc/passwd")
    (tmp_path / "elsewhere").write_text("x")
    os.link(tmp_path / "elsewhere", staging / "hard-cache")
    os.chown(staging / "abc-cache", 61000, 61000)
    compile_cache._seal(staging)
    assert sorted(p.name for p in staging.iterdir()) == ["abc-cache"]
    st = (staging / "abc-cache").stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644)
    assert stat.S_IMODE(staging.stat().st_mode) == 0o711


@ROOT_ONLY
def test_a_folder_not_sealed_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "ROOT", tmp_path / "root")
    compile_cache._make_root()
    folder = compile_cache.ROOT / compile_cache.key("update_with_donate")
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    assert compile_cache.sealed("update_with_donate") is None
    os.chmod(folder, 0o711)
    assert compile_cache.sealed("update_with_donate") == str(folder)
    os.chmod(compile_cache.ROOT, 0o755)
    assert compile_cache.sealed("update_with_donate") is None

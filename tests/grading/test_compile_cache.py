"""The grader's compile cache, without a learner's process: what names a folder of entries,
which folders and entries are trusted, and that a bad entry is a miss, never a program.
(Learners' attempts on it and grades with it: test_compile_cache_sandbox.py.)"""
import hashlib
import json
import os
import socket
import stat
import threading

import pytest

from autograder.sandbox import compile_cache, warm

SANDBOX_UID = 61999  # a sandbox uid (autograder/sandbox/uids.py), never leased by these tests
ENV = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_backend_optimization_level=0", "HOME": "/root"}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown)")


def test_the_key_follows_the_course(monkeypatch):
    """A new grading version, JAX, jaxlib, flag, platform, device count or machine names
    another folder; what JAX does not read (HOME) does not."""
    base = compile_cache.key("update_with_donate", "v1", ENV)
    assert base == compile_cache.key("update_with_donate", "v1", dict(ENV, HOME="/elsewhere"))
    changed = [compile_cache.key("update_with_donate", "v2", ENV),
               compile_cache.key("donation_report", "v1", ENV),
               compile_cache.key("update_with_donate", "v1", dict(ENV, XLA_FLAGS="")),
               compile_cache.key("update_with_donate", "v1", dict(ENV, JAX_PLATFORMS="cpu,tpu")),
               compile_cache.key("update_with_donate", "v1", dict(ENV, JAX_NUM_CPU_DEVICES="2")),
               compile_cache.key("update_with_donate", "v1", dict(
                   ENV, XLA_FLAGS=ENV["XLA_FLAGS"] + " --xla_force_host_platform_device_count=2"))]
    real = compile_cache._packages()
    for package in ("jax", "jaxlib"):
        monkeypatch.setattr(compile_cache, "_packages", lambda p=package: dict(real, **{p: "9.9.9"}))
        changed.append(compile_cache.key("update_with_donate", "v1", ENV))
    monkeypatch.setattr(compile_cache, "_machine", lambda: "another CPU")
    changed.append(compile_cache.key("update_with_donate", "v1", ENV))
    assert len({base, *changed}) == len(changed) + 1


def _folder(root, entries):
    """A published folder of ``entries`` (``{JAX key: bytes}``) under ``root``, as the
    warming process leaves it."""
    folder = root / "ex-key"
    folder.mkdir(mode=0o700)
    for name, raw in entries.items():
        path = folder / f"{name}{compile_cache.SUFFIX}"
        path.write_bytes(raw)
        path.chmod(0o600)
    listed = {n: hashlib.sha256(r).hexdigest() for n, r in entries.items()}
    (folder / compile_cache.MANIFEST).write_text(json.dumps({"key": {}, "entries": listed}))
    (folder / compile_cache.MANIFEST).chmod(0o600)
    return folder


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    tmp_path.chmod(0o755)
    return folder


# Each way an entry can differ from what the warming process wrote: (name, what is done to it)
SPOILED = {
    "flipped": lambda p: p.write_bytes(b"X" + p.read_bytes()[1:]),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:5]),
    "foreign": lambda p: p.write_bytes(b"another key's program, well formed"),
    "emptied": lambda p: p.write_bytes(b""),
    "removed": lambda p: p.unlink(),
    "a link": lambda p: (p.unlink(), p.symlink_to(p.parent / "good-cache")),
    "a hard link to another entry": lambda p: (p.unlink(), os.link(p.parent / "good-cache", p)),
    "a hard link to a learner's file": lambda p: (
        p.unlink(), (p.parent.parent / "mine").write_bytes(b"bad program"),
        os.chown(p.parent.parent / "mine", SANDBOX_UID, SANDBOX_UID),
        os.link(p.parent.parent / "mine", p)),
    "a learner's": lambda p: os.chown(p, SANDBOX_UID, SANDBOX_UID),
    "group-writable": lambda p: p.chmod(0o620),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
}


def served(folders, keys=("good", "bad", "planted", "other-key")):
    """``{key: entry}`` of ``keys`` that a supervisor serving ``folders`` answers with,
    asked through the socket a learner's process asks on (misses left out)."""
    ours, theirs = socket.socketpair()
    remote = compile_cache.Remote(theirs.detach(), "/nowhere")
    supervisor = compile_cache.Served(folders)
    got = {}
    for key in keys:
        answering = threading.Thread(target=compile_cache.answer, args=(ours, supervisor, [1]))
        answering.start()
        got[key] = remote.get(key)
        answering.join()
    ours.close()
    return {k: v for k, v in got.items() if v is not None}


@needs_root
@pytest.mark.parametrize("how", sorted(SPOILED))
def test_a_spoiled_entry_is_a_miss(root, how):
    """Only the entries whose bytes are the manifest's, in files root alone can write, are
    served; the spoiled one is a miss (compiled again), the others still serve."""
    folder = _folder(root, {"good": b"good program", "bad": b"bad program"})
    SPOILED[how](folder / f"bad{compile_cache.SUFFIX}")
    assert served([str(folder)]) == {"good": b"good program"}


@needs_root
def test_an_entry_the_manifest_does_not_list_is_not_served(root):
    folder = _folder(root, {"good": b"good program"})
    (folder / f"planted{compile_cache.SUFFIX}").write_bytes(b"planted")
    assert served([str(folder)]) == {"good": b"good program"}


def test_a_key_that_is_not_one_is_never_looked_up(tmp_path):
    """A learner's process asks with any bytes: a path, a long line, no newline."""
    class Counting(compile_cache.Served):
        asked = []

        def get(self, key):
            self.asked.append(key)
            return None

    for line in (b"../../etc/shadow\n", b"a/b\n", b"x" * 400 + b"\n", b"no newline", b"\n"):
        ours, theirs = socket.socketpair()
        theirs.sendall(line)
        compile_cache.answer(ours, Counting([]), [5])
        ours.close(), theirs.close()
    assert Counting.asked == []


def test_a_flood_of_requests_ends_the_answers():
    ours, theirs = socket.socketpair()
    theirs.sendall(b"k\n")
    assert compile_cache.answer(ours, compile_cache.Served([]), [0]) is False


# Each way a folder (or one above it) may have been written by someone other than root
UNTRUSTED = {
    "a learner's folder": lambda f: os.chown(f, SANDBOX_UID, SANDBOX_UID),
    "group-writable": lambda f: f.chmod(0o770),
    "writable by all": lambda f: f.chmod(0o707),
    "a learner's folder above": lambda f: os.chown(f.parent.parent, SANDBOX_UID, SANDBOX_UID),
    "a folder above writable by all": lambda f: f.parent.parent.chmod(0o777),
    "a learner's manifest": lambda f: os.chown(f / compile_cache.MANIFEST, SANDBOX_UID, SANDBOX_UID),
    "a manifest writable by all": lambda f: (f / compile_cache.MANIFEST).chmod(0o666),
    "a linked manifest": lambda f: ((f / "m").write_text((f / compile_cache.MANIFEST).read_text()),
                                    (f / compile_cache.MANIFEST).unlink(),
                                    (f / compile_cache.MANIFEST).symlink_to(f / "m")),
    "no manifest": lambda f: (f / compile_cache.MANIFEST).unlink(),
    "a manifest that is not JSON": lambda f: (f / compile_cache.MANIFEST).write_text("{"),
}


@needs_root
@pytest.mark.parametrize("how", sorted(UNTRUSTED))
def test_a_folder_someone_else_could_write_is_not_read(root, how):
    folder = _folder(root, {"good": b"good program"})
    UNTRUSTED[how](folder)
    assert served([str(folder)]) == {}


@needs_root
def test_a_folder_reached_through_a_link_is_not_read(root):
    folder = _folder(root, {"good": b"good program"})
    (root / "link").symlink_to(folder)
    assert served([str(root / "link")]) == {}
    assert "symbolic link" in compile_cache.untrusted(root / "link")


@needs_root
def test_a_sticky_folder_above_is_trusted(tmp_path):
    """Like /tmp: writable by all, but no one can rename or remove what root made there."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o777 | stat.S_ISVTX)
    tmp_path.chmod(0o755)
    (sticky / "cache").mkdir(mode=0o700)
    assert compile_cache.untrusted(sticky / "cache") is None
    (sticky / "cache").chmod(0o777 | stat.S_ISVTX)  # the cache itself: never
    assert "writable by others" in compile_cache.untrusted(sticky / "cache")
    (sticky / "cache").chmod(0o700)
    sticky.chmod(0o777)
    assert "writable by others" in compile_cache.untrusted(sticky / "cache")


def test_no_cache_unless_grading_runs_as_root(monkeypatch, tmp_path):
    """Otherwise learner code runs as the grader's own user, who can write the cache."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "not run as root" in compile_cache.problem(tmp_path)
    assert "off" in compile_cache.problem(None)
    assert compile_cache.ready({"update_with_donate": "v1"}, ENV, folder=tmp_path) == []


@needs_root
def test_a_new_grading_version_is_never_served_the_old_folder(root, monkeypatch):
    """The folder warmed for one grading version is not the next's: that one is warmed
    (a process started) and this grading goes without a cache meanwhile."""
    started = []
    monkeypatch.setattr(compile_cache, "start_warming", lambda *a: started.append(a[0]))
    old = root / compile_cache.key("update_with_donate", "v1", ENV)
    old.mkdir(mode=0o700)
    (old / compile_cache.MANIFEST).write_text('{"key": {}, "entries": {}}')
    assert compile_cache.ready({"update_with_donate": "v1"}, ENV, folder=root) == [str(old)]
    assert started == []
    assert compile_cache.ready({"update_with_donate": "v2"}, ENV, folder=root) == []
    assert started == ["update_with_donate"]


def test_what_a_learner_process_writes_goes_nowhere():
    ours, theirs = socket.socketpair()
    remote = compile_cache.Remote(theirs.detach(), "/nowhere")
    remote.put("k", b"planted")
    ours.setblocking(False)
    with pytest.raises(BlockingIOError):
        ours.recv(1)  # nothing was sent to the supervisor
    ours.close()


@pytest.mark.parametrize("exercise", ["update_with_donate", "fix_training_loop"])
def test_every_sample_right_or_wrong_is_warmed(exercise):
    """The warming runs: the source notebook, then each sample answer in its answer cell,
    full-mark and wrong alike (a hit must not tell a right program from a wrong one)."""
    from autograder import exercises

    runs = warm.warming_runs(exercise)
    samples = sorted(exercises.get(exercise).samples.glob("*.py"))
    answers = [[c["source"] for c in run if c["label"] == "the answer cell"] for run in runs]
    assert all(len(a) == 1 for a in answers)
    assert [a[0] for a in answers[1:]] == [p.read_text() for p in samples]
    expected = json.loads((exercises.get(exercise).samples / "expected.json").read_text())
    assert any(w.get("failed") for w in expected.values() if isinstance(w, dict))


def test_a_supervisor_that_stops_answering_leaves_misses_without_a_warning(recwarn):
    """A closed socket is a miss, never an error JAX would warn of (the probes record
    warnings, so one would reach the grade)."""
    ours, theirs = socket.socketpair()
    remote = compile_cache.Remote(theirs.detach(), "/nowhere")
    ours.close()
    assert (remote.get("k"), remote.get("k"), remote.misses) == (None, None, 2)
    assert len(recwarn) == 0


def test_a_failed_warming_is_not_retried_at_every_grading(monkeypatch, tmp_path):
    """A grading service asks for every grading: one warming process at a time, and after
    one that ended without a warm folder, none again for a while."""
    started = []

    class Ended:
        def __init__(self, *args, **kwargs):
            started.append(args)

        def poll(self):
            return 1

    monkeypatch.setattr(compile_cache.subprocess, "Popen", Ended)
    monkeypatch.setattr(compile_cache, "_warming", {})
    for _ in range(3):
        compile_cache.start_warming("update_with_donate", tmp_path, ENV)
    assert len(started) == 1
    compile_cache.start_warming("update_with_donate", tmp_path, ENV, retry_s=0)
    assert len(started) == 2

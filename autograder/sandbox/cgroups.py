"""Cgroups that end what they contain as a whole (``cgroup.kill``) and bound it (memory,
processes, CPU), on cgroup v2 hosts and on v1 or hybrid ones alike.

Runs in the supervisor's process (a group per submission, named by its sandbox uid,
:func:`make_submission_group`), the grader's (:func:`problem`, and the sweep of a
leased uid's group, :func:`autograder.sandbox.uids.lease_uid`) and the hub's (a group
per learner's server, ``deploy/hub/course_spawner.py``), always as root.

A process moved into a cgroup stays there with everything it starts, whatever their
uids, sessions or parents become; only root may move a process out (the folders are
root's). ``cgroup.kill`` (Linux 5.14) SIGKILLs every process in it at once, including
those forked meanwhile. Hosts with only cgroup v1, or an older kernel, get None from
:func:`make`: the callers then end processes by uid, and say so in their log. So do
graders in a container, whose cgroup hierarchies are mounted read-only (Docker's default):
no group is made there, the container's own cgroup bounds the grader and all its
submissions together, and each submission keeps its rlimits.
Making a group, moving a process in, killing and removing it costs a few ms,
most of it the move (``benchmarks/cgroup.py``).

The limits (:func:`limited`, a :class:`Group`) go where each controller is: a controller
enabled in the v2 tree gets its v2 files (``memory.max``, ``pids.max``, ``cpu.weight``,
``cpu.max``); one mounted in a v1 hierarchy of its own instead (hybrid hosts, as ones
without systemd often are) gets a group of the same names there (``memory.limit_in_bytes``,
``pids.max``, ``cpu.shares``, ``cpu.cfs_quota_us``). A controller can be in one place only,
so each limit is set once. Either way the kernel counts every process of the group
together: at the memory limit it reclaims, then kills one of them (the largest, the OOM
killer) and counts it (:meth:`Group.memory_kills`); at the process limit ``fork`` fails.
"""
from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX = "course-sandbox"  # <cgroup root>/course-sandbox/<sandbox uid>: one submission
CONTROLLERS = ("memory", "pids", "cpu")  # those :func:`limited` bounds, in v2 or else in v1


def _mounts():
    """``(mount point, file system type, its options)`` of each mount this process sees
    (``/proc/self/mountinfo``; none when it cannot be read)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        after = fields.index("-")  # then: type, source, the super block's options
        yield Path(fields[4]), fields[after + 1], fields[after + 3].split(",")


def v2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or, on hybrid hosts,
    ``/sys/fs/cgroup/unified``), or None."""
    return next((where for where, kind, _ in _mounts() if kind == "cgroup2"), None)


def make(*names: str) -> Path | None:
    """A new (or reused) cgroup ``<root>/<names...>`` that :func:`kill` can end, or None
    where cgroup v2 with ``cgroup.kill`` is unavailable. Raises OSError when it exists
    but cannot be made (not root)."""
    root = v2_root()
    if root is None:
        return None
    group = root.joinpath(*names)
    try:
        group.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if error.errno == errno.EROFS:  # a container's read-only view (see the module)
            return None
        raise
    if not (group / "cgroup.kill").exists():
        return None
    return group


def join(group: Path, pid: int = 0):
    """Move ``pid`` (0: the calling process) into ``group``; raises OSError."""
    (group / "cgroup.procs").write_text(f"{pid}\n")


def kill(group: Path, wait_s: float = 10.0) -> bool:
    """SIGKILL every process in ``group``, wait until it is empty (up to ``wait_s``;
    zombies do not count) and remove it. True when it is gone (or was never there)."""
    try:
        (group / "cgroup.kill").write_text("1\n")
    except FileNotFoundError:
        return True
    deadline = time.monotonic() + wait_s
    while "populated 1" in (group / "cgroup.events").read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    try:
        os.rmdir(group)
    except FileNotFoundError:
        pass
    return True


def submission_group(uid: int) -> Path | None:
    """The cgroup of the submission running as sandbox ``uid`` (whose lease makes it the
    only one): its path, whether or not it exists; None without cgroup v2."""
    root = v2_root()
    return root / SANDBOX / str(uid) if root is not None else None


def make_submission_group(uid: int, processes: int, memory_mib: int | None = None) -> Group:
    """The :class:`Group` of the submission running as sandbox ``uid`` (:func:`limited`
    below ``course-sandbox/<uid>``): ``processes`` processes and threads and ``memory_mib``
    MiB of memory across all its processes, where those controllers are. Raises OSError
    when it cannot be made (not root)."""
    return limited((SANDBOX, str(uid)), memory_mib=memory_mib, processes=processes)


def problem() -> str | None:
    """Why a submission's processes would be ended by uid only (not root, no cgroup v2,
    no ``cgroup.kill``), or None when each gets a cgroup. Makes and removes a probe group."""
    if os.geteuid() != 0:
        return "not root"
    root = v2_root()
    if root is None:
        return "no cgroup v2 is mounted"
    probe = root / f"{SANDBOX}-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as error:
        return f"no cgroup can be made in {root}: {error.strerror}"
    try:
        return None if (probe / "cgroup.kill").exists() else "this kernel has no cgroup.kill"
    finally:
        os.rmdir(probe)


def v1_root(controller: str) -> Path | None:
    """Where the cgroup v1 hierarchy holding ``controller`` (``memory``, ``pids``, ``cpu``)
    is mounted, or None (a v2-only host, or a controller it does not have)."""
    return next((where for where, kind, options in _mounts()
                 if kind == "cgroup" and controller in options), None)


def _v2_has(controller: str) -> bool:
    root = v2_root()
    try:
        return root is not None and controller in (root / "cgroup.controllers").read_text().split()
    except OSError:
        return False


def _delegate(root: Path, names, controller: str):
    """Enable ``controller`` for the children of every folder from ``root`` down to the
    parent of ``root/names`` (v2 hands a controller down one level at a time)."""
    folder = root
    for name in names[:-1]:
        control = folder / "cgroup.subtree_control"
        if controller not in control.read_text().split():
            control.write_text(f"+{controller}\n")
        folder = folder / name
        folder.mkdir(exist_ok=True)
    control = folder / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        control.write_text(f"+{controller}\n")


@dataclass
class Group:
    """One process tree's cgroups: ``v2``, its cgroup v2 folder (None without cgroup v2 with
    ``cgroup.kill``), which ends it; ``v1``, ``{controller: folder}`` in the v1 hierarchies
    of the controllers only v1 has here; ``bounds``, ``{resource: (value, where)}`` of
    what is bounded (``memory`` in MiB, ``processes``, ``cpu`` weight, ``cpus``; where is
    ``"v1"`` or ``"v2"``), a resource left out being unbounded here."""

    v2: Path | None = None
    v1: dict = field(default_factory=dict)
    bounds: dict = field(default_factory=dict)

    def folders(self) -> list[Path]:
        return [*([self.v2] if self.v2 else []), *self.v1.values()]

    def join(self, pid: int = 0):
        """Move ``pid`` (0: the calling process) into every folder; raises OSError."""
        for folder in self.folders():
            join(folder, pid)

    def kill(self, wait_s: float = 10.0) -> bool:
        """SIGKILL everything in the group (``cgroup.kill`` in v2, then whatever a v1 folder
        still lists), wait until each folder is empty and remove it. True when all are gone."""
        gone = self.v2 is None or kill(self.v2, wait_s)
        for folder in self.v1.values():
            gone = _kill_v1(folder, wait_s) and gone
        return gone

    def memory_kills(self) -> int:
        """Processes of the group the kernel killed at its memory limit, so far (0 where
        memory is not bounded, or the group is gone)."""
        if "memory" not in self.bounds:
            return 0
        where = self.bounds["memory"][1]
        path = ((self.v2 / "memory.events") if where == "v2"  # type: ignore[operator]  # v2 bounds: a v2 group
                else (self.v1["memory"] / "memory.oom_control"))
        try:
            for line in path.read_text().splitlines():
                key, value = line.split()
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0


def _kill_v1(folder: Path, wait_s: float) -> bool:
    """SIGKILL what a v1 folder lists until it lists nothing (what one forks meanwhile is
    listed there too, bounded by its ``pids.max``), then remove it."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return True
        if not pids:
            try:
                os.rmdir(folder)
                return True
            except FileNotFoundError:
                return True
            except OSError:  # busy a moment longer: exiting tasks still charged
                pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


# controller -> the v2 file(s) and the v1 file(s) each bound is written to, as text
def _memory_files(mib):
    limit = mib * 2**20
    return ({"memory.max": limit, "memory.swap.max": 0},
            {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit})


def _cpu_files(weight, cpus):
    v2 = {"cpu.weight": weight} if weight else {}
    v1 = {"cpu.shares": weight * 1024 // 100} if weight else {}
    if cpus:
        v2["cpu.max"] = f"{int(cpus * 100000)} 100000"
        v1.update({"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": int(cpus * 100000)})
    return v2, v1


def limited(names, memory_mib: int | None = None, processes: int | None = None,
            cpu_weight: int | None = None, cpus: float | None = None) -> Group:
    """A new :class:`Group` ``<root>/<names...>`` in every hierarchy (emptied first where one
    was left), bounded where each controller is (see the module): ``memory_mib`` MiB of
    memory (no swap), ``processes`` processes and threads, ``cpu_weight`` (v2's
    ``cpu.weight``, 100 = an equal share; v1's ``cpu.shares`` scaled to match) and ``cpus``
    (at most that many cores' time); None leaves one unbounded. Raises OSError when a
    group cannot be made (not root)."""
    group = Group(v2=make(*names))
    wanted = {"memory": (memory_mib, _memory_files(memory_mib) if memory_mib else None),
              "pids": (processes, ({"pids.max": processes}, {"pids.max": processes})
                       if processes else None),
              "cpu": (cpu_weight or cpus, _cpu_files(cpu_weight, cpus)
                      if cpu_weight or cpus else None)}
    for controller, (value, files) in wanted.items():
        if files is None:
            continue
        if group.v2 is not None and _v2_has(controller):
            _delegate(v2_root(), names, controller)  # type: ignore[arg-type]  # a v2 group: a v2 root
            folder, written, where = group.v2, files[0], "v2"
        elif (root := v1_root(controller)) is not None:
            folder = root.joinpath(*names)
            if folder.exists() and not _kill_v1(folder, 10.0):
                raise OSError(f"could not empty the cgroup {folder}")
            try:
                folder.mkdir(parents=True)
            except OSError as error:
                if error.errno != errno.EROFS:
                    raise
                continue  # a container's read-only view: its own cgroup bounds it whole
            group.v1[controller] = folder
            written, where = files[1], "v1"
        else:
            continue
        for name, text in written.items():
            if (folder / name).exists():
                (folder / name).write_text(f"{text}\n")
        resource = {"pids": "processes"}.get(controller, controller)
        if controller == "cpu":
            group.bounds.update({k: (v, where) for k, v in (("cpu", cpu_weight), ("cpus", cpus)) if v})
        else:
            group.bounds[resource] = (value, where)
    return group


def found(*names: str) -> Group:
    """The :class:`Group` ``<root>/<names...>`` as far as its folders exist (one a crashed
    run left), for :meth:`Group.kill`; its bounds are not read back."""
    root = v2_root()
    v2 = root.joinpath(*names) if root is not None else None
    v1 = {c: r.joinpath(*names) for c in CONTROLLERS if (r := v1_root(c)) is not None}
    return Group(v2=v2 if v2 is not None and v2.exists() else None,
                 v1={c: f for c, f in v1.items() if f.exists()})

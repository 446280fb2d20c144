"""A two-node Docker Swarm on this one machine, made and removed by the tests, and the
course image built for it (deploy/image/Dockerfile) without a registry.

Each node is a ``dockerd`` (Debian's docker.io) with its own data root, exec root, socket
and cgroup parent, all under one folder of this run, in a network namespace of its own
that the test makes (``nsenter --net``: ``ip netns exec`` remounts /sys, and dockerd then
finds no devices cgroup). Three veth pairs join them, every address in 10.<n>.0.0/16 with
``n`` picked unused on this machine: host-node A, host-node B (the hub on the host reaches
each node's published ports there) and A-B (the swarm's own traffic). Each node's bridge
(``--icc=false``) holds its learners' containers. Nothing else on the machine is touched:
every process is ended by its pid, every mount under the run's folder unmounted, the
namespaces and links deleted (:meth:`Cluster.remove`), also after a failure.

The image is built once per content (Dockerfile, pins, the staged course) by a third,
short-lived engine on the host's network (its pip reaches PyPI with the host's CA
bundle as a build secret), saved to ``~/.cache/course-tests`` and loaded on each node
(``docker save``/``docker load``): CI pays the build once.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.course import REPO

DOCKER = "/usr/bin/docker"  # Debian's client, the daemon's own version (BuildKit's secrets)
DOCKERD = "/usr/sbin/dockerd"
CACHE = Path(os.environ.get("COURSE_CACHE", Path.home() / ".cache" / "course-tests"))
IMAGE = "course-server:test"
WORKER_IMAGE = "course-worker:test"  # deploy/image/worker.Dockerfile, on IMAGE
BASE = "course-base:trixie"
# What the image holds, besides deploy/image/: its key (a change builds it again)
IMAGE_INPUTS = ("requirements.txt", "scripts/jupyter_local.py", "deploy/hub/learner_home.py",
                "autograder/learner_submit.py", "autograder/defaults.py",
                "_build/html/_notebooks/lessons", "exercises/release", "deploy/image",
                # and what the workers' image adds (the grader, its hidden tests)
                "autograder", "exercises/source", "exercises/nbgrader_config.py")
WAIT_S = 120
CPU_SHARES = 8  # a node's containers weigh as this many processes (Engine.share_cpu)


def available() -> str | None:
    """Why this machine cannot run the tier (None when it can): root, Debian's docker.io,
    mmdebstrap, nsenter."""
    if os.geteuid() != 0:
        return "the swarm tier runs as root (dockerd, network namespaces)"
    missing = [p for p in (DOCKER, DOCKERD, "/usr/bin/mmdebstrap", "/usr/bin/nsenter")
               if not os.path.exists(p)]
    return f"missing {', '.join(missing)} (.ci/run installs docker.io, mmdebstrap)" if missing else None


def run(*argv, check=True, timeout=600, **kwargs) -> subprocess.CompletedProcess:
    """``argv`` run to its end, its output captured (shown when it fails)."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(map(str, argv))} -> {done.returncode}:\n"
                           f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return done


class Engine:
    """One ``dockerd`` under ``root`` (``<root>/data``, ``<root>/exec``, ``<root>/docker.sock``),
    in network namespace ``netns`` (a /run/netns name) or the host's (None)."""

    def __init__(self, root: Path, netns: str | None, *flags: str):
        self.root, self.netns, self.proc = root, netns, None
        self.sock = root / "docker.sock"
        self.flags = list(flags)

    @property
    def env(self) -> dict:
        return dict(os.environ, DOCKER_HOST=f"unix://{self.sock}", DOCKER_BUILDKIT="1")

    def start(self):
        """Start the daemon; return once it answers (RuntimeError when it does not)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.share_cpu()
        argv = [DOCKERD, "--data-root", self.root / "data", "--exec-root", self.root / "exec",
                "--pidfile", self.root / "dockerd.pid", "-H", f"unix://{self.sock}",
                "--storage-driver", "overlay2", *self.flags]
        if self.netns:
            argv = ["nsenter", f"--net=/run/netns/{self.netns}", *argv]
        log = open(self.root / "dockerd.log", "ab")
        # a swarm task's image is used as the node has it, never pulled (no registry)
        env = dict(os.environ, DOCKER_SERVICE_PREFER_OFFLINE_IMAGE="1")
        self.proc = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=log, env=env,
                                     start_new_session=True)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited: {self.log()}")
            if self.docker("version", check=False).returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"dockerd did not answer: {self.log()}")

    def share_cpu(self):
        """Weigh the engine's containers, all in one cgroup (cgroup v1: one entity beside
        every process of the machine's root group), as :data:`CPU_SHARES` processes: on a
        busy machine a node's learners' servers would otherwise starve together."""
        group = Path("/sys/fs/cgroup/cpu") / self.cgroup_parent()
        if (group.parent / "cpu.shares").exists():
            group.mkdir(exist_ok=True)
            (group / "cpu.shares").write_text(str(CPU_SHARES * 1024))

    def docker(self, *args, check=True, timeout=600, **kwargs) -> subprocess.CompletedProcess:
        return run(DOCKER, *args, check=check, timeout=timeout, env=self.env, **kwargs)

    def log(self) -> str:
        return (self.root / "dockerd.log").read_text(errors="replace")[-3000:]

    def kill(self):
        """SIGKILL the daemon alone (a node lost: its containerd and shims keep running)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def end(self):
        """End the daemon and everything it started, by pid: its containerd, the shims and
        every process of its containers (their cgroups' members), then unmount all under
        its root."""
        self.kill()
        root = str(self.root)
        for _ in range(3):
            for proc in psutil.process_iter(["cmdline"]):
                try:
                    if root in " ".join(proc.info["cmdline"] or ()):
                        proc.kill()
                except psutil.Error:
                    pass
            for procs in Path("/sys/fs/cgroup").glob(f"*/{self.cgroup_parent()}/**/cgroup.procs"):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.3)
        unmount_under(self.root)
        for group in sorted(Path("/sys/fs/cgroup").glob(f"*/{self.cgroup_parent()}/**/"),
                            key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                group.rmdir()

    def cgroup_parent(self) -> str:
        return next((f.split("=", 1)[1].strip("/") for f in self.flags
                     if f.startswith("--cgroup-parent=")), "docker")


def unmount_under(root: Path):
    """Lazily unmount every mount at or below ``root``, deepest first."""
    prefix = str(root)
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for point in sorted((p for p in points if p == prefix or p.startswith(prefix + "/")),
                        key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def free_net() -> ipaddress.IPv4Network:
    """A 10.<n>.0.0/16 no route of this machine (or another test's namespace link) overlaps."""
    routes = run("ip", "-4", "route", "show", "table", "all").stdout
    used = {ipaddress.ip_network(w, strict=False) for w in routes.split()
            if "/" in w and w[0].isdigit()}
    for n in secrets.SystemRandom().sample(range(100, 250), 150):
        net = ipaddress.ip_network(f"10.{n}.0.0/16")
        if not any(net.overlaps(u) for u in used) and f"10.{n}." not in routes:
            return net
    raise RuntimeError("no free 10.x.0.0/16")


class Cluster:
    """The two nodes (``nodes["a"]``, the manager, and ``nodes["b"]``), their namespaces
    and links: :meth:`make`, then :meth:`remove` (also when make failed half way).
    ``address[name]``: where the host reaches node ``name``; ``manager``: node A's Engine."""

    def __init__(self, root: Path):
        self.tag = secrets.token_hex(3)
        self.root = root
        self.net = free_net()
        base = self.net.network_address
        self.host_side = {"a": base + 1 * 256 + 1, "b": base + 2 * 256 + 1}
        self.address = {"a": base + 1 * 256 + 2, "b": base + 2 * 256 + 2}
        self.swarm_address = {"a": base + 3 * 256 + 1, "b": base + 3 * 256 + 2}
        self.netns = {n: f"crsw{self.tag}{n}" for n in "ab"}
        self.links = []  # host-side veth names, deleted with their peers
        self.nodes = {}
        self.node_ids = {}

    @property
    def manager(self) -> Engine:
        return self.nodes["a"]

    def make(self):
        # the nodes' images and containers in memory: removed at once by an unmount
        self.root.mkdir(parents=True)
        run("mount", "-t", "tmpfs", "-o", "size=6g,mode=0755", "crsw", self.root)
        for name in "ab":
            run("ip", "netns", "add", self.netns[name])
            self._veth(f"cw{self.tag}{name}", "uplink", None, self.host_side[name], name,
                       self.address[name])
            self.in_ns(name, "ip", "link", "set", "lo", "up")
        peer = f"cw{self.tag}s"
        run("ip", "link", "add", peer + "a", "type", "veth", "peer", "name", peer + "b")
        for name in "ab":
            run("ip", "link", "set", peer + name, "netns", self.netns[name], "name", "swarm0")
            self.in_ns(name, "ip", "addr", "add", f"{self.swarm_address[name]}/24", "dev", "swarm0")
            self.in_ns(name, "ip", "link", "set", "swarm0", "up")
        base = self.net.network_address
        for i, name in enumerate("ab"):
            bridge = base + (10 + i) * 256 + 1
            self.nodes[name] = Engine(
                self.root / name, self.netns[name], f"--bip={bridge}/24", "--icc=false",
                f"--cgroup-parent=/crsw{self.tag}{name}",
                f"--default-address-pool=base={base + 128 * 256}/17,size=24")
            self.nodes[name].start()
        a, b = self.nodes["a"], self.nodes["b"]
        sa = self.swarm_address
        a.docker("swarm", "init", "--advertise-addr", sa["a"], "--listen-addr", f"{sa['a']}:2377")
        token = a.docker("swarm", "join-token", "-q", "worker").stdout.strip()
        b.docker("swarm", "join", "--token", token, "--advertise-addr", sa["b"],
                 "--listen-addr", f"{sa['b']}:2377", f"{sa['a']}:2377")
        for name, node in self.nodes.items():
            node_id = node.docker("info", "--format", "{{.Swarm.NodeID}}").stdout.strip()
            self.node_ids[name] = node_id
            # where the hub reaches this node's published ports (deploy/hub/swarm_spawner.py)
            a.docker("node", "update", "--label-add", f"course.address={self.address[name]}",
                     node_id)

    def _veth(self, host_name, ns_name, _, host_ip, node, node_ip):
        run("ip", "link", "add", host_name, "type", "veth", "peer", "name", host_name + "p")
        self.links.append(host_name)
        run("ip", "link", "set", host_name + "p", "netns", self.netns[node], "name", ns_name)
        run("ip", "addr", "add", f"{host_ip}/24", "dev", host_name)
        run("ip", "link", "set", host_name, "up")
        self.in_ns(node, "ip", "addr", "add", f"{node_ip}/24", "dev", ns_name)
        self.in_ns(node, "ip", "link", "set", ns_name, "up")
        # the node's way to the hub's host, only there (the learners' containers are NATed
        # out here): no default route, so nothing leaves for another address
        self.in_ns(node, "ip", "route", "add", str(self.net), "via", str(host_ip))

    def in_ns(self, node, *argv, check=True):
        return run("nsenter", f"--net=/run/netns/{self.netns[node]}", *argv, check=check)

    def load(self, tarball: Path):
        """``docker load`` the image ``tarball`` on every node (there is no registry)."""
        for node in self.nodes.values():
            node.docker("load", "-i", tarball)

    def remove(self):
        """End both daemons and all they started, delete the namespaces, links and folder."""
        for node in self.nodes.values():
            with contextlib.suppress(Exception):
                node.end()
        for name in self.netns.values():
            run("ip", "netns", "del", name, check=False)
        for link in self.links:
            run("ip", "link", "del", link, check=False)
        unmount_under(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


def image_key() -> str:
    """A digest of what the course image holds (:data:`IMAGE_INPUTS`) and its base."""
    digest = hashlib.sha256(base_tarball().name.encode())
    for rel in IMAGE_INPUTS:
        path = REPO / rel
        for file in sorted([path] if path.is_file() else path.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def base_tarball() -> Path:
    """The base's tarball as deploy/image/build_base.sh names it (made there when missing)."""
    found = sorted(CACHE.glob("trixie-minbase-*.tar"))
    return found[-1] if found else CACHE / "trixie-minbase-unmade.tar"


def course_image(root: Path) -> Path:
    """The course image and the workers' image on it, saved as one tarball in :data:`CACHE`
    (built first when their inputs changed): deploy/image/build_base.sh's base, then
    ``docker build`` of each, in an engine of its own on the host's network, ended
    afterwards."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "course-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait, then reuse
        return _built(root)


def _built(root: Path) -> Path:
    saved = CACHE / f"course-server-{image_key()}.tar"
    if saved.exists():
        return saved
    # its data root kept in the cache: an unchanged pip layer is not installed again
    builder = Engine(CACHE / "build-engine", None, "--bridge=none", "--iptables=false",
                     "--ip-masq=false", f"--cgroup-parent=/crsw-build{secrets.token_hex(3)}")
    builder.start()
    try:
        run(REPO / "deploy" / "image" / "build_base.sh", BASE, env=builder.env)
        for dockerfile, tag in (("Dockerfile", IMAGE), ("worker.Dockerfile", WORKER_IMAGE)):
            builder.docker("build", "--network", "host", "--build-arg", f"BASE={BASE}",
                           "--build-arg", f"SERVER={IMAGE}",
                           "--secret", "id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt",
                           "-f", REPO / "deploy" / "image" / dockerfile, "-t", tag, REPO,
                           timeout=1800)
        builder.docker("save", "-o", f"{saved}.part", IMAGE, WORKER_IMAGE)  # layers shared
        os.replace(f"{saved}.part", saved)
        for old in CACHE.glob("course-server-*.tar"):
            if old != saved:
                old.unlink()
    finally:
        builder.end()
    return saved

"""The learners' servers on a Docker Swarm (``make hub`` with ``HUB_SPAWNER=swarm``).

:class:`CourseSwarmSpawner` is dockerspawner's :class:`~dockerspawner.SwarmSpawner`: each
learner's JupyterLab is a swarm service of one task running the course image
(deploy/image/Dockerfile), on whichever node the swarm picks (spread over the nodes), with

* **her own uid**: the task runs as the learner's system user's uid and gid (PAM or the
  user an LTI launch made), never root, no capabilities gained (``no-new-privileges``);
* **limits** (:func:`settings`): memory (``HUB_MEMORY_MIB``: a process past it is
  killed by the node's kernel, her other containers' and other learners' untouched),
  CPU (``HUB_CPUS``), processes (``HUB_PROCESSES``, the task's pids cgroup), and
  lowered ``nofile``/``nproc`` rlimits (``HUB_SWARM_NOFILE``, ``HUB_SWARM_NPROC``: the
  engine's defaults ask for more than a node's root may give where it lacks
  CAP_SYS_RESOURCE, and nproc counts her uid's processes on the node);
* **her home on shared storage**: ``HUB_SWARM_HOMES/<name>`` (made by the hub, hers,
  mode 0700) bound at ``/home/learner`` wherever the task runs, so her notebooks outlive
  the node (the folder must be the same shared file system on every node: NFS or alike;
  on one machine it is);
* **its own network namespace**: the node's bridge, its port published on the node
  (``mode=host``) where the hub's proxy reaches it; the node's address is its label
  ``course.address`` when set (a node whose swarm address the hub cannot reach), else
  the swarm's. What the server itself may reach is the node's firewall's to say
  (deploy/swarm/node_rules.sh: the hub's API and the grading service, nothing else).

Raises nothing of its own: dockerspawner's errors (the engine unreachable, no node
with the image) end the start, and the hub says the server failed to start.
"""
from __future__ import annotations

import os
import pwd
from pathlib import Path

from dockerspawner import SwarmSpawner
from jupyter_server import DEFAULT_JUPYTER_SERVER_PORT
from traitlets import Integer, Unicode

from autograder.defaults import hub_setting as setting

HOME = "/home/learner"  # the image's learner home (deploy/image/Dockerfile)
PORT = DEFAULT_JUPYTER_SERVER_PORT  # where the server listens in its container
class CourseSwarmSpawner(SwarmSpawner):
    """SwarmSpawner with the course's uid, limits, home and routing (see the module)."""

    homes = Unicode("", config=True, help="Shared folder holding each learner's home.")
    pids = Integer(0, config=True, help="Processes and threads of the server (0: unbounded).")
    nofile = Integer(1024, config=True, help="RLIMIT_NOFILE of the server's processes.")
    nproc = Integer(4096, config=True, help="RLIMIT_NPROC of the learner's uid on the node.")

    def learner_ids(self) -> tuple[int, int]:
        """The learner's system uid and gid (KeyError: no such user on the hub's machine)."""
        entry = pwd.getpwnam(self.user.name)
        return entry.pw_uid, entry.pw_gid

    def home(self) -> Path:
        """``<homes>/<name>``, made hers (mode 0700) when missing."""
        path = Path(self.homes) / self.user.name
        uid, gid = self.learner_ids()
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chown(path, uid, gid)
        path.chmod(0o700)
        return path

    async def create_object(self):
        """The learner's service, as SwarmSpawner makes it plus what its constructor
        cannot say (the uid, ulimits, the pids limit, the port published on the node)."""
        uid, gid = self.learner_ids()
        home = self.home()
        env = dict(self.get_env(), HOME=HOME)
        container = {
            "Image": self.image, "Args": await self.get_command(), "Env": [
                f"{k}={v}" for k, v in env.items()],
            "User": f"{uid}:{gid}", "Dir": HOME,
            "Mounts": [{"Type": "bind", "Source": str(home), "Target": HOME}],
            "Privileges": {"NoNewPrivileges": True},
            "Ulimits": [{"Name": "nofile", "Soft": self.nofile, "Hard": self.nofile},
                        {"Name": "nproc", "Soft": self.nproc, "Hard": self.nproc}],
        }
        limits = {}
        if self.mem_limit:
            limits["MemoryBytes"] = int(self.mem_limit)
        if self.cpu_limit:
            limits["NanoCPUs"] = int(self.cpu_limit * 1e9)
        if self.pids:
            limits["Pids"] = self.pids
        task = {"ContainerSpec": container, "Resources": {"Limits": limits},
                "Placement": {"Preferences": [{"Spread": {"SpreadDescriptor": "node.id"}}]},
                "RestartPolicy": {"Condition": "any", "Delay": 1_000_000_000},
                "Networks": []}
        endpoint = {"Ports": [{"Protocol": "tcp", "TargetPort": PORT, "PublishMode": "host"}]}
        service = await self.docker("create_service", task_template=task,
                                    endpoint_spec=endpoint, name=self.service_name,
                                    labels={"course.learner": self.user.name})
        return service

    _task = None  # the ID of the task the hub routes to, once it runs

    async def poll(self):
        """SwarmSpawner's poll, and 1 when the swarm runs her server as another task than
        the one the hub routes to (its node was lost, the task started elsewhere): the hub
        then stops it and drops the stale route, and her next start (on a node that
        answers, her home as she left it) is routed afresh."""
        status = await super().poll()
        if status is not None or self._task is None:
            return status
        task = await self.get_task()
        if task is None:  # (its service removed meanwhile)
            return 0
        if task["ID"] != self._task:
            self.log.warning("%s's server left its node (lost?): stopped, to start again",
                             self.user.name)
            return 1
        return None

    async def get_ip_and_port(self):
        """The node's address (its ``course.address`` label, else its swarm address) and
        the port the task's server is published at there."""
        task = await self.get_task()
        node = await self.docker("inspect_node", task["NodeID"])
        address = node["Spec"].get("Labels", {}).get("course.address") or node["Status"]["Addr"]
        ports = task["Status"].get("PortStatus", {}).get("Ports", [])
        port = next((p["PublishedPort"] for p in ports if p.get("TargetPort") == PORT), None)
        if port is None:
            raise RuntimeError(f"{self.service_name}: no port published for its server")
        self._task = task["ID"]
        return address, port


def configure(c, state: Path, grader_port: str) -> str:
    """Set ``c`` (the hub's config; ``state``: its state folder, ``grader_port``: the
    grading service's) for servers on the swarm; returns the address the hub's API and
    the grading service listen on (``HUB_SWARM_HUB_IP``). SystemExit when it is unset
    (the nodes could reach neither)."""
    hub_ip = setting("HUB_SWARM_HUB_IP")
    if not hub_ip:
        raise SystemExit("==> HUB_SPAWNER=swarm needs HUB_SWARM_HUB_IP: the address of this "
                         "machine the swarm's nodes reach it at")
    os.environ["DOCKER_HOST"] = setting("HUB_SWARM_DOCKER_HOST")
    c.JupyterHub.spawner_class = CourseSwarmSpawner
    c.JupyterHub.hub_ip = hub_ip
    c.CourseSwarmSpawner.image = setting("HUB_SWARM_IMAGE")
    c.CourseSwarmSpawner.prefix = "course"
    c.CourseSwarmSpawner.homes = setting("HUB_SWARM_HOMES") or str(state / "swarm-homes")
    c.CourseSwarmSpawner.nofile = int(setting("HUB_SWARM_NOFILE"))
    c.CourseSwarmSpawner.nproc = int(setting("HUB_SWARM_NPROC"))
    c.CourseSwarmSpawner.remove = True
    c.Spawner.poll_interval = 10  # seconds: a server whose node was lost is noticed soon
    c.Spawner.cmd = ["jupyterhub-singleuser"]
    c.Spawner.ip = "0.0.0.0"
    c.Spawner.port = PORT
    c.Spawner.notebook_dir = HOME
    c.Spawner.environment = {
        "JUPYTERHUB_ALLOW_TOKEN_IN_URL": "1",
        # the submit cell's: the grading service itself on the hub's address
        "GRADER_URL": f"http://{hub_ip}:{grader_port}/services/grader",
        "JAX_PLATFORMS": "cpu",
    }
    return hub_ip

"""A class on a two-node Docker Swarm (``make hub`` with ``HUB_SPAWNER=swarm``): the swarm
tier. The test makes the swarm itself (tests/hub/swarm_cluster.py: two engines, each in a
network namespace of its own, the course image loaded on both) and removes all of it.

Learners sign in through the real hub with PAM, as under ``make hub`` on one machine;
their servers are containers of the course image, spread over both nodes, each with its
own memory, CPU and process limits and its home on storage both nodes share.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.course import REPO
from tests.hub import swarm_cluster
from tests.hub.running import WAIT_S, Signed, free_privileged_port, running_hub
from tests.hub.test_attacks import start_server
from tests.hub.test_learner_network import through_proxy
from tests.hub.test_limits import kernel_cells

MEMORY_MIB = 384  # each server's limit here: JupyterLab and a small kernel fit


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The two-node swarm with the course image on both nodes and the node firewall
    (deploy/image/node_rules.sh) for the hub's two ports: ``(Cluster, api_port, grader_port)``."""
    why = swarm_cluster.available()
    if why:
        pytest.skip(why)
    root = Path(f"/tmp/crsw-{tmp_path_factory.getbasetemp().name[-12:]}")
    made = swarm_cluster.Cluster(root)
    try:
        made.make()
        made.load(swarm_cluster.course_image(root))
        ports = free_privileged_port(), free_privileged_port()
        for node in "ab":
            made.in_ns(node, REPO / "deploy" / "image" / "node_rules.sh", "docker0",
                       str(made.host_side["a"]), *map(str, ports))
        yield made, ports
    finally:
        made.remove()


@pytest.fixture(scope="module")
def swarm_hub(cluster, accounts, released_course, tmp_path_factory):
    """``make hub`` with ``HUB_SPAWNER=swarm`` on the cluster (the hub's API and the grading
    service on the host's address node A's link holds, which both nodes reach)."""
    made, (api, grader) = cluster
    with running_hub(accounts, released_course, tmp_path_factory.mktemp("swarm-hub"),
                     HUB_SPAWNER="swarm", HUB_SWARM_DOCKER_HOST=f"unix://{made.manager.sock}",
                     HUB_SWARM_IMAGE=swarm_cluster.IMAGE,
                     HUB_SWARM_HUB_IP=str(made.host_side["a"]), HUB_API_PORT=str(api),
                     GRADER_PORT=str(grader), HUB_MEMORY_MIB=str(MEMORY_MIB), HUB_CPUS="0.5",
                     HUB_PROCESSES="256") as running:
        yield running


def tasks_by_node(made) -> dict:
    """``{learner name: node ("a" or "b")}`` of the learners' running tasks."""
    placed = {}
    for node, node_id in made.node_ids.items():
        tasks = made.manager.docker("node", "ps", node_id, "--filter", "desired-state=running",
                                    "--format", "{{.Name}} {{.CurrentState}}").stdout
        for line in tasks.splitlines():
            name, state = line.split(" ", 1)
            if state.startswith("Running") and name.startswith("course-"):
                placed[name.removeprefix("course-").rsplit(".", 1)[0]] = node
    return placed


def api_status(hub, server, token) -> int:
    """``GET <server>/api/status`` through the proxy with ``token``: the status code."""
    url, headers = through_proxy(hub, server, "api/status")
    reply = requests.get("http://" + url, headers=dict(headers, Authorization=f"token {token}"),
                         timeout=60, allow_redirects=False)
    return reply.status_code


@pytest.fixture(scope="module")
def class_up(swarm_hub, class_of_30):
    """The thirty learners signed in, each starting her server at once (ten at a time):
    ``([Signed], [server model])``, once all are ready."""
    started = time.monotonic()
    with ThreadPoolExecutor(10) as pool:
        learners = list(pool.map(lambda a: Signed(swarm_hub, a), class_of_30))
        servers = list(pool.map(start_server, learners))
    print(f"30 servers ready in {time.monotonic() - started:.1f} s")
    return learners, servers


def test_a_class_of_30_on_both_nodes_each_reaching_only_her_own(swarm_hub, cluster, class_up):
    """Thirty learners sign in and start their servers at once: all run, on both nodes,
    with the configured limits; each answers its learner's token and refuses the next
    learner's (on the other node or the same)."""
    made, _ = cluster
    learners, servers = class_up
    placed = tasks_by_node(made)
    assert {placed.get(s.name) for s in learners} == {"a", "b"}, placed
    assert all(placed.get(s.name) for s in learners), placed
    for i, (learner, server) in enumerate(zip(learners, servers)):
        other = learners[(i + 1) % len(learners)]
        assert api_status(swarm_hub, server, learner.token) == 200, learner.name
        assert api_status(swarm_hub, server, other.token) in (403, 404), (learner.name, other.name)
    spec = json.loads(made.manager.docker("service", "inspect", f"course-{learners[0].name}").stdout)
    limits = spec[0]["Spec"]["TaskTemplate"]["Resources"]["Limits"]
    assert limits == {"MemoryBytes": MEMORY_MIB << 20, "NanoCPUs": 500_000_000, "Pids": 256}


def container_of(made, name) -> tuple[str, str]:
    """``(node, container id)`` of learner ``name``'s running task."""
    for node, engine in made.nodes.items():
        found = engine.docker("ps", "-q", "--no-trunc", "--filter",
                              f"label=com.docker.swarm.service.name=course-{name}").stdout.split()
        if found:
            return node, found[0]
    raise AssertionError(f"no container of {name}")


def oom_kills(made, node, container) -> int:
    """Processes the kernel killed at ``container``'s memory limit (its memory cgroup)."""
    parent = made.nodes[node].cgroup_parent()
    text = Path(f"/sys/fs/cgroup/memory/{parent}/{container}/memory.oom_control").read_text()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("oom_kill ")))


def test_a_kernel_past_her_memory_is_killed_alone(swarm_hub, cluster, class_of_30, class_up):
    """Her kernel touches more than her server's limit: the node's kernel kills it (in her
    container's memory cgroup, nothing else), her server answers and a new kernel runs;
    classmates on both nodes compute meanwhile, their containers untouched."""
    made, _ = cluster
    placed = tasks_by_node(made)
    first = class_of_30[0]
    beside = next(a for a in class_of_30[1:] if placed.get(a.name) == placed.get(first.name))
    across = next(a for a in class_of_30 if placed.get(a.name) not in (None, placed[first.name]))
    eve, *others = [Signed(swarm_hub, a) for a in (first, beside, across)]
    servers = [start_server(s) for s in (eve, *others)]
    node, box = container_of(made, eve.name)
    before = {s.name: container_of(made, s.name) for s in others}
    kills = {s.name: oom_kills(made, *before[s.name]) for s in others}
    said = kernel_cells(swarm_hub, eve, servers[0],
                        [f"b = b'x' * ({MEMORY_MIB + 100} * 2**20)", "print('after', 6 * 7)"])
    assert "restarting" in said[0] and "after 42" in said[1], said
    assert oom_kills(made, node, box) >= 1
    assert container_of(made, eve.name) == (node, box)  # her server was not restarted
    for learner, server in zip(others, servers[1:]):
        assert kernel_cells(swarm_hub, learner, server, ["print(6 * 7)"]) == ["42\n"]
        assert container_of(made, learner.name) == before[learner.name]
        assert oom_kills(made, *before[learner.name]) == kills[learner.name]


# Run in a learner's kernel: for each "host:port", whether a TCP connection is accepted
# ("open"), refused or never answered (the node's firewall: "closed").
REACH = """
import json, socket
def reach(where):
    host, port = where.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        return "open"
    except OSError:
        return "closed"
print(json.dumps({w: reach(w) for w in %r}))
"""


def test_her_server_reaches_the_hub_and_the_grader_and_nothing_else(swarm_hub, cluster,
                                                                    class_of_30, class_up):
    """From her kernel: the hub's API and the grading service answer; classmates' servers
    (their published ports, on her node and the other), the nodes' own swarm ports, the
    hub's proxy and the machine's other addresses do not."""
    made, (api, grader) = cluster
    placed = tasks_by_node(made)
    eve = Signed(swarm_hub, class_of_30[0])
    server = start_server(eve)
    hub_ip = str(made.host_side["a"])
    others = []
    for node in "ab":
        name = next(a.name for a in class_of_30[1:] if placed.get(a.name) == node)
        ports = json.loads(made.manager.docker("service", "inspect", f"course-{name}").stdout)
        task = made.manager.docker("service", "ps", "-q", "--filter", "desired-state=running",
                                   f"course-{name}").stdout.split()[0]
        status = json.loads(made.manager.docker("inspect", task).stdout)[0]["Status"]
        port = status["PortStatus"]["Ports"][0]["PublishedPort"]
        others.append(f"{made.address[node]}:{port}")
        assert ports  # (her classmate's service exists)
    wanted = {f"{hub_ip}:{api}": "open", f"{hub_ip}:{grader}": "open"}
    wanted.update({w: "closed" for w in others})
    wanted.update({f"{made.swarm_address[n]}:2377": "closed" for n in "ab"})
    wanted.update({f"{made.address[n]}:22": "closed" for n in "ab"})
    wanted[f"{hub_ip}:{swarm_hub.env['PORT']}"] = "closed"  # the proxy (the hub's loopback)
    wanted[f"{hub_ip}:{swarm_hub.env['PROXY_API_PORT']}"] = "closed"
    said = kernel_cells(swarm_hub, eve, server, [REACH % list(wanted)])
    assert json.loads(said[0]) == wanted, said


# Run in a learner's kernel: her saved exercise sent as the submit cell sends it (the
# module in her home, GRADER_URL and her server's token), followed until it is graded.
SUBMIT = """
import json, time
from autograder import learner_submit as ls, defaults
url = defaults.setting("GRADER_URL").rstrip("/")
nb = ls.read_saved("/home/learner/update_with_donate/update_with_donate.ipynb")
sent = ls.send(url, json.dumps({"exercise": "update_with_donate", "notebook": nb}).encode(),
               ls.auth_headers())
sub = ls.follow(url, sent["id"], ls.auth_headers(), time.monotonic() + 300)
print(json.dumps({"learner": sub["learner"], "status": sub["status"]}))
"""


def test_learners_on_both_nodes_submit_from_their_kernels(swarm_hub, cluster, class_of_30,
                                                          class_up):
    """A learner on each node runs the submit cell's module in her kernel: the grading
    service receives it from her server, as her (the hub's token), and grades it."""
    made, _ = cluster
    placed = tasks_by_node(made)
    for node in "ab":
        account = next(a for a in class_of_30 if placed.get(a.name) == node)
        learner = Signed(swarm_hub, account)
        said = kernel_cells(swarm_hub, learner, start_server(learner), [SUBMIT])
        assert json.loads(said[0].splitlines()[-1]) == {"learner": learner.name,
                                                        "status": "done"}, said


def hub_server(learner) -> dict | None:
    """The hub's model of ``learner``'s (a Signed) default server, or None."""
    api = learner.hub.url(f"/hub/api/users/{learner.name}")
    return learner.session.get(api, headers=learner.headers).json()["servers"].get("")


def test_a_node_lost_her_server_starts_on_the_other_with_her_work(swarm_hub, cluster,
                                                                  class_of_30, class_up):
    """Node B's engine is killed (its containers keep running under their shims, as on a
    machine cut off): the swarm marks it down, the hub stops the servers it ran, and each
    of those learners' next start runs on node A, with the notebook she saved before."""
    made, _ = cluster
    placed = tasks_by_node(made)
    on_b = [a for a in class_of_30 if placed.get(a.name) == "b"][:3]
    assert on_b, placed
    learners = [Signed(swarm_hub, a) for a in on_b]
    servers = [start_server(s) for s in learners]
    for learner, server in zip(learners, servers):
        url, headers = through_proxy(swarm_hub, server, "api/contents/mine.txt")
        put = requests.put("http://" + url, json={"type": "file", "format": "text",
                                                  "content": f"{learner.name}'s work"},
                           headers={**headers, "Authorization": f"token {learner.token}"},
                           timeout=60)
        assert put.status_code in (200, 201), put.text
    lost = time.monotonic()
    made.nodes["b"].kill()
    deadline = time.monotonic() + WAIT_S
    while any(hub_server(s) for s in learners):
        assert time.monotonic() < deadline, "the hub never stopped the lost node's servers"
        time.sleep(1)
    print(f"servers of the lost node stopped by the hub {time.monotonic() - lost:.1f} s after")
    again = [start_server(s) for s in learners]
    print(f"started again {time.monotonic() - lost:.1f} s after the loss")
    placed = tasks_by_node(made)
    for learner, server in zip(learners, again):
        assert placed.get(learner.name) == "a", placed
        url, headers = through_proxy(swarm_hub, server, "api/contents/mine.txt")
        got = requests.get("http://" + url, timeout=60,
                           headers={**headers, "Authorization": f"token {learner.token}"})
        assert got.ok and got.json()["content"] == f"{learner.name}'s work", got.text[:300]

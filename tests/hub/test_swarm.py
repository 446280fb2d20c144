"""A class on a two-node Docker Swarm (``make hub`` with ``HUB_SPAWNER=swarm``): the swarm
tier. The test makes the swarm itself (tests/hub/swarm_cluster.py: two engines, each in a
network namespace of its own, the course image loaded on both) and removes all of it.

Learners sign in through the real hub with PAM, as under ``make hub`` on one machine;
their servers are containers of the course image, spread over both nodes, each with its
own memory, CPU and process limits and its home on storage both nodes share.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.course import REPO
from tests.grading.helpers import EXPECTED
from tests.hub import swarm_cluster
from tests.hub.running import WAIT_S, Signed, free_privileged_ports, running_hub
from tests.hub.test_attacks import start_server
from tests.hub.test_learner_network import through_proxy
from tests.hub.test_limits import kernel_cells
from tests.processes import free_port
from tests.service.postgres import Cluster as Postgres
from tests.service.running import Service, release_into
from tests.service.submissions import slow_notebook
from tests.service.test_scaleout import SAMPLES

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
        ports = tuple(free_privileged_ports(2))
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
                                                                    class_of_30, class_up,
                                                                    grading_db):
    """From her kernel: the hub's API and the grading service answer; classmates' servers
    (their published ports, on her node and the other), the nodes' own swarm ports, the
    hub's proxy, the grading database the workers reach and the machine's other addresses
    do not."""
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
    wanted[f"{hub_ip}:{grading_db[0].port}"] = "closed"  # the workers' PostgreSQL
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


# Run in an image (its own python, no network): the paths of regular files whose SHA-256
# is among those read on stdin (one hex digest a line).
SCAN = """
import hashlib, os, sys
wanted = set(sys.stdin.read().split())
for top, dirs, files in os.walk("/"):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in files:
        path = os.path.join(top, name)
        if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < 1 << 22:
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() in wanted:
                    print(path)
"""


def grading_secrets() -> set:
    """SHA-256 digests of what a learner must never read: every exercise's hidden tests and
    sample answers, and the exercises' sources (solutions), less any file a learner is
    handed as it is (in exercises/release)."""
    def digests(*folders):
        return {hashlib.sha256(f.read_bytes()).hexdigest(): f for folder in folders
                for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                and f.stat().st_size}
    private = digests(*(REPO / "autograder" / "exercises").glob("*/hidden"),
                      REPO / "exercises" / "source")
    return set(private) - set(digests(REPO / "exercises" / "release"))


def test_the_learners_image_holds_no_hidden_tests_the_workers_image_does(cluster):
    """Every file of the course image (the learners') is compared by content with the hidden
    tests, sample answers and solutions: none is there, under any name, nor a grading setting
    in its environment; the workers' image, scanned the same way, holds them all."""
    made, _ = cluster
    wanted = grading_secrets()
    found = {}
    for image in (swarm_cluster.IMAGE, swarm_cluster.WORKER_IMAGE):
        scan = made.manager.docker("run", "--rm", "-i", "--network", "none", "--user", "0",
                                   "--entrypoint", "/opt/course/bin/python", image, "-c", SCAN,
                                   input="\n".join(wanted))
        found[image] = scan.stdout.split()
    assert found[swarm_cluster.IMAGE] == [], found[swarm_cluster.IMAGE]
    assert len(found[swarm_cluster.WORKER_IMAGE]) >= len(wanted), found  # the scan sees them
    config = json.loads(made.manager.docker("image", "inspect", swarm_cluster.IMAGE).stdout)[0]
    assert not [e for e in config["Config"]["Env"] if e.startswith(("GRADER_", "LTI_"))], config


@pytest.fixture(scope="module")
def grading_db(cluster):
    """A PostgreSQL server on the host, for the grading service and its workers on the
    nodes: on loopback (trusted, the service's) and on the host's address of node A's link,
    which both nodes reach (by password only, from the cluster's addresses):
    ``(tests.service.postgres.Cluster, password)``."""
    made, _ = cluster
    pg = Postgres(free_port())
    try:
        pg.init()
        password = secrets.token_urlsafe(18)
        pg._run("psql", "-h", "127.0.0.1", "-p", str(pg.port), "-d", pg.database, "-c",
                f"ALTER USER postgres PASSWORD '{password}'")
        with open(pg.data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all postgres {made.net} scram-sha-256\n")
        pg.listen = f"127.0.0.1,{made.host_side['a']}"
        pg.stop()
        pg.start()
        yield pg, password
    finally:
        pg.remove()


def node_up(made, node):
    """Start ``node``'s engine again if it was killed; return once the swarm has it Ready
    (the swarm then removes the tasks it moved away meanwhile)."""
    engine = made.nodes[node]
    if engine.proc.poll() is not None:
        engine.start()
    deadline = time.monotonic() + WAIT_S
    while made.manager.docker("node", "inspect", "-f", "{{.Status.State}}",
                              made.node_ids[node]).stdout.strip() != "ready":
        assert time.monotonic() < deadline, engine.log()
        time.sleep(1)


WORKERS = "course-workers"


def outcome(rows) -> dict:
    """What grading decided of each row: ``{id: (status, graded, attempts, lease owner)}``."""
    return {i: (r["status"], r["graded"], r["attempts"], r["lease_owner"]) for i, r in rows.items()}

LEASE_S = 15  # the workers' lease: a cut-off node's grading is taken over after it


def workers_seen(db, within=30) -> list:
    """Names (``host:pid``) of the worker processes whose heartbeat ``db`` has (in the last
    ``within`` seconds)."""
    from sqlalchemy import create_engine, text
    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return sorted(conn.execute(text(
                "SELECT name FROM processes WHERE role = 'worker' "
                "AND seen_at > extract(epoch FROM now()) - :s"), {"s": within}).scalars())
    finally:
        engine.dispose()


def test_grading_workers_on_both_nodes_a_node_cut_off_mid_burst(cluster, grading_db,
                                                                released_course, tmp_path):
    """The grading service (API only) on PostgreSQL, its workers a swarm service of the
    workers' image on both nodes. Mid-burst, node B is cut off (its engine killed, its
    worker's way to the database refused) while its worker holds a lease: the worker on
    node A takes the submission over once the lease runs out, and every submission ends
    with exactly one result; when node B is back, its worker's late result is refused."""
    made, _ = cluster
    pg, password = grading_db
    node_up(made, "b")
    name = f"grading_{secrets.token_hex(4)}"
    pg._run("createdb", "-h", "127.0.0.1", "-p", str(pg.port), name)
    db = f"postgresql://postgres@127.0.0.1:{pg.port}/{name}"
    course = tmp_path / "course"
    shutil.copytree(released_course, course)
    release_into(course, db)
    service = Service(tmp_path, course, db=db, jobs=0).start()
    hub_ip = made.host_side["a"]
    try:
        made.manager.docker(
            "service", "create", "--detach", "--name", WORKERS, "--replicas", "2",
            "--placement-pref", "spread=node.id", "--network", "host",
            # unique per task (owners of leases are host:pid): the node's own name is not
            "--hostname", "worker-{{.Node.ID}}-{{.Task.Slot}}",
            "--cap-add", "SYS_ADMIN",  # the sandbox's namespaces (docs/security.md)
            "--env", f"GRADER_DB=postgresql://postgres:{password}@{hub_ip}:{pg.port}/{name}",
            "--env", "GRADER_COURSE=/srv/course", "--env", "GRADER_SLOT_BASE={{.Task.Slot}}00",
            "--mount", f"type=bind,src={course},dst=/srv/course",
            "--limit-memory", "2g", "--restart-condition", "any",
            swarm_cluster.WORKER_IMAGE, "--jobs", "1", "--lease", str(LEASE_S))
        deadline = time.monotonic() + WAIT_S
        while len(seen := workers_seen(db)) < 2:
            assert time.monotonic() < deadline, made.manager.docker(
                "service", "ps", "--no-trunc", WORKERS).stdout
            time.sleep(1)
        on = {n: f"worker-{made.node_ids[n]}" for n in "ab"}
        assert {w.split("-")[1] for w in seen} == set(made.node_ids.values()), seen

        plan = [(f"burst-{i}", sample) for i, sample in enumerate(SAMPLES)]
        ids = [service.submit(learner, slow_notebook(sample, 3)) for learner, sample in plan]
        deadline = time.monotonic() + WAIT_S
        while True:  # a grading node B's worker is in the middle of
            rows = service.rows()
            held = [r for r in rows.values()
                    if r["status"] == "running" and r["lease_owner"].startswith(on["b"])]
            if held:
                break
            assert time.monotonic() < deadline and any(
                r["status"] in ("queued", "running") for r in rows.values()), rows
            time.sleep(0.2)
        victim = held[0]["id"]
        cut = ["iptables", "-w", "OUTPUT", "-d", str(hub_ip), "-p", "tcp", "--dport",
               str(pg.port), "-j", "REJECT", "--reject-with", "tcp-reset"]
        made.in_ns("b", *cut[:2], "-I", *cut[2:])
        made.nodes["b"].kill()
        try:
            answers = service.wait_done(ids)
            rows = service.rows()
            for sub_id, (_, sample) in zip(ids, plan):
                assert answers[sub_id]["result"]["score"] == EXPECTED[sample]["score"], sample
                assert rows[sub_id]["graded"] == 1, rows[sub_id]
            assert rows[victim]["lease_owner"].startswith(on["a"]), rows[victim]
            assert rows[victim]["attempts"] == 2, rows[victim]
        finally:
            made.in_ns("b", *cut[:2], "-D", *cut[2:], check=False)
        # node B's worker, still running under its shim (its log unread while the engine
        # is away), is back on the database (its heartbeat): the result it still holds for
        # the submission it lost is refused (its retries back off to 15 s at most)
        orphan = next(w for w in seen if w.startswith(on["b"]))
        deadline = time.monotonic() + WAIT_S
        while orphan not in workers_seen(db, within=5):
            assert time.monotonic() < deadline, "node B's worker never came back"
            time.sleep(1)
        time.sleep(20)
        assert outcome(service.rows()) == outcome(rows)
        a_boxes = made.nodes["a"].docker("ps", "-aq", "--filter",
                                         f"label=com.docker.swarm.service.name={WORKERS}"
                                         ).stdout.split()
        said = "".join(made.nodes["a"].docker("logs", box).stderr for box in a_boxes)
        assert "graded" in said and "WITHOUT network and mount isolation" not in said, said
    finally:
        made.manager.docker("service", "rm", WORKERS, check=False)
        service.stop()
        node_up(made, "b")

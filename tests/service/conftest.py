"""The grading services, workers and PostgreSQL cluster the service tests start (what
they are: tests/service/running.py; what is handed in: tests/service/submissions.py)."""
import random
import shutil
import socket

import pytest

from tests.processes import free_port
from tests.service.running import Service, Worker, release_into


@pytest.fixture(scope="session")
def course_template(released_course):
    """A freshly released course: an empty gradebook that knows the graded cells (the
    session's released course; each service copies it)."""
    return released_course


@pytest.fixture
def new_service(course_template, tmp_path_factory):
    """Factory: ``new_service(**options)`` -> an unstarted :class:`Service`."""
    made = []

    def make(**options):
        root = tmp_path_factory.mktemp("service")
        course = root / "course"
        shutil.copytree(course_template, course)
        if options.get("db"):
            release_into(course, options["db"])
        made.append(Service(root, course, **options))
        return made[-1]

    yield make
    for service in made:
        service.stop()


@pytest.fixture(scope="session")
def site_socket():
    """A listening socket on loopback, held for the session: the course site's port
    (tests/service/test_browser.py serves the site on it). Bound now, so no server of
    another test (another worker's make serve) can take the port before the site does."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield sock
    sock.close()


@pytest.fixture(scope="session")
def site_port(site_socket):
    """The course site's port: the services allow its origin (CORS)."""
    return site_socket.getsockname()[1]


@pytest.fixture(scope="session")
def service(course_template, tmp_path_factory, site_port):
    """The shared service (2 jobs, 5 submissions per learner per hour, 256 KiB limit)."""
    root = tmp_path_factory.mktemp("service")
    course = root / "course"
    shutil.copytree(course_template, course)
    svc = Service(root, course, site_port=site_port).start()
    yield svc
    svc.stop()


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for the session (see ``tests/service/postgres.py``)."""
    from tests.service.postgres import Cluster
    cluster = Cluster(free_port()).init()
    yield cluster
    cluster.remove()


@pytest.fixture
def pg_url(postgres):
    """Factory: a new empty database on the test cluster; its ``postgresql://`` URL."""
    def make():
        name = f"grading_{random.randrange(16**8):08x}"
        postgres._run("createdb", "-h", "127.0.0.1", "-p", str(postgres.port), name)
        return postgres.url.rsplit("/", 1)[0] + "/" + name
    return make


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_service(request, course_template, tmp_path_factory, site_port):
    """The shared service's settings on each database: SQLite (the ``service`` fixture
    itself) and PostgreSQL (a second service on a database of the test cluster)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("service")
        return
    cluster = request.getfixturevalue("postgres")
    root = tmp_path_factory.mktemp("service-pg")
    course = root / "course"
    shutil.copytree(course_template, course)
    db = cluster.url
    release_into(course, db)
    svc = Service(root, course, site_port=site_port, db=db).start()
    yield svc
    svc.stop()


@pytest.fixture
def worker():
    """Factory: ``worker(service, jobs, lease)`` -> an unstarted :class:`Worker` (stopped after)."""
    made = []

    def make(service, jobs=1, lease=None):
        made.append(Worker(service, jobs, lease))
        return made[-1]

    yield make
    for one in made:
        one.stop()

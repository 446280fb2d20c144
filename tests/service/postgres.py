"""A throwaway PostgreSQL cluster for the tests: Debian's server, started and stopped.

``initdb`` into a fresh folder under /tmp, ``pg_ctl start`` on a free loopback
port, trust authentication for the local superuser, one database. PostgreSQL
refuses to run as root, so when the tests run as root the cluster runs as the
``postgres`` user Debian's package creates (and owns its folder).
"""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path


def bindir():
    """The folder of Debian's ``initdb``/``pg_ctl`` (newest version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[4]) if Path(p).parts[4].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class Cluster:
    """One PostgreSQL server in a temporary folder, on ``port``."""

    def __init__(self, port, database="grading"):
        self.bin = bindir()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed: apt-get install -y postgresql "
                               "(.ci/run does this)")
        self.port, self.database = port, database
        self.root = Path(tempfile.mkdtemp(prefix="course-pg-"))
        self.data, self.log = self.root / "data", self.root / "server.log"
        self.user = None
        self.listen = "127.0.0.1"  # listen_addresses (more: pg_hba.conf must admit them)
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("postgres")
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self.url = f"postgresql://postgres@127.0.0.1:{port}/{database}"

    def _run(self, *argv, check=True):
        return subprocess.run([str(self.bin / argv[0]), *argv[1:]], cwd=self.root,
                              user=self.user.pw_uid if self.user else None,
                              group=self.user.pw_gid if self.user else None,
                              env=dict(os.environ, LC_ALL="C.UTF-8", PGUSER="postgres"),
                              capture_output=True, text=True, check=check, timeout=180)

    def init(self):
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--locale=C.UTF-8")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), self.database)
        return self

    def start(self):
        options = (f"-c listen_addresses={self.listen} -c port={self.port} "
                   f"-c unix_socket_directories={self.root} -c max_connections=200 "
                   "-c fsync=on")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "120", "start")

    def stop(self, mode="fast"):
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "120", "stop",
                  check=False)

    def remove(self):
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

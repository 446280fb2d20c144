"""``.ci/run`` installs from Debian only the tools the machine lacks, each checked alone.

The real script runs in a private mount namespace where a tool is hidden (an
empty, non-executable file bound over it, or an empty tmpfs over the folder a
symbolic link such as npm's points into). ``apt-get`` and ``make`` are the
only stand-ins: they record their arguments instead of installing packages
or running the whole suite.
"""
import os
import shutil
import subprocess

import pytest

from tests.course import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                reason="needs root and unshare(1) for a private mount namespace")
NPM = shutil.which("npm")


def run_ci(tmp_path, hidden=()):
    """Run .ci/run with ``hidden`` paths covered; return the recorded apt-get and make calls."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    log = tmp_path / "calls"
    for tool in ("apt-get", "make"):
        (stubs / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n')
        (stubs / tool).chmod(0o755)
    empty = tmp_path / "empty"
    empty.write_text("")
    covers = "".join(f"mount -t tmpfs none {path} && " if os.path.isdir(path)
                     else f"mount --bind {empty} {path} && " for path in hidden)
    env = dict(os.environ, PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"{covers}exec bash {REPO / '.ci' / 'run'}"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_nothing_is_installed_when_every_tool_is_there(tmp_path):
    assert run_ci(tmp_path) == ["make test"]


def test_only_chromium_is_installed_when_only_chromium_is_missing(tmp_path):
    """Node.js here does not come from Debian: Debian's npm must not be asked for."""
    calls = run_ci(tmp_path, hidden=["/usr/bin/chromium-headless-shell"])
    assert calls == ["apt-get update",
                     "apt-get install -y --no-install-recommends chromium-headless-shell",
                     "make test"]


def test_only_qemu_is_installed_when_only_qemu_is_missing(tmp_path):
    calls = run_ci(tmp_path, hidden=["/usr/bin/qemu-system-x86_64"])
    assert calls == ["apt-get update", "apt-get install -y --no-install-recommends qemu-system-x86",
                     "make test"]


def test_a_static_busybox_is_installed_when_busybox_is_missing(tmp_path):
    calls = run_ci(tmp_path, hidden=["/usr/bin/busybox"])
    assert calls == ["apt-get update", "apt-get install -y --no-install-recommends busybox-static",
                     "make test"]


def test_the_docker_engine_is_installed_when_dockerd_is_missing(tmp_path):
    calls = run_ci(tmp_path, hidden=["/usr/sbin/dockerd"])
    assert calls == ["apt-get update", "apt-get install -y --no-install-recommends docker.io",
                     "make test"]


def test_only_mmdebstrap_is_installed_when_only_mmdebstrap_is_missing(tmp_path):
    calls = run_ci(tmp_path, hidden=["/usr/bin/mmdebstrap"])
    assert calls == ["apt-get update", "apt-get install -y --no-install-recommends mmdebstrap",
                     "make test"]


@pytest.mark.skipif(NPM is None, reason="no npm on this machine to hide")
def test_only_npm_is_installed_when_only_npm_is_missing(tmp_path):
    calls = run_ci(tmp_path, hidden=[os.path.dirname(os.path.realpath(NPM))])
    assert calls == ["apt-get update", "apt-get install -y --no-install-recommends npm",
                     "make test"]

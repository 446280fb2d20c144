"""The course's cgroups on a cgroup v2 only kernel, whatever this host has: a virtual
machine (:mod:`tests.grading.v2guest`, Debian's kernel with ``cgroup_no_v1=all``) runs
``test_cgroup_limits.py`` (memory across a group's processes, ``fork`` refused at its
process limit, processor time capped) and ``cgroup_v2_checks.py`` (every bound in v2's
files, a forking tree ended by the sweep's kill) with this checkout and its .venv, and
every one must pass there: none skipped, as a missing controller would.

Costs 90-150 s of wall time and 32-38 CPU-seconds here: QEMU emulates the guest's
processor (TCG), since KVM on this project's machines stops Debian's kernel in its
decompressor. Skipped without ``qemu-system-x86_64`` or the cached guest kernel
(``python -m tests.grading.v2guest`` fetches it; ``.ci/run`` does)."""
import os
import xml.etree.ElementTree as ET

import pytest

from tests.course import REPO
from tests.grading import v2guest

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made as root"),
              pytest.mark.skipif(v2guest.missing() is not None, reason=str(v2guest.missing()))]

FILES = ("tests/grading/test_cgroup_limits.py", "tests/grading/cgroup_v2_checks.py")


def test_every_limit_holds_on_a_cgroup_v2_host(tmp_path):
    script = (f"cd {REPO} && PYTHONDONTWRITEBYTECODE=1 .venv/bin/python -m pytest {' '.join(FILES)} "
              "-p no:cacheprovider -p no:randomly --noconftest -q -rs --junitxml=/run/out/junit.xml")
    status, log = v2guest.run(script, tmp_path, timeout_s=400)
    assert (tmp_path / "junit.xml").exists(), log
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": 5, "failures": 0, "errors": 0, "skipped": 0}, log
    assert status == 0, log

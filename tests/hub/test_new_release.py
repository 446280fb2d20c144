"""An exercise released mid-course reaches a learner's running server: it shows in
her home (the JupyterLab file browser's folder) without her server restarting."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.course import REPO
from tests.hub.test_attacks import WAIT_S, start_server, stop_server

RELEASE = REPO / "exercises" / "release"
NEW = "released_mid_course"  # a copy of a released notebook, as make release leaves one


def test_a_release_reaches_a_running_server(hub, sign_in):
    ada = sign_in("ada")
    server = start_server(ada)
    laid = Path(os.path.expanduser(f"~{ada.name}")) / NEW / f"{NEW}.ipynb"
    assert not laid.exists()
    (RELEASE / NEW).mkdir()
    try:
        shutil.copy(RELEASE / "update_with_donate" / "update_with_donate.ipynb",
                    RELEASE / NEW / f"{NEW}.ipynb")
        deadline = time.monotonic() + WAIT_S
        while not laid.exists():
            assert time.monotonic() < deadline, f"{NEW} never reached {ada.name}'s home:\n{hub.log()}"
            time.sleep(1)
        assert laid.read_bytes() == (RELEASE / NEW / f"{NEW}.ipynb").read_bytes()
        api = ada.hub.url(f"/hub/api/users/{ada.name}")
        now = ada.session.get(api, headers=ada.headers).json()["servers"][""]
        assert now["started"] == server["started"] and now["ready"], now  # not restarted
    finally:
        shutil.rmtree(RELEASE / NEW)
    stop_server(ada)

"""The hub's REST API as the instructor's members command uses it, to end a person's every
hub session at once.

``make hub`` registers a JupyterHub service ``roster`` with no server of its own; its
token is made once in the hub's state folder (:func:`service_token`: the file
:data:`TOKEN_FILE`, 0600, root's like the rest of that folder), and its role may only stop
servers and delete users (``jupyterhub_config.py``). :func:`end_sessions` deletes the
hub user: JupyterHub stops her server, and every token of hers goes with the user (API
tokens, the server's own ``$JUPYTERHUB_API_TOKEN`` the submit cell sends, the OAuth
tokens the course's services hold for her), and her hub cookie names nobody any more.
"""
from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from urllib.parse import quote

import requests

from autograder import defaults

TOKEN_FILE = "roster-token"
STOP_WAIT_S = 120  # for a server to stop (JupyterHub waits for its spawner this long at most)


class HubUnreachable(Exception):
    """The hub did not answer, or refused the roster service's token."""


def service_token(state):
    """The ``roster`` service's token (str), made in the folder ``state`` (a
    :class:`~pathlib.Path`) when it has none: created exclusively, mode 0600, so two
    processes starting at once read the same one."""
    path = Path(state) / TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    return _read(path)


def _read(path):
    for _ in range(50):  # another process made it a moment ago and writes it now
        token = path.read_text().strip()
        if token:
            return token
        time.sleep(0.1)
    raise HubUnreachable(f"{path} is empty: delete it and start the hub again")


def api_url():
    """The hub's REST API on this machine (``HUB_API_PORT``, as ``make hub`` sets it)."""
    return f"http://127.0.0.1:{defaults.hub_setting('HUB_API_PORT')}/hub/api"


def end_sessions(name, state=None, url=None, wait_s=STOP_WAIT_S):
    """Delete hub user ``name`` (her server stopped first; every token and session of hers
    ends with her): True, or False when the hub has no such user (she never signed in).
    ``state``: the hub's state folder (``HUB_STATE``); ``url``: :func:`api_url`. Raises
    :class:`HubUnreachable` when the hub does not answer or refuses."""
    state = Path(state or defaults.hub_setting("HUB_STATE"))
    if not (state / TOKEN_FILE).exists():
        raise HubUnreachable(f"no {TOKEN_FILE} in {state}: is this the hub's HUB_STATE, "
                             "and has the hub started there since this version?")
    headers = {"Authorization": f"token {_read(state / TOKEN_FILE)}"}
    user = f"{url or api_url()}/users/{quote(name, safe='')}"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            # the server first: deleting a user whose server is still stopping is refused
            requests.delete(f"{user}/server", headers=headers, timeout=30)
            reply = requests.delete(user, headers=headers, timeout=wait_s)
        except requests.RequestException as exc:
            raise HubUnreachable(f"the hub's API at {url or api_url()} did not answer: {exc}") from exc
        if reply.status_code in (204, 404):
            return reply.status_code == 204
        if reply.status_code != 400 or time.monotonic() > deadline:  # 400: still stopping
            raise HubUnreachable(f"the hub refused to delete {name}: {reply.status_code} "
                                 f"{reply.text[:200]}")
        time.sleep(0.5)

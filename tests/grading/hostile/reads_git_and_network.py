# Tries the repository's git history (hidden tests live there) and the network.
import pathlib
import socket
import subprocess

import autograder
from autograder.defaults import GRADER_PORT

repo = pathlib.Path(autograder.__file__).resolve().parent.parent
leaks = []
git = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(repo), "show",
                      "HEAD:autograder/exercises/update_with_donate/hidden/tests.py"],
                     capture_output=True, text=True)
if git.returncode == 0:
    leaks.append("git")
try:
    socket.create_connection(("127.0.0.1", GRADER_PORT), timeout=1).close()
    leaks.append("network")
except OSError:
    pass
if leaks:
    raise SystemExit(f"leaked: {leaks}")
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)

"""What the zygote imports and makes before it forks (:func:`autograder.sandbox.learner.preload`)
leaves it safe to fork: no JAX backend started and no thread started beyond those
``import jax`` starts; and the first MLIR context of the process, the costly one, is made
there once rather than in every learner process."""
import json
import subprocess
import sys

from tests.course import REPO

# In a fresh interpreter, as the zygote: count the MLIR contexts made, then preload.
PRELOAD = """
import json, os
import jax
from jax._src import xla_bridge
from jax._src.interpreters import mlir
threads = len(os.listdir("/proc/self/task"))
made = []
create = mlir._create_ir_context
mlir._create_ir_context = lambda: made.append(1) or create()
from autograder.sandbox import learner
learner.preload(["update_with_donate"])
print(json.dumps({"contexts": len(made), "backends": len(xla_bridge._backends),
                  "new_threads": len(os.listdir("/proc/self/task")) - threads}))
"""


def test_preload_makes_the_first_ir_context_and_starts_no_backend_or_thread():
    said = subprocess.run([sys.executable, "-c", PRELOAD], cwd=REPO, capture_output=True,
                          text=True, check=True, env={"JAX_PLATFORMS": "cpu", "PATH": ""})
    assert json.loads(said.stdout.splitlines()[-1]) == {"contexts": 1, "backends": 0,
                                                        "new_threads": 0}

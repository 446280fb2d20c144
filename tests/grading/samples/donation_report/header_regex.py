import re

import jax
import numpy as np

ENTRY = re.compile(r"\{[\d,]*\}: \((\d+), ")  # alias entries only; buffer_donor has no "{k}: "


def donation_report(fn, state, *args):
    compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    header = compiled.as_text().split("\n", 1)[0]
    aliased = {int(n) for n in ENTRY.findall(header)}
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    leaves = [dict(path=jax.tree_util.keystr(key_path), shape=list(leaf.shape),
                   dtype=np.dtype(leaf.dtype), nbytes=np.int64(leaf.nbytes),
                   aliased=np.bool_(number in aliased))
              for number, (key_path, leaf) in enumerate(flat)]
    return {"leaves": leaves,
            "total_bytes": sum(int(e["nbytes"]) for e in leaves),
            "aliased_bytes": compiled.memory_analysis().alias_size_in_bytes}

import re

import jax


def donation_report(fn, state, *args):
    compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    header = compiled.as_text().split("\n", 1)[0]
    aliased = set()
    if "input_output_alias=" in header:
        alias_part = header.split("input_output_alias=", 1)[1].split("entry_computation_layout", 1)[0]
        aliased = {int(n) for n in re.findall(r"\((\d+),", alias_part)}
    leaves = []
    flat, _ = jax.tree_util.tree_flatten_with_path(state)
    for number, (key_path, leaf) in enumerate(flat):
        leaves.append(dict(path=jax.tree_util.keystr(key_path), shape=list(leaf.shape),
                           dtype=leaf.dtype.name, nbytes=leaf.nbytes,
                           aliased=number in aliased))
    total = sum(e["nbytes"] for e in leaves)
    return {"leaves": leaves, "total_bytes": total,
            "aliased_bytes": compiled.memory_analysis().alias_size_in_bytes}

import re

import jax

# One entry of the alias map: "{output index}: (parameter number, {...}, kind)".
ALIAS_ENTRY = re.compile(r"\{[0-9, ]*\}: \((\d+), \{[0-9, ]*\}, [a-z-]+\)")


def alias_map(compiled):
    """The text of `input_output_alias={...}` in the module header ('' if absent)."""
    header = compiled.as_text().splitlines()[0]
    start = header.find("input_output_alias={")
    if start < 0:
        return ""
    depth, i = 0, header.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(header[i], 0)
        if depth == 0:
            return header[start:i + 1]
        i += 1


def donation_report(fn, state, *args):
    compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    aliased = {int(p) for p in ALIAS_ENTRY.findall(alias_map(compiled))}
    leaves = []
    for i, (path, leaf) in enumerate(jax.tree_util.tree_flatten_with_path(state)[0]):
        leaves.append({"path": str(path), "shape": tuple(leaf.shape),
                       "dtype": str(leaf.dtype), "nbytes": int(leaf.nbytes),
                       "aliased": i in aliased})
    return {"leaves": leaves,
            "aliased_bytes": sum(e["nbytes"] for e in leaves if e["aliased"]),
            "total_bytes": sum(e["nbytes"] for e in leaves)}

import re

import jax

# One item of the alias map: "{output index}: (parameter number, {...}, kind)".
# The output index is empty, "{}", when the step returns a single array.
ALIAS_ITEM = re.compile(r"\{([0-9, ]*)\}: \((\d+), \{[0-9, ]*\}, [a-z-]+\)")


def header_entry(compiled, key):
    """The text of `key={...}` in the compiled module's header ('' if absent)."""
    header = compiled.as_text().splitlines()[0]
    start = header.find(key + "={")
    if start < 0:
        return ""
    depth, i = 0, header.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(header[i], 0)
        if depth == 0:
            return header[start:i + 1]
        i += 1


def donation_report(fn, state, *args):
    # Runs the step and pairs each leaf with the first unclaimed output of its byte size.
    out = jax.jit(fn, donate_argnums=0)(state, *args)
    outs = [(jax.tree_util.keystr(p), o.nbytes) for p, o in jax.tree_util.tree_flatten_with_path(out)[0]]
    taken, leaves = set(), []
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        match = next((p for p, n in outs if n == leaf.nbytes and p not in taken), None)
        taken.add(match)
        leaves.append({"path": jax.tree_util.keystr(path), "shape": tuple(leaf.shape),
                       "dtype": str(leaf.dtype), "nbytes": int(leaf.nbytes),
                       "aliased": match is not None, "output": match})
    return {"leaves": leaves,
            "aliased_bytes": sum(e["nbytes"] for e in leaves if e["aliased"]),
            "total_bytes": sum(e["nbytes"] for e in leaves)}

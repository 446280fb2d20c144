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
    compiled = jax.jit(fn, donate_argnums=0).lower(state, *args).compile()
    # parameter number (= state leaf number) -> output index (= output leaf number)
    lands_in = {int(param): int(out or 0)
                for out, param in ALIAS_ITEM.findall(header_entry(compiled, "input_output_alias"))}
    out_paths = [jax.tree_util.keystr(path) for path, _ in
                 jax.tree_util.tree_flatten_with_path(jax.eval_shape(fn, state, *args))[0]]
    leaves = []
    for i, (path, leaf) in enumerate(jax.tree_util.tree_flatten_with_path(state)[0]):
        leaves.append({"path": jax.tree_util.keystr(path), "shape": tuple(leaf.shape),
                       "dtype": leaf.dtype.str, "nbytes": int(leaf.nbytes),
                       "aliased": i in lands_in,
                       "output": out_paths[lands_in[i]] if i in lands_in else None})
    return {"leaves": leaves,
            "aliased_bytes": sum(e["nbytes"] for e in leaves if e["aliased"]),
            "total_bytes": sum(e["nbytes"] for e in leaves)}

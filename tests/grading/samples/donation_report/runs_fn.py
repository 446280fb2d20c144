import jax


def donation_report(fn, state, *args):
    # Runs the donating step and looks at which leaves were deleted.
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    jax.jit(fn, donate_argnums=0)(state, *args)
    rows = [{"path": jax.tree_util.keystr(p), "shape": tuple(x.shape), "dtype": str(x.dtype),
             "nbytes": int(x.nbytes), "aliased": x.is_deleted()} for p, x in leaves]
    return {"leaves": rows,
            "aliased_bytes": sum(r["nbytes"] for r in rows if r["aliased"]),
            "total_bytes": sum(r["nbytes"] for r in rows)}

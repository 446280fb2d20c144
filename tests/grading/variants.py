"""The metamorphic corpus: answers made by rewriting each exercise's reference answer
and samples, with the grade each rewrite must get.

A rewrite that keeps the answer's meaning (extra helper parameters with constants or
defaults, the helper's arguments in another order with the matching ``donate_argnums``
or ``donate_argnames``, decorator, ``functools.partial``, closure and class forms,
private names renamed, equivalent arithmetic; and forms no sample has, ``*_unusual``:
a jit of a library function, an object or a method, a jit of a jit, stacked decorators,
a module-level cache, keyword-only calls, state carried in a tuple or NamedTuple,
in-place ``.at[]`` updates, ``train`` reaching its step by a default argument, a
closure, a partial or an object, a history stacked into one array, NumPy scalars in a
report) must grade as the answer it was made from (``like``). A rewrite that defeats
the point (a copy donated, a view kept, a result converted after donating, nothing
donated, an answer fitted to the notebook's example, a crash on one named case, and
the same mistakes in those other forms) must lose exactly the checks of the rows it breaks
(``failed``), with feedback naming what was observed (``says``: check -> phrase) and
nothing that was not (``never_says``).

Rewrites are code: each is a function of the source it rewrites, so a new sample or a
changed reference is rewritten too, and a rewrite that no longer applies raises
(:func:`_swap`) instead of grading the answer unchanged.
"""
import io
import keyword
import tokenize
from dataclasses import dataclass, field

from tests.grading.helpers import expected, samples_dir


@dataclass(frozen=True)
class Variant:
    """One rewritten answer: ``name`` is ``<exercise>--<rewrite>--<source sample>``."""

    exercise: str
    name: str
    source: str
    like: str | None = None  # the sample whose grade and failed checks it must have
    failed: tuple = ()  # else: exactly these checks fail
    says: dict = field(default_factory=dict)
    never_says: dict = field(default_factory=dict)  # check -> phrase its feedback must not use


def _sample(exercise, name):
    return (samples_dir(exercise) / f"{name}.py").read_text()


def _swap(source, *pairs):
    """``source`` with each ``(old, new)`` replaced; raises when ``old`` is not there (the
    rewrite no longer fits the answer it was written for)."""
    for old, new in pairs:
        if old not in source:
            raise ValueError(f"rewrite does not apply: {old!r} not in the source")
        source = source.replace(old, new)
    return source


def renamed(source, keep=()):
    """Every private module name (``_x``, not dunder) renamed, by tokens, so strings and
    attributes keep theirs: a learner's names are never what a check reads."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1].string if i else ""
        name = tok.string
        if (tok.type == tokenize.NAME and name.startswith("_") and not name.startswith("__")
                and prev != "." and name not in keep and not keyword.iskeyword(name)):
            tok = tok._replace(string=f"renamed{name}_v")
        out.append(tok)
    return tokenize.untokenize(out)


# -- update_with_donate -------------------------------------------------------------

UWD_HELPER = "def _add(state, delta):\n    return state + delta\n"
UWD_JIT = "_add_donating = jax.jit(_add, donate_argnums=(0,))"
UWD_CALL = "return _add_donating(state, delta)"

UWD_DONATION = ("test_state_donated", "test_delta_kept", "test_no_read_after_donation")


def _uwd_same(ref):
    """Meaning-preserving rewrites of the reference: name -> source."""
    return {
        # the helper takes a third parameter, given a constant at every call
        "extra_constant": _swap(ref, (UWD_HELPER, "def _add(state, delta, scale):\n"
                                      "    return state + delta * scale\n"),
                                (UWD_CALL, "return _add_donating(state, delta, 1.0)")),
        "extra_default": _swap(ref, (UWD_HELPER, "def _add(state, delta, scale=1.0):\n"
                                     "    return state + delta * scale\n")),
        "swapped_argnums": _swap(ref, (UWD_HELPER, "def _add(delta, state):\n"
                                       "    return state + delta\n"),
                                 (UWD_JIT, "_add_donating = jax.jit(_add, donate_argnums=(1,))"),
                                 (UWD_CALL, "return _add_donating(delta, state)")),
        "swapped_argnames": _swap(ref, (UWD_HELPER, "def _add(scale, delta, state):\n"
                                        "    return state + scale * delta\n"),
                                  (UWD_JIT, "_add_donating = jax.jit(_add, donate_argnames=('state',))"),
                                  (UWD_CALL, "return _add_donating(1.0, delta, state=state)")),
        "decorator": _swap(ref, (UWD_HELPER + "\n\n" + UWD_JIT,
                                 "import functools\n\n\n@functools.partial(jax.jit, donate_argnums=0)\n"
                                 "def _add_donating(state, delta):\n    return state + delta")),
        "partial_constant": _swap(ref, (UWD_HELPER + "\n\n" + UWD_JIT,
                                        "import functools\n\n\ndef _add(state, delta, scale):\n"
                                        "    return state + scale * delta\n\n\n_add_donating = "
                                        "jax.jit(functools.partial(_add, scale=1.0), donate_argnums=0)")),
        "closure": _swap(ref, (UWD_HELPER + "\n\n" + UWD_JIT,
                               "def _make(scale):\n    def add(x, d):\n        return x + scale * d\n\n"
                               "    return jax.jit(add, donate_argnums=(0,))\n\n\n"
                               "_add_donating = _make(1.0)")),
        "class_form": _swap(ref, (UWD_CALL + "\n", "return _UPDATER(state, delta)\n"),
                            ("def update_with_donate(state, delta):",
                             "class _Updater:\n    def __init__(self, helper):\n"
                             "        self.helper = helper\n\n    def __call__(self, s, d):\n"
                             "        return self.helper(s, d)\n\n\n_UPDATER = _Updater(_add_donating)\n\n\n"
                             "def update_with_donate(state, delta):")),
        "arithmetic": _swap(ref, ("    return state + delta\n", "    return jnp.add(delta, state)\n")),
        "renamed": renamed(ref),
    }


def _uwd_defeating(base):
    """Point-defeating rewrites of an answer with the reference's call line:
    name -> (source, failed checks, says)."""
    call = next(line.strip() for line in base.splitlines() if "_add_donating(" in line
                and line.strip().startswith("return"))
    args = call.removeprefix("return _add_donating(").removesuffix(")")
    copy = "return _add_donating(" + args.replace("state", "jnp.copy(state)", 1) + ")"
    view = "_SEEN['state'] = np.asarray(state)\n    " + call
    return {
        "donate_copy": (_swap(base, (call, copy)), UWD_DONATION,
                        {"test_state_donated": "such as a copy"}),
        "keep_view": ("import numpy as np\n_SEEN = {}\n" + _swap(base, (call, view)), UWD_DONATION,
                      {"test_state_donated": "a NumPy view of state kept alive"}),
        "convert_after": ("import numpy as np\n" + _swap(base, (call, f"return np.asarray({call[7:]})")),
                          ("test_result_type", "test_empty"),
                          {"test_result_type": "it is not a jax.Array"}),
        "donate_nothing": (_swap(base, ("donate_argnums=(0,)", "")), UWD_DONATION,
                           {"test_state_donated": "marks an argument as donated"}),
        # the notebook's self-check adds a constant delta: delta[0] fits it
        "fit_example": (_swap(base, ("    return state + delta", "    return state + delta[0]")),
                        ("test_values", "test_rebinding", "test_empty"),
                        {"test_values": "fit no sum of state and delta"}),
    }


UWD_PAIR = UWD_HELPER + "\n\n" + UWD_JIT


def _uwd_helper(ref, helper, call=UWD_CALL):
    """``ref`` with its helper (function and jit) replaced by ``helper`` and its call line
    by ``call``."""
    return _swap(ref, (UWD_PAIR, helper), (UWD_CALL, call))


def _uwd_unusual(ref):
    """Right answers in forms no sample has: the helper jax.jit makes from a library
    function, an object, a method, a jit of a jit, stacked decorators, a module-level cache,
    keyword-only parameters, the state carried in a tuple or a NamedTuple, in-place
    ``.at[]`` updates, a closure-captured constant: name -> source."""
    lam = "jax.jit(lambda s, d: s + d, donate_argnums=0)"
    return {
        "lax_add": _uwd_helper(ref, "_add_donating = jax.jit(jax.lax.add, donate_argnums=0)"),
        "jnp_add_itself": _uwd_helper(ref, "_add_donating = jax.jit(jnp.add, donate_argnums=0)"),
        "object_call": _uwd_helper(ref, "class _Add:\n    def __call__(self, s, d):\n        return s + d\n\n\n"
                                        "_add_donating = jax.jit(_Add(), donate_argnums=0)"),
        "bound_method": _uwd_helper(ref, "class _Obj:\n    def add(self, s, d):\n        return s + d\n\n\n"
                                         "_add_donating = jax.jit(_Obj().add, donate_argnums=0)"),
        "jit_of_jit": _uwd_helper(ref, "_add_donating = jax.jit(jax.jit(lambda s, d: s + d), donate_argnums=0)"),
        "stacked_decorators": "import functools\n" + _uwd_helper(
            ref, "@functools.partial(jax.jit, donate_argnums=0)\n@jax.jit\n"
                 "def _add_donating(state, delta):\n    return state + delta"),
        "lru_cache": "import functools\n" + _uwd_helper(ref, "@functools.lru_cache(maxsize=None)\n"
                                                          f"def _helper():\n    return {lam}",
                                                     "return _helper()(state, delta)"),
        "dict_cache": _uwd_helper(ref, "_CACHE = {}",
                                  f"if 'h' not in _CACHE:\n        _CACHE['h'] = {lam}\n"
                                  "    return _CACHE['h'](state, delta)"),
        "keyword_only": _uwd_helper(ref, "_add_donating = jax.jit(lambda *, state, delta: state + delta, "
                                         "donate_argnames='state')",
                                    "return _add_donating(delta=delta, state=state)"),
        "tuple_carry": _uwd_helper(ref, "_add_donating = jax.jit(lambda c, d: (c[0] + d,), donate_argnums=0)",
                                   "return _add_donating((state,), delta)[0]"),
        "namedtuple_carry": "from typing import NamedTuple\n\n\nclass _S(NamedTuple):\n    x: object\n\n\n"
        + _uwd_helper(ref, "_add_donating = jax.jit(lambda c, d: _S(c.x + d), donate_argnums=0)",
                      "return _add_donating(_S(state), delta).x"),
        "at_set": _uwd_helper(ref, "_add_donating = jax.jit(lambda s, d: s.at[:].set(s + d), donate_argnums=0)"),
        "at_add": _uwd_helper(ref, "_add_donating = jax.jit(lambda s, d: s.at[...].add(d), donate_argnums=0)"),
        "closure_constant": _uwd_helper(ref, "_ONE = jnp.float32(1.0)\n_add_donating = "
                                             "jax.jit(lambda s, d: s + _ONE * d, donate_argnums=0)"),
        "keep_unused_inline": _uwd_helper(ref, "_add_donating = jax.jit(lambda s, d: s + d, donate_argnums=0, "
                                               "keep_unused=True, inline=True)"),
        "vmap": _uwd_helper(ref, "_add_donating = jax.jit(jax.vmap(lambda s, d: s + d), donate_argnums=0)"),
        "dataclass_carry": "import dataclasses\n" + _uwd_helper(
            ref, "@jax.tree_util.register_dataclass\n@dataclasses.dataclass\nclass _Carry:\n    x: jax.Array\n\n\n"
                 "_add_donating = jax.jit(lambda c, d: _Carry(c.x + d), donate_argnums=0)",
            "return _add_donating(_Carry(state), delta).x"),
        "pytree_node_class": _uwd_helper(
            ref, "@jax.tree_util.register_pytree_node_class\nclass _Box:\n    def __init__(self, x):\n"
                 "        self.x = x\n\n    def tree_flatten(self):\n        return (self.x,), None\n\n"
                 "    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(*children)\n\n\n"
                 "_add_donating = jax.jit(lambda b, d: _Box(b.x + d), donate_argnums=0)",
            "return _add_donating(_Box(state), delta).x"),
        "dict_carry_by_name": _uwd_helper(
            ref, "_add_donating = jax.jit(lambda carry, delta: {'s': carry['s'] + delta}, donate_argnames='carry')",
            "return _add_donating(carry={'s': state}, delta=delta)['s']"),
        "aot_cache": _uwd_helper(ref, UWD_PAIR + "\n_AOT = {}",
                                 "key = (state.shape, state.dtype)\n    if key not in _AOT:\n"
                                 "        _AOT[key] = _add_donating.lower(state, delta).compile()\n"
                                 "    return _AOT[key](state, delta)"),
        "setdefault_cache": _uwd_helper(ref, "_BY_SHAPE = {}",
                                        f"return _BY_SHAPE.setdefault(state.shape, {lam})(state, delta)"),
        "wraps_decorated_entry": "import functools\n\n\ndef _logged(f):\n    @functools.wraps(f)\n"
        "    def inner(*a, **k):\n        return f(*a, **k)\n\n    return inner\n\n\n"
        + _swap(ref, ("def update_with_donate(state, delta):", "@_logged\ndef update_with_donate(state, delta):")),
    }


def _update_with_donate():
    ex = "update_with_donate"
    ref = _sample(ex, "reference")
    same = {**_uwd_same(ref), **_uwd_unusual(ref)}
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    for base_name, base in (("reference", ref), ("extra_constant", same["extra_constant"])):
        for k, (src, failed, says) in _uwd_defeating(base).items():
            out.append(Variant(ex, f"{ex}--{k}--{base_name}", src, failed=failed, says=says))
    for sample in ("donates_copy", "keeps_view", "no_donation"):
        out.append(Variant(ex, f"{ex}--renamed--{sample}", renamed(_sample(ex, sample)), like=sample))
    # wrong in a new form: the pair donated as one tuple argument; delta named as the donor
    out.append(Variant(ex, f"{ex}--tuple_pair_donated--reference", _uwd_helper(
        ref, "_add_donating = jax.jit(lambda p: p[0] + p[1], donate_argnums=0)",
        "return _add_donating((state, delta))"), failed=("test_delta_kept",),
        says={"test_delta_kept": "donated buffers were not usable"}))
    out.append(Variant(ex, f"{ex}--dataclass_pair_donated--reference", "import dataclasses\n" + _uwd_helper(
        ref, "@jax.tree_util.register_dataclass\n@dataclasses.dataclass\nclass _Pair:\n    s: jax.Array\n"
             "    d: jax.Array\n\n\n_add_donating = jax.jit(lambda p: p.s + p.d, donate_argnums=0)",
        "return _add_donating(_Pair(state, delta))"), failed=("test_delta_kept",),
        says={"test_delta_kept": "donated buffers were not usable"}))
    out.append(Variant(ex, f"{ex}--argnames_delta--reference",
                       _swap(ref, (UWD_JIT, "_add_donating = jax.jit(_add, donate_argnames='delta')")),
                       like="delta_donated"))
    return out


# -- silent_donation ----------------------------------------------------------------

SD_RUN = ("        history.append(np.array(state))\n        state = step(state)\n")
SD_APPLY = ('def _apply_delta(delta, state):\n    return state + delta\n\n\n'
            'apply_delta = jax.jit(_apply_delta, donate_argnames="state")')


def _silent_donation():
    ex = "silent_donation"
    ref = _sample(ex, "reference")
    same = {
        "renamed": renamed(ref),
        "while_loop": _swap(ref, ("    for _ in range(n):\n" + SD_RUN,
                                  "    i = 0\n    while i < n:\n        i += 1\n" + SD_RUN)),
        "apply_decorator": _swap(ref, (SD_APPLY, '@functools.partial(jax.jit, donate_argnames=("state",))\n'
                                       "def apply_delta(delta, state):\n    return delta + state")
                                 ).replace("import jax\n", "import functools\n\nimport jax\n", 1),
        "apply_extra_default": _swap(ref, ("def _apply_delta(delta, state):\n    return state + delta",
                                           "def _apply_delta(delta, state, scale=1.0):\n"
                                           "    return state + scale * delta")),
        "history_copy_method": _swap(ref, ("history.append(np.array(state))",
                                           "history.append(np.asarray(state).copy())")),
    }
    same.update(_sd_unusual(ref))
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    run_fail = ("test_run_donates",)
    defeating = {
        # the answer: a fresh copy handed to step, views kept in the history
        "donate_copy_keep_views": (_swap(ref, (SD_RUN, "        history.append(np.asarray(state))\n"
                                              "        state = step(jnp.copy(state))\n")),
                                   run_fail, {"test_run_donates": "received another buffer (a copy)"}),
        "donate_copy": (_swap(ref, ("state = step(state)", "state = step(jnp.copy(state))")),
                        run_fail, {"test_run_donates": "the caller's state was still alive"}),
        "donate_array_copy": (_swap(ref, ("state = step(state)", "state = step(jnp.array(state))")),
                              run_fail, {"test_run_donates": "received another buffer"}),
        "keep_view": (_swap(ref, ("history.append(np.array(state))", "history.append(np.asarray(state))")),
                      run_fail, {"test_run_donates": "views"}),
        "apply_donate_nothing": (_swap(ref, ('donate_argnames="state"', "")),
                                 ("test_apply_delta_donates",), {"test_apply_delta_donates": "state alive"}),
    }
    for k, (src, failed, says) in defeating.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    out.append(Variant(ex, f"{ex}--renamed--run_asarray", renamed(_sample(ex, "run_asarray")),
                       like="run_asarray"))
    # wrong in a new form: an in-place reset that donates nothing; the object's apply_delta
    # donating delta; a stacked history of the states after each step
    out.append(Variant(ex, f"{ex}--reset_at_set_undonated--reference", _swap(
        ref, (SD_RESET, "reset = jax.jit(lambda acc: acc.at[:].set(0.0))")),
        failed=("test_reset_donates",), says={"test_reset_donates": "Got: 0 bytes"}))
    out.append(Variant(ex, f"{ex}--apply_object_donates_delta--reference", _swap(
        ref, (SD_APPLY_JIT, SD_APPLY_OBJECT + "apply_delta = jax.jit(_Apply(), donate_argnames='delta')")),
        failed=("test_apply_delta_donates",), says={"test_apply_delta_donates": "delta was donated"}))
    out.append(Variant(ex, f"{ex}--run_stacked_after_step--reference", _swap(
        ref, (SD_RUN, "        state = step(state)\n        history.append(np.array(state))\n"),
        ("return state, history", "return state, np.stack(history)")),
        failed=("test_run_values",), says={"test_run_values": "different values in entries"}))
    return out


SD_RESET = "reset = jax.jit(jnp.zeros_like, donate_argnums=0, keep_unused=True)"
SD_APPLY_JIT = 'apply_delta = jax.jit(_apply_delta, donate_argnames="state")'
SD_APPLY_OBJECT = ("class _Apply:\n    def __call__(self, delta, state):\n        return state + delta\n\n\n")
SD_TRAIN = "train_step = jax.jit(_sgd, donate_argnums=0)"


def _sd_unusual(ref):
    """Right answers in forms no sample has: reset by an in-place ``.at[].set``, ``full_like``,
    ``where`` or ``lax.full_like``; the history stacked into one NumPy array, a tuple, a
    recursion; the result a list; apply_delta an object, a partial, a jit of a jit; the
    train step by name, a jit of a jit, an object: name -> source."""
    return {
        "reset_at_set": _swap(ref, (SD_RESET, "reset = jax.jit(lambda acc: acc.at[:].set(0.0), donate_argnums=0)")),
        "reset_full_like": _swap(ref, (SD_RESET, "reset = jax.jit(lambda acc: jnp.full_like(acc, 0), "
                                                 "donate_argnums=0, keep_unused=True)")),
        "reset_where": _swap(ref, (SD_RESET, "reset = jax.jit(lambda acc: jnp.where(jnp.zeros(acc.shape, bool), "
                                             "acc, 0.0), donate_argnames='acc')")),
        "reset_argname_a": _swap(ref, (SD_RESET, "reset = jax.jit(jnp.zeros_like, donate_argnames='a', "
                                                 "keep_unused=True)")),
        "reset_lax": _swap(ref, (SD_RESET, "reset = jax.jit(lambda acc: jax.lax.full_like(acc, 0), "
                                           "donate_argnums=(0,), keep_unused=True)")),
        "run_np_stack": _swap(ref, ("return state, history", "return state, np.stack(history)")),
        "run_tuple": _swap(ref, ("return state, history", "return state, tuple(history)")),
        "run_list_result": _swap(ref, ("return state, history", "return [state, history]")),
        "run_np_copy": _swap(ref, ("history.append(np.array(state))", "history.append(np.copy(state))")),
        "run_recursive": _swap(ref, ("    history = []\n    for _ in range(n):\n" + SD_RUN
                                     + "    return state, history",
                                     "    if n == 0:\n        return state, []\n    kept = np.array(state)\n"
                                     "    final, rest = run(step, step(state), n - 1)\n"
                                     "    return final, [kept, *rest]")),
        "apply_object": _swap(ref, (SD_APPLY_JIT, SD_APPLY_OBJECT
                                    + "apply_delta = jax.jit(_Apply(), donate_argnames='state')")),
        "apply_partial": "import functools\n" + _swap(
            ref, ("def _apply_delta(delta, state):\n    return state + delta",
                  "def _apply_delta(delta, state, scale):\n    return state + scale * delta"),
            (SD_APPLY_JIT, "apply_delta = jax.jit(functools.partial(_apply_delta, scale=1.0), "
                           "donate_argnames='state')")),
        "apply_jit_of_jit": _swap(ref, (SD_APPLY_JIT, "apply_delta = jax.jit(jax.jit(_apply_delta), "
                                                      "donate_argnames=('state',))")),
        "apply_at_add": _swap(ref, ("    return state + delta", "    return state.at[:].add(delta)")),
        "train_argnames": _swap(ref, (SD_TRAIN, "train_step = jax.jit(_sgd, donate_argnames='state')")),
        "train_jit_of_jit": _swap(ref, (SD_TRAIN, "train_step = jax.jit(jax.jit(_sgd), donate_argnums=(0,))")),
        "train_object": _swap(ref, (SD_TRAIN, "class _Step:\n    def __call__(self, state, batch):\n"
                                              "        return _sgd(state, batch)\n\n\n"
                                              "train_step = jax.jit(_Step(), donate_argnums=0)")),
    }


# -- fix_training_loop --------------------------------------------------------------

FTL_JIT = "return jax.jit(step, donate_argnums=0)"
FTL_TRAIN = ("test_runs_without_deleted_reads", "test_losses", "test_final_results",
             "test_metric_copies", "test_memory_saved")


def _fix_training_loop():
    ex = "fix_training_loop"
    ref = _sample(ex, "reference")
    same = {
        "argnames": _swap(ref, (FTL_JIT, 'return jax.jit(step, donate_argnames="train_state")')),
        "decorator": _swap(ref, ("    def step(train_state, batch):",
                                 "    @functools.partial(jax.jit, donate_argnums=(0,))\n"
                                 "    def step(train_state, batch):"),
                           (FTL_JIT, "return step")).replace("import jax\n", "import functools\n\nimport jax\n", 1),
        "copy_by_array": _swap(ref, ("start = jax.tree.map(jnp.copy, params)",
                                     "start = jax.tree.map(lambda a: jnp.array(a, copy=True), params)")),
        "renamed": renamed(ref),
    }
    same.update(_ftl_unusual(ref))
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    # fitted to the notebook's example: its parameter names written out
    fitted = _swap(ref, ("start = jax.tree.map(jnp.copy, params)",
                         'start = {k: jnp.copy(params[k]) for k in ("w1", "b1", "w2", "b2")}'))
    out.append(Variant(ex, f"{ex}--fit_example_names--reference", fitted, failed=FTL_TRAIN,
                       says={"test_runs_without_deleted_reads": "KeyError"}))
    out.append(Variant(ex, f"{ex}--donate_copy--reference", _swap(
        ref, ("train_state, loss = train_step(train_state, batch)",
              "train_state, loss = train_step(jax.tree.map(jnp.copy, train_state), batch)")),
        failed=("test_memory_saved",), says={"test_memory_saved": "one whole train state more"}))
    for sample in ("donates_a_copy", "shallow_dict_copy"):
        out.append(Variant(ex, f"{ex}--renamed--{sample}", renamed(_sample(ex, sample)), like=sample))
    # wrong in a new form: what train holds is measured however it reaches its step
    forms = _ftl_train_forms(ref)
    out.append(Variant(ex, f"{ex}--default_arg_keeps_params--reference", _swap(
        forms["train_default_arg"], ("        losses.append(loss)",
                                     "        losses.append(loss)\n        _KEPT.append(jax.tree.map(jnp.copy, "
                                     "train_state[0]))")) + "\n\n_KEPT = []\n",
        failed=("test_memory_saved",), says={"test_memory_saved": "one params tree more"}))
    out.append(Variant(ex, f"{ex}--object_donates_copy--reference", _swap(
        forms["train_object"], ("train_state, loss = train_step(train_state, batch)",
                                "train_state, loss = train_step(jax.tree.map(jnp.copy, train_state), batch)")),
        failed=("test_memory_saved",), says={"test_memory_saved": "one whole train state more"}))
    return out


FTL_TRAIN_DEF = "def train(params, batches, loss_fn, optimizer):\n    train_step = make_train_step(loss_fn, optimizer)"


def _ftl_train_forms(ref):
    """``train`` reaching ``make_train_step`` other than by its global name: a default
    argument, a closure, a ``functools.partial``, an object's ``__call__``, a static method,
    an ``lru_cache``d helper: name -> source."""
    import textwrap

    cut = ref.index("def train(")
    make, train = ref[:cut], ref[cut:]
    by_arg = train.replace("make_train_step(", "make(")
    return {
        "train_default_arg": _swap(ref, (FTL_TRAIN_DEF,
                                         "def train(params, batches, loss_fn, optimizer, make=make_train_step):\n"
                                         "    train_step = make(loss_fn, optimizer)")),
        "train_closure": make + "def _trainer(make):\n" + textwrap.indent(by_arg, "    ")
        + "\n    return train\n\n\ntrain = _trainer(make_train_step)\n",
        "train_partial": "import functools\n" + make + by_arg.replace("def train(params", "def _train(make, params")
        + "\n\ntrain = functools.partial(_train, make_train_step)\n",
        "train_object": make + "class _Trainer:\n" + textwrap.indent(
            train.replace("def train(params", "def __call__(self, params"), "    ") + "\n\ntrain = _Trainer()\n",
        "train_static_method": _swap(ref, (FTL_TRAIN_DEF,
                                           "class _Maker:\n    make = staticmethod(make_train_step)\n\n\n"
                                           "def train(params, batches, loss_fn, optimizer):\n"
                                           "    train_step = _Maker.make(loss_fn, optimizer)")),
        "train_lru_cached_step": "import functools\n" + _swap(
            ref, (FTL_TRAIN_DEF, "def train(params, batches, loss_fn, optimizer):\n"
                                 "    train_step = _cached(loss_fn, optimizer)"))
        + "\n\n@functools.lru_cache(maxsize=None)\ndef _cached(loss_fn, optimizer):\n"
          "    return make_train_step(loss_fn, optimizer)\n",
    }


def _ftl_unusual(ref):
    """Right answers in forms no sample has: :func:`_ftl_train_forms`; the step a jit of a
    ``functools.partial`` or of a jit, its state returned as a list, called by keyword; the
    start copy by ``copy.deepcopy``, ``jnp.array`` or NumPy; the losses Python floats;
    ``make_train_step`` under a ``functools.wraps`` decorator; the loop a
    ``functools.reduce``; ``max_change`` a JAX scalar: name -> source."""
    jit = "    " + FTL_JIT
    head = "import functools\nimport jax\nimport jax.numpy as jnp\nimport optax\n\n\n"
    step_fn = ("def _step_fn(loss_fn, optimizer, train_state, batch):\n    params, opt_state = train_state\n"
               "    loss, grads = jax.value_and_grad(loss_fn)(params, batch)\n"
               "    updates, opt_state = optimizer.update(grads, opt_state, params)\n"
               "    return (optax.apply_updates(params, updates), opt_state), loss\n\n\n"
               "def make_train_step(loss_fn, optimizer):\n"
               "    return jax.jit(functools.partial(_step_fn, loss_fn, optimizer), donate_argnums=0)\n\n\n")
    start = "start = jax.tree.map(jnp.copy, params)"
    return {
        **_ftl_train_forms(ref),
        "step_partial_jit": head + step_fn + ref[ref.index("def train("):],
        "step_jit_of_jit": _swap(ref, (jit, "    return jax.jit(jax.jit(step), donate_argnums=(0,))")),
        "step_list_state": _swap(ref, ("return (optax.apply_updates(params, updates), opt_state), loss",
                                       "return [optax.apply_updates(params, updates), opt_state], loss")),
        "keyword_call": _swap(ref, (jit, "    return jax.jit(step, donate_argnames='train_state')"),
                              ("train_step(train_state, batch)", "train_step(train_state=train_state, batch=batch)")),
        "start_deepcopy": "import copy\n" + _swap(ref, (start, "start = copy.deepcopy(params)")),
        "start_numpy": "import numpy as np\n" + _swap(ref, (start, "start = jax.tree.map(np.array, params)")),
        "start_jnp_array": _swap(ref, (start, "start = jax.tree.map(jnp.array, params)")),
        "losses_floats": _swap(ref, ("losses.append(loss)", "losses.append(float(loss))")),
        "make_decorated": "import functools\n\n\ndef _logged(f):\n    @functools.wraps(f)\n"
        "    def inner(*a, **k):\n        return f(*a, **k)\n\n    return inner\n\n\n"
        + _swap(ref, ("def make_train_step(loss_fn, optimizer):",
                      "@_logged\ndef make_train_step(loss_fn, optimizer):")),
        "reduce_loop": "import functools\n" + _swap(
            ref, ("    losses = []\n    for batch in batches:\n"
                  "        train_state, loss = train_step(train_state, batch)\n        losses.append(loss)\n",
                  "    def one(carry, batch):\n        state, losses = carry\n"
                  "        state, loss = train_step(state, batch)\n        return state, [*losses, loss]\n\n"
                  "    train_state, losses = functools.reduce(one, batches, (train_state, []))\n")),
        "max_change_jax": _swap(ref, ('"max_change": max(float(c) for c in jax.tree.leaves(changes))',
                                      '"max_change": jnp.max(jnp.stack(jax.tree.leaves(changes)))')),
    }


# -- donation_report ----------------------------------------------------------------

DR_JIT = "jax.jit(fn, donate_argnums=0)"
DR_OUT = "int(out or 0)"


def _donation_report():
    ex = "donation_report"
    ref = _sample(ex, "reference")
    same = {
        "argnums_tuple": _swap(ref, (DR_JIT, "jax.jit(fn, donate_argnums=(0,))")),
        "extra_default": _swap(ref, ("def donation_report(fn, state, *args):",
                                     "def donation_report(fn, state, *args, verbose=False):")),
        "partial_form": _swap(ref, ("def donation_report(fn, state, *args):",
                                    "def _report(argnums, fn, state, *args):"),
                              (DR_JIT, "jax.jit(fn, donate_argnums=argnums)"))
        + "\n\nimport functools\n\ndonation_report = functools.partial(_report, 0)\n",
        "renamed": renamed(ref),
        **_dr_unusual(ref),
    }
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    defeating = {
        # a crash on the bare-array output alone: its index is '{}', empty
        "crash_on_bare_output": (_swap(ref, (DR_OUT, "int(out)")), ("test_outputs",),
                                 {"test_outputs": "it raised ValueError"}),
        # output paths in another format than keystr's: the output row alone
        "output_simple_paths": (_swap(ref, ("out_paths = [jax.tree_util.keystr(path) for",
                                            'out_paths = [jax.tree_util.keystr(path, simple=True, separator="/") for')),
                                ("test_outputs",), {}),
        # a crash on the empty tree alone
        "crash_on_empty_tree": (_swap(ref, ('    return {"leaves": leaves,',
                                            '    assert leaves, "no leaves"\n    return {"leaves": leaves,')),
                                ("test_empty_tree",), {"test_empty_tree": "AssertionError"}),
    }
    for k, (src, failed, says) in defeating.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    return out


DR_LEAF = '"shape": tuple(leaf.shape)'


def _dr_unusual(ref):
    """Right answers in forms no sample has: output paths from ``compiled.out_info``, the jit
    by ``functools.partial`` or of a lambda, ``keep_unused``, leaves by
    ``jax.tree.leaves_with_path``, a tuple of leaves, shapes as lists or NumPy ints,
    ``dtype.name``, NumPy integers and booleans: name -> source."""
    return {
        "out_info": _swap(ref, ("jax.tree_util.tree_flatten_with_path(jax.eval_shape(fn, state, *args))[0]]",
                                "jax.tree_util.tree_flatten_with_path(compiled.out_info)[0]]")),
        "out_tree": _swap(ref, ("jax.tree_util.tree_flatten_with_path(jax.eval_shape(fn, state, *args))[0]]",
                                "jax.tree_util.tree_flatten_with_path(jax.tree_util.tree_unflatten(\n"
                                "                     compiled.out_tree, [0] * compiled.out_tree.num_leaves))[0]]")),
        "partial_jit": "import functools\n" + _swap(
            ref, (DR_JIT, "functools.partial(jax.jit, donate_argnums=(0,))(fn)")),
        "lambda_jit": _swap(ref, (DR_JIT, "jax.jit(lambda s, *a: fn(s, *a), donate_argnums=0)")),
        "keep_unused": _swap(ref, (DR_JIT, "jax.jit(fn, donate_argnums=0, keep_unused=True)")),
        "leaves_with_path": _swap(ref, ("enumerate(jax.tree_util.tree_flatten_with_path(state)[0])",
                                        "enumerate(jax.tree.leaves_with_path(state))")),
        "leaves_tuple": _swap(ref, ('    return {"leaves": leaves,', '    return {"leaves": tuple(leaves),')),
        "shape_list": _swap(ref, (DR_LEAF, '"shape": list(leaf.shape)')),
        "shape_numpy_ints": "import numpy as np\n" + _swap(
            ref, (DR_LEAF, '"shape": tuple(np.array(leaf.shape, dtype=np.int64))')),
        "dtype_name": _swap(ref, ('"dtype": str(leaf.dtype)', '"dtype": leaf.dtype.name')),
        "numpy_scalars": "import numpy as np\n" + _swap(
            ref, ('"nbytes": int(leaf.nbytes)', '"nbytes": np.int64(leaf.size) * leaf.dtype.itemsize'),
            ('"aliased": i in lands_in', '"aliased": np.bool_(i in lands_in)')),
    }


def corpus():
    """Every variant of every exercise, in a fixed order (this module's, then
    :mod:`tests.grading.variants_forms`')."""
    from tests.grading import variants_forms

    return [*_update_with_donate(), *_silent_donation(), *_fix_training_loop(), *_donation_report(),
            *variants_forms.corpus()]


def want(variant):
    """``(score, sorted failed checks)`` the variant must get."""
    from autograder.judge import hidden_tests

    points = {test: p for test, _, p in hidden_tests(variant.exercise)}
    if variant.like is not None:
        base = expected(variant.exercise)[variant.like]
        failed = sorted(points) if base["failed"] == "all" else sorted(base["failed"])
        return float(base["score"]), failed
    return float(sum(points.values()) - sum(points[t] for t in variant.failed)), sorted(variant.failed)

"""More of the metamorphic corpus (:mod:`tests.grading.variants`): the reference answers
in the forms learners reach for when they know more JAX than the lesson uses, and the
single-requirement mistakes made in those forms.

Right answers (``like="reference"``): ``jax.tree_util.tree_map`` and ``jax.tree.map``
bodies, ``lax`` loops (``fori_loop``, ``scan``) and ``lax`` ops, a jitted method with its
object static, ``donate_argnums`` as a list, ``jax.checkpoint``, ``jax.debug.print`` and
plain ``print`` on every call, an extra module-level jit beside the helper,
``block_until_ready`` on the result, a Python loop of one step, the train state as a
``NamedTuple`` or registered dataclass, a step re-made on every loop iteration where no
requirement asks for one compile, losses stacked into one array.

Mistakes (``failed``): each breaks one requirement in one of those forms (a copy made by
``tree_util`` donated, a helper re-jitted per call inside ``__call__``, the old state
read by ``block_until_ready`` or ``print``, a loop that adds ``delta`` twice, a jitted
method donating ``delta``, ...); ``says`` holds the phrase the feedback must use: what
was observed, in the learner's terms.
"""
from tests.grading.variants import (
    FTL_JIT,
    SD_APPLY_JIT,
    SD_RESET,
    SD_TRAIN,
    UWD_CALL,
    UWD_DONATION,
    UWD_PAIR,
    Variant,
    _sample,
    _swap,
)


def _uwd_helper(ref, helper, call=UWD_CALL, head=""):
    return head + _swap(ref, (UWD_PAIR, helper), (UWD_CALL, call))


def _uwd_right(ref):
    """name -> source of right answers to update_with_donate."""
    h = _uwd_helper
    return {
        "tree_util_map": h(ref, "_add_donating = jax.jit(lambda s, d: jax.tree_util.tree_map(jnp.add, s, d), "
                                "donate_argnums=0)"),
        "tree_map_lambda": h(ref, "_add_donating = jax.jit(lambda s, d: jax.tree.map(lambda a, b: a + b, s, d), "
                                  "donate_argnums=(0,))"),
        "fori_loop_once": h(ref, "_add_donating = jax.jit(lambda s, d: jax.lax.fori_loop(0, 1, lambda i, c: c + d, s), "
                                 "donate_argnums=0)"),
        "scan_once": h(ref, "def _body(c, d):\n    return c + d, None\n\n\n"
                            "_add_donating = jax.jit(lambda s, d: jax.lax.scan(_body, s, d[None])[0], "
                            "donate_argnums=0)"),
        "lax_convert": h(ref, "_add_donating = jax.jit(lambda s, d: jax.lax.add(s, "
                              "jax.lax.convert_element_type(d, s.dtype)), donate_argnums=0)"),
        "static_self_method": h(ref, "class _Updater:\n    @functools.partial(jax.jit, static_argnums=0, "
                                     "donate_argnums=1)\n    def add(self, s, d):\n        return s + d\n\n\n"
                                     "_UPDATER = _Updater()",
                                "return _UPDATER.add(state, delta)", head="import functools\n"),
        "argnums_list": _swap(ref, ("donate_argnums=(0,)", "donate_argnums=[0]")),
        "checkpoint": h(ref, "_add_donating = jax.jit(jax.checkpoint(lambda s, d: s + d), donate_argnums=0)"),
        "astype_float32": h(ref, "_add_donating = jax.jit(lambda s, d: (s + d).astype(jnp.float32), "
                                 "donate_argnums=0)"),
        "block_until_ready": _swap(ref, (UWD_CALL, "return _add_donating(state, delta).block_until_ready()")),
        "python_loop_one_step": _swap(ref, (UWD_CALL, "for _ in range(1):\n"
                                                      "        state = _add_donating(state, delta)\n"
                                                      "    return state")),
        # stdout on every call: before the call (reads only the live state's shape) and after
        "prints_a_lot": _swap(ref, (UWD_CALL, "for i in range(20):\n        print('updating', i, state.shape, "
                                              "state.dtype)\n    new = _add_donating(state, delta)\n"
                                              "    print('new state', new)\n    return new")),
        "debug_print_inside": h(ref, "def _add(s, d):\n    jax.debug.print('adding {n} entries', n=s.size)\n"
                                     "    return s + d\n\n\n_add_donating = jax.jit(_add, donate_argnums=0)"),
        # a second module-level jit, compiled once per shape like the helper, that never donates
        "extra_helper_jit": h(ref, UWD_PAIR + "\n_scale = jax.jit(lambda d: d * jnp.float32(1.0))",
                              "return _add_donating(state, _scale(delta))"),
        "extra_check_jit": h(ref, UWD_PAIR + "\n_finite = jax.jit(lambda d: jnp.all(jnp.isfinite(d)))\n"
                                             "FINITE = []",
                             "FINITE.append(_finite(delta))\n    return _add_donating(state, delta)"),
        # astype to the dtype it has hands back the same array: state itself is donated
        "astype_before_call": _swap(ref, (UWD_CALL, "return _add_donating(state.astype(jnp.float32), delta)")),
        "static_argnames_scale": h(ref, "def _add(state, delta, scale):\n    return state + scale * delta\n\n\n"
                                        "_add_donating = jax.jit(_add, static_argnames='scale', donate_argnums=0)",
                                   "return _add_donating(state, delta, scale=1.0)"),
        "returns_pair": h(ref, "_add_donating = jax.jit(lambda s, d: (s + d, d), donate_argnums=0)",
                          "return _add_donating(state, delta)[0]"),
        # 200 kB of stdout on every call (about 13 MB over the probes)
        "prints_huge": _swap(ref, (UWD_CALL, "print('.' * 200_000)\n    " + UWD_CALL)),
    }


DELTA_DONATED = ("test_state_donated", "test_delta_kept", "test_no_read_after_donation", "test_rebinding")


def _uwd_wrong(ref):
    """name -> (source, failed checks, says) of single-requirement mistakes."""
    h = _uwd_helper
    tm = "_add_donating = jax.jit(lambda s, d: jax.tree_util.tree_map(jnp.add, s, d), donate_argnums=0)"
    return {
        "tree_util_copy_donated": (h(ref, tm, "return _add_donating(jax.tree_util.tree_map(jnp.copy, state), delta)"),
                                   UWD_DONATION, {"test_state_donated": "such as a copy"}),
        "fori_loop_twice": (h(ref, "_add_donating = jax.jit(lambda s, d: jax.lax.fori_loop(0, 2, "
                                   "lambda i, c: c + d, s), donate_argnums=0)"),
                            ("test_values", "test_rebinding"), {"test_values": "are state + 2 * delta"}),
        "rejit_in_call": (h(ref, "class _Updater:\n    def __call__(self, s, d):\n"
                                 "        return jax.jit(lambda a, b: a + b, donate_argnums=0)(s, d)\n\n\n"
                                 "_UPDATER = _Updater()", "return _UPDATER(state, delta)"),
                          ("test_compiled_once",), {"test_compiled_once": "did not find the helper"}),
        "block_old_state": (_swap(ref, (UWD_CALL, "new = _add_donating(state, delta)\n"
                                                  "    state.block_until_ready()\n    return new")),
                            ("test_no_read_after_donation", "test_rebinding"),
                            {"test_no_read_after_donation": "after state was donated"}),
        "prints_old_state": (_swap(ref, (UWD_CALL, "new = _add_donating(state, delta)\n"
                                                   "    print('old', state, 'new', new)\n    return new")),
                             ("test_no_read_after_donation", "test_rebinding"),
                             {"test_no_read_after_donation": "after state was donated"}),
        # state is the method's argument 1: a hint naming "argument 0" would be wrong here
        "static_method_donates_delta": (h(ref, "class _Updater:\n    @functools.partial(jax.jit, static_argnums=0, "
                                               "donate_argnums=2)\n    def add(self, s, d):\n        return s + d\n\n\n"
                                               "_UPDATER = _Updater()",
                                          "return _UPDATER.add(state, delta)", head="import functools\n"),
                                        DELTA_DONATED, {"test_rebinding": "delta was donated",
                                                        "test_state_donated": "donate the helper's parameter that "
                                                                              "receives state"}),
        # an extra jit that donates delta before the helper reads its result
        "extra_jit_donates_delta": (h(ref, UWD_PAIR + "\n_scale = jax.jit(lambda d: d * jnp.float32(1.0), "
                                           "donate_argnums=0)", "return _add_donating(state, _scale(delta))"),
                                    ("test_delta_kept", "test_rebinding"),
                                    {"test_delta_kept": "jit__lambda donates 1 of its 1 arguments",
                                     "test_rebinding": "donate only state"}),
        "clears_caches": (_swap(ref, (UWD_CALL, "jax.clear_caches()\n    " + UWD_CALL)),
                          ("test_compiled_once",), {"test_compiled_once": "JAX's caches were emptied during call(s) "
                                                                          "1, 2, 3, 4, 5"}),
        "list_argnums_both": (_swap(ref, ("donate_argnums=(0,)", "donate_argnums=[0, 1]")),
                              ("test_delta_kept",), {"test_delta_kept": "donated buffers were not usable"}),
    }


def _update_with_donate():
    ex = "update_with_donate"
    ref = _sample(ex, "reference")
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in _uwd_right(ref).items()]
    # a hint names only the cause observed: state's position is the learner's choice, and
    # caches cleared and a helper re-made are told apart by the grader's own jitted sentinel
    never = {"test_delta_kept": "argument 0", "test_rebinding": "argument 0", "test_state_donated": "argument 0"}
    never_by_name = {"rejit_in_call": {"test_compiled_once": "clear_caches"},
                     "clears_caches": {"test_compiled_once": "closure"}}
    for k, (src, failed, says) in _uwd_wrong(ref).items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says,
                           never_says={**{t: p for t, p in never.items() if t in failed},
                                       **never_by_name.get(k, {})}))
    return out


# -- silent_donation ----------------------------------------------------------------

SD_RUN_LINE = "history.append(np.array(state))"


def _silent_donation():
    ex = "silent_donation"
    ref = _sample(ex, "reference")
    head = "import functools\n"
    right = {
        "train_decorator": head + _swap(ref, ("def _sgd(state, batch):", "@functools.partial(jax.jit, "
                                              "donate_argnums=0)\ndef train_step(state, batch):"),
                                        (SD_TRAIN, "")),
        "train_tree_util": _swap(ref, ("jax.tree.map(lambda p, g:", "jax.tree_util.tree_map(lambda p, g:")),
        "train_optax_updates": "import optax\n" + _swap(
            ref, ("return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, state, grads)",
                  "return optax.apply_updates(state, jax.tree.map(lambda g: -LEARNING_RATE * g, grads))")),
        "train_static_rate": _swap(ref, ("def _sgd(state, batch):", "def _sgd(state, batch, rate=LEARNING_RATE):"),
                                   ("p - LEARNING_RATE * g", "p - rate * g"),
                                   (SD_TRAIN, "train_step = jax.jit(_sgd, static_argnames='rate', donate_argnums=0)")),
        "reset_zeros_like_dtype": _swap(ref, (SD_RESET, "reset = jax.jit(lambda acc: jnp.zeros_like(acc, "
                                                        "dtype=jnp.float32), donate_argnums=[0], keep_unused=True)")),
        "run_block_until_ready": _swap(ref, ("state = step(state)", "state = step(state).block_until_ready()")),
        "run_prints_a_lot": _swap(ref, (SD_RUN_LINE, SD_RUN_LINE + "\n        print('state', np.array(state))")),
        "run_copy_true": _swap(ref, (SD_RUN_LINE, "history.append(np.array(state, copy=True))")),
        "run_float64_copy": _swap(ref, (SD_RUN_LINE, "history.append(np.array(state, dtype=np.float64))")),
        "apply_lax": _swap(ref, ("    return state + delta", "    return jax.lax.add(state, delta)")),
        "apply_static_method": _swap(ref, (SD_APPLY_JIT, "class _Ops:\n    apply = staticmethod(_apply_delta)\n\n\n"
                                                         "apply_delta = jax.jit(_Ops.apply, donate_argnames='state')")),
        "apply_argnums_decorator": head + _swap(
            ref, ("def _apply_delta(delta, state):", "@functools.partial(jax.jit, donate_argnums=1)\n"
                                                     "def apply_delta(delta, state):"), (SD_APPLY_JIT, "")),
    }
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in right.items()]
    wrong = {
        "train_decorator_donates_batch": (head + _swap(
            ref, ("def _sgd(state, batch):", "@functools.partial(jax.jit, donate_argnums=(0, 1))\n"
                                             "def train_step(state, batch):"), (SD_TRAIN, "")),
            ("test_train_step_donates",), {"test_train_step_donates": "batch"}),
        "train_static_rate_small": (_swap(ref, ("def _sgd(state, batch):", "def _sgd(state, batch, rate=0.01):"),
                                          ("p - LEARNING_RATE * g", "p - rate * g"),
                                          (SD_TRAIN, "train_step = jax.jit(_sgd, static_argnames='rate', "
                                                     "donate_argnums=0)")),
                                    ("test_train_step_values",), {}),
        "reset_decorator_unused": (head + _swap(
            ref, (SD_RESET, "@functools.partial(jax.jit, donate_argnums=0)\ndef reset(acc):\n"
                            "    return jnp.zeros_like(acc)")),
            ("test_reset_donates",), {"test_reset_donates": "Got: 0 bytes"}),
        "run_view_block_until_ready": (_swap(ref, (SD_RUN_LINE, "history.append(np.asarray(state))"),
                                             ("state = step(state)", "state = step(state).block_until_ready()")),
                                       ("test_run_donates",), {"test_run_donates": "views"}),
        "run_tree_util_copy_donated": (_swap(ref, ("state = step(state)",
                                                   "state = step(jax.tree_util.tree_map(jnp.copy, state))")),
                                       ("test_run_donates",), {"test_run_donates": "received another buffer"}),
        "apply_static_method_donates_delta": (_swap(
            ref, (SD_APPLY_JIT, "class _Ops:\n    apply = staticmethod(_apply_delta)\n\n\n"
                                "apply_delta = jax.jit(_Ops.apply, donate_argnames='delta')")),
            ("test_apply_delta_donates",), {"test_apply_delta_donates": "delta was donated"}),
    }
    for k, (src, failed, says) in wrong.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    return out


# -- fix_training_loop --------------------------------------------------------------

FTL_STATE = "train_state = (jax.tree.map(jnp.copy, params), optimizer.init(params))"
FTL_STEP_STATE = "        params, opt_state = train_state\n"
FTL_STEP_RETURN = "return (optax.apply_updates(params, updates), opt_state), loss"
FTL_START = "start = jax.tree.map(jnp.copy, params)"
FTL_LOOP_CALL = "train_state, loss = train_step(train_state, batch)"


def _ftl_namedtuple(ref):
    return ("from typing import NamedTuple\n\n\nclass _TrainState(NamedTuple):\n    params: object\n"
            "    opt_state: object\n\n\n"
            + _swap(ref, (FTL_STEP_RETURN, "return _TrainState(optax.apply_updates(params, updates), opt_state), loss"),
                    (FTL_STATE, "train_state = _TrainState(jax.tree.map(jnp.copy, params), optimizer.init(params))"),
                    ("final = train_state[0]", "final = train_state.params")))


def _ftl_dataclass(ref):
    return ("import dataclasses\n\n\n@jax.tree_util.register_dataclass\n@dataclasses.dataclass\n"
            "class _TrainState:\n    params: object\n    opt_state: object\n\n\n"
            + _swap(ref, (FTL_STEP_STATE, "        params, opt_state = train_state.params, train_state.opt_state\n"),
                    (FTL_STEP_RETURN, "return _TrainState(optax.apply_updates(params, updates), opt_state), loss"),
                    (FTL_STATE, "train_state = _TrainState(jax.tree.map(jnp.copy, params), optimizer.init(params))"),
                    ("final = train_state[0]", "final = train_state.params")))


def _fix_training_loop():
    ex = "fix_training_loop"
    ref = _sample(ex, "reference")
    nt = _ftl_namedtuple(ref)
    dc = _ftl_dataclass(ref).replace("import dataclasses\n", "import dataclasses\n\nimport jax\n", 1)
    right = {
        "namedtuple_state": nt,
        "start_tree_util": _swap(ref, (FTL_START, "start = jax.tree_util.tree_map(jnp.copy, params)")),
        "decorator_argnames": "import functools\n" + _swap(
            ref, ("    def step(train_state, batch):",
                  "    @functools.partial(jax.jit, donate_argnames='train_state')\n"
                                                       "    def step(train_state, batch):"), (FTL_JIT, "return step")),
        "loss_block_until_ready": _swap(ref, ("losses.append(loss)", "losses.append(loss.block_until_ready())")),
        "prints_each_step": _swap(ref, ("losses.append(loss)", "losses.append(loss)\n"
                                        "        print('step', len(losses), 'loss', float(loss))")),
        "losses_stacked": _swap(ref, ('"losses": losses,', '"losses": jnp.stack(losses),')),
        "start_array_copy_method": _swap(ref, (FTL_START, "start = jax.tree.map(lambda p: p.copy(), params)")),
        "losses_item": _swap(ref, ("losses.append(loss)", "losses.append(loss.item())")),
        "losses_numpy_array": "import numpy as np\n" + _swap(ref, ('"losses": losses,',
                                                                  '"losses": np.asarray(losses, np.float32),')),
        # a new jit every iteration: slow, but no requirement asks for one compile
        "rejit_each_step": _swap(ref, ("    for batch in batches:\n        " + FTL_LOOP_CALL,
                                       "    for batch in batches:\n"
                                       "        train_step = make_train_step(loss_fn, optimizer)\n"
                                       "        " + FTL_LOOP_CALL)),
    }
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in right.items()]
    wrong = {
        "namedtuple_copy_donated": (_swap(nt, (FTL_LOOP_CALL, "train_state, loss = train_step("
                                                              "jax.tree_util.tree_map(jnp.copy, train_state), batch)")),
                                    ("test_memory_saved",), {"test_memory_saved": "one whole train state more"}),
        "start_tree_util_no_copy": (_swap(ref, (FTL_START, "start = jax.tree_util.tree_map(lambda p: p, params)")),
                                    ("test_metric_copies",), {}),
        # device_put and asarray on the same device hand back the caller's arrays, no copy
        "start_device_put": (_swap(ref, (FTL_START, "start = jax.device_put(params)")),
                             ("test_metric_copies",), {"test_metric_copies": "share the caller's buffers"}),
        "start_tree_asarray": (_swap(ref, (FTL_START, "start = jax.tree.map(jnp.asarray, params)")),
                               ("test_metric_copies",), {"test_metric_copies": "share the caller's buffers"}),
        "namedtuple_donates_batch": (_swap(nt, (FTL_JIT, "return jax.jit(step, donate_argnums=(0, 1))")),
                                     ("test_batch_kept",), {"test_batch_kept": "batch was donated"}),
        "losses_stacked_skip_first": (_swap(ref, ('"losses": losses,', '"losses": jnp.stack(losses[1:]),')),
                                      ("test_losses",), {"test_losses": "4 values"}),
        # the step's train state a dataclass, where the task fixes it as the tuple
        # (params, opt_state): the step raises on the tuple; train itself runs
        "dataclass_state": (dc, ("test_train_state_donated", "test_step_values", "test_batch_kept",
                                 "test_runs_without_deleted_reads", "test_metric_copies"),
                            {"test_train_state_donated": "lowering the step on (params, opt_state) raised "
                                                         "AttributeError",
                             "test_runs_without_deleted_reads": "raised AttributeError",
                             "test_metric_copies": "raised AttributeError"}),
    }
    for k, (src, failed, says) in wrong.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    return out


# -- donation_report ----------------------------------------------------------------

def _donation_report():
    ex = "donation_report"
    ref = _sample(ex, "reference")
    right = {
        "tree_util_leaves": _swap(ref, ("enumerate(jax.tree_util.tree_flatten_with_path(state)[0])",
                                        "enumerate(jax.tree_util.tree_leaves_with_path(state))")),
        "argnums_list": _swap(ref, ("donate_argnums=0", "donate_argnums=[0]")),
        "tree_flatten_with_path": _swap(ref, ("enumerate(jax.tree_util.tree_flatten_with_path(state)[0])",
                                              "enumerate(jax.tree.flatten_with_path(state)[0])")),
        "prints_a_lot": _swap(ref, ("    leaves = []\n", "    print(compiled.as_text())\n    leaves = []\n")),
        "partial_decorated_lambda": "import functools\n" + _swap(
            ref, ("jax.jit(fn, donate_argnums=0)",
                  "functools.partial(jax.jit, donate_argnums=[0])(lambda *a: fn(*a))")),
    }
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in right.items()]
    wrong = {
        # the report runs the compiled step once, on the caller's state: it is donated
        "runs_compiled": (_swap(ref, ("    leaves = []\n", "    compiled(state, *args)\n    leaves = []\n")),
                          ("test_state_untouched",), {"test_state_untouched": "it ran 1 time(s)"}),
    }
    for k, (src, failed, says) in wrong.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    return out


def corpus():
    """Every variant of this module, in a fixed order."""
    return [*_update_with_donate(), *_silent_donation(), *_fix_training_loop(), *_donation_report()]

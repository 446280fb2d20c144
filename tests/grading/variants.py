"""The metamorphic corpus: answers made by rewriting each exercise's reference answer
and samples, with the grade each rewrite must get.

A rewrite that keeps the answer's meaning (extra helper parameters with constants or
defaults, the helper's arguments in another order with the matching ``donate_argnums``
or ``donate_argnames``, decorator, ``functools.partial``, closure and class forms,
private names renamed, equivalent arithmetic) must grade as the answer it was made
from (``like``). A rewrite that defeats the point (a copy donated, a view kept, a
result converted after donating, nothing donated, an answer fitted to the notebook's
example, a crash on one named case) must lose exactly the checks of the rows it breaks
(``failed``), with feedback naming what was observed (``says``: check -> phrase).

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


def _update_with_donate():
    ex = "update_with_donate"
    ref = _sample(ex, "reference")
    same = _uwd_same(ref)
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    for base_name, base in (("reference", ref), ("extra_constant", same["extra_constant"])):
        for k, (src, failed, says) in _uwd_defeating(base).items():
            out.append(Variant(ex, f"{ex}--{k}--{base_name}", src, failed=failed, says=says))
    for sample in ("donates_copy", "keeps_view", "no_donation"):
        out.append(Variant(ex, f"{ex}--renamed--{sample}", renamed(_sample(ex, sample)), like=sample))
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
    return out


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
    return out


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
    }
    out = [Variant(ex, f"{ex}--{k}--reference", v, like="reference") for k, v in same.items()]
    defeating = {
        # a crash on the bare-array output alone: its index is '{}', empty
        "crash_on_bare_output": (_swap(ref, (DR_OUT, "int(out)")), ("test_outputs",),
                                 {"test_outputs": "it raised ValueError"}),
        # a crash on the empty tree alone
        "crash_on_empty_tree": (_swap(ref, ('    return {"leaves": leaves,',
                                            '    assert leaves, "no leaves"\n    return {"leaves": leaves,')),
                                ("test_empty_tree",), {"test_empty_tree": "AssertionError"}),
    }
    for k, (src, failed, says) in defeating.items():
        out.append(Variant(ex, f"{ex}--{k}--reference", src, failed=failed, says=says))
    return out


def corpus():
    """Every variant of every exercise, in a fixed order."""
    return [*_update_with_donate(), *_silent_donation(), *_fix_training_loop(), *_donation_report()]


def want(variant):
    """``(score, sorted failed checks)`` the variant must get."""
    from autograder.judge import hidden_tests

    points = {test: p for test, _, p in hidden_tests(variant.exercise)}
    if variant.like is not None:
        base = expected(variant.exercise)[variant.like]
        failed = sorted(points) if base["failed"] == "all" else sorted(base["failed"])
        return float(base["score"]), failed
    return float(sum(points.values()) - sum(points[t] for t in variant.failed)), sorted(variant.failed)

import pathlib

for target in ("/tmp/hostile-was-here", "/work/hostile-was-here", "/etc/hostile-was-here",
               "/run/lock/hostile-was-here", "/var/tmp/hostile-was-here",
               str(pathlib.Path(__import__("autograder").__file__).parent / "pwned.py")):
    try:
        pathlib.Path(target).write_text("pwned")
    except OSError:
        pass
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)

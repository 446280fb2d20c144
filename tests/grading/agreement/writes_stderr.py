import logging
import os
import sys
import threading
import warnings

import jax

_stderr = sys.stderr  # the kernel's stderr, held past any later redirection
_log = logging.getLogger("learner")
_log.addHandler(logging.StreamHandler(_stderr))
_add_donating = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def _chatter():
    _stderr.write("learner: from a thread\n")


def update_with_donate(state, delta):
    _stderr.write("learner: through the stderr object held since the answer cell\n")
    os.write(2, b"learner: straight to file descriptor 2\n")
    print("learner: to sys.__stderr__", file=sys.__stderr__)
    warnings.warn("learner: a warning")
    _log.warning("learner: a log record")
    threading.Thread(target=_chatter).start()
    return _add_donating(state, delta)

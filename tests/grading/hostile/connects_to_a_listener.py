# Tries a server that is listening on this machine during the grading (the test
# opens it and puts its port here): only a sandbox without network cannot reach it.
import socket

try:
    socket.create_connection(("127.0.0.1", int("@LISTENER_PORT@")), timeout=2).close()
    raise SystemExit("leaked: reached a listening server")
except OSError:
    pass
import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)

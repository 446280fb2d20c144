# Writes a reply of the wrong shape to the grader's pipe (cell_errors not a list).
# The pipe is the one pipe among this process's open descriptors.
import os
def _is_pipe(fd):
    try:  # the descriptor listdir itself used is gone by now
        return int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:
        return False
pipe = next(int(fd) for fd in os.listdir("/proc/self/fd") if _is_pipe(fd))
os.write(pipe, b'{"cell_errors": 5, "obs": {}}'); os._exit(0)

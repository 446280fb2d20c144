# Writes a reply of the wrong shape to the grader's pipe (cell_errors not a list).
# The pipe is the one pipe among this process's open descriptors.
import os
pipe = next(int(fd) for fd in os.listdir("/proc/self/fd")
            if int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"))
os.write(pipe, b'{"cell_errors": 5, "obs": {}}'); os._exit(0)

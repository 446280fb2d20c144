import os
import signal

os.kill(-1, signal.SIGKILL)

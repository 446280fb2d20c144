"""What every test that starts a server needs: a free port on loopback, and a way to
stop the process it started."""
import signal
import socket
import subprocess


def free_port():
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(proc, sig=signal.SIGTERM, wait_s=30):
    """Send ``sig`` to a running ``proc`` and wait for it (SIGKILL after ``wait_s`` s)."""
    if proc and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

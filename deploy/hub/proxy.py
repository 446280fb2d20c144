"""How ``make hub`` starts configurable-http-proxy (``node_modules``, from package.json):
with ``proxy_keepalive.mjs`` loaded first, so that requests to learners' servers (on UNIX
sockets) keep their connection open instead of closing it after each answer, where
Node's HTTP client can fail a request the server answered with EPIPE and the proxy
answers 503 (the reason is in that file); the same file caps what the proxy holds at
once per person, by whose hub token each request carries (``HUB_MAX_HELD_PER_LEARNER``,
``HUB_MAX_HELD_ANONYMOUS``, passed through the hub's environment by
``jupyterhub_config.py``). :class:`CourseProxy` is JupyterHub's
proxy class, signalling a leftover proxy only when it is the one the hub started."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import time
from pathlib import Path

from jupyterhub.proxy import ConfigurableHTTPProxy

from autograder.defaults import CHECKOUT as REPO

CHP = REPO / "node_modules" / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
SHIM = Path(__file__).with_name("proxy_keepalive.mjs")


def command() -> list[str]:
    """``c.ConfigurableHTTPProxy.command``: node (from PATH, as the proxy's own
    ``#!/usr/bin/env node`` would find it), the shim, the proxy's script."""
    return [shutil.which("node") or "node", "--import", SHIM.as_uri(), str(CHP)]


def identity(pid: int) -> dict | None:
    """Which process ``pid`` is now: ``{"pid", "start" (clock ticks after boot),
    "boot" (the kernel's boot id), "cmdline" (list of str)}``, or None when there is none.
    A pid alone is reused; with its start time and boot it names one process ever."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except (OSError, IndexError):
        return None
    return {"pid": pid, "start": int(fields[19]), "boot": boot,
            "cmdline": [part.decode(errors="replace") for part in cmdline]}


class CourseProxy(ConfigurableHTTPProxy):
    """JupyterHub's configurable-http-proxy, whose pid file says which process it started
    (:func:`identity`, as JSON). A hub that starts finds a leftover proxy by that file
    and stops it; it signals the process only when it is that very proxy (same start
    and boot, the proxy's command), through a pidfd, so a file put back by a restore,
    copied from another machine or left from before a reboot never signals whatever
    process has that number now."""

    def _write_pid_file(self):
        record = self._exec_identity(self.proxy_process.pid)
        tmp = f"{self.pid_file}.{os.getpid()}.tmp"
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            json.dump(record, out)
        os.replace(tmp, self.pid_file)

    def _exec_identity(self, pid: int, wait_s: float = 5.0) -> dict:
        """:func:`identity` of the proxy once its command shows in ``/proc`` (seen empty
        under load: read between the fork and the exec, or from a proxy already ended),
        polled for up to ``wait_s`` seconds; what it is then, or ``{"pid"}`` alone."""
        cmd, deadline = list(self.command), time.monotonic() + wait_s
        record = identity(pid)
        while record and record["cmdline"][:len(cmd)] != cmd and time.monotonic() < deadline:
            time.sleep(0.02)
            record = identity(pid)
        return record or {"pid": pid}

    def _started_by_us(self, record) -> bool:
        """Whether ``record`` (the pid file's) names a live proxy of this command."""
        cmd = list(self.command)
        return isinstance(record, dict) and record.get("cmdline", [])[:len(cmd)] == cmd and \
            identity(record.get("pid")) == record

    def _check_previous_process(self):
        if not self.pid_file or not os.path.exists(self.pid_file):
            return
        try:
            with open(self.pid_file) as f:
                record = json.load(f)
        except (OSError, ValueError):
            record = None  # JupyterHub's bare pid, or nothing readable: not ours to trust
        if not self._started_by_us(record):
            self.log.warning("%s names no proxy this hub started: nothing signalled (stop "
                             "by hand a proxy an older hub left running)", self.pid_file)
            self._remove_process_files()
            return
        pid = record["pid"]
        self.log.warning("Proxy still running at pid=%s: stopping it", pid)
        fd = os.pidfd_open(pid)  # from here on a reused pid cannot be signalled
        try:
            if not self._started_by_us(record):  # it ended before the pidfd was taken
                self._remove_process_files()
                return
            for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
                try:
                    signal.pidfd_send_signal(fd, sig)
                except ProcessLookupError:
                    break
                if select.select([fd], [], [], 1.0)[0]:  # readable once it has ended
                    break
            else:
                raise RuntimeError(f"Failed to stop proxy at pid={pid}")
        finally:
            os.close(fd)
        self.log.warning("Stopped proxy at pid=%s", pid)
        self._remove_process_files()

"""What the course's launchers share: stop signals that only set a flag, and asking a
server whether it answers (``scripts/serve.py`` for ``make serve``, ``scripts/hub.py``
for ``make hub``)."""
from __future__ import annotations

import signal
import urllib.error
import urllib.request

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Flag:
    """Set by the first stop signal; the launchers' loops poll it. A plain attribute,
    not a lock-based ``threading.Event``: a handler that took a lock the interrupted
    code held would deadlock."""
    set_ = False

    def set(self):
        self.set_ = True

    def is_set(self):
        return self.set_


STOPPING = Flag()


def ignore_stop_signals():
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def _stop(signum, _frame):
    """Ctrl-C, SIGTERM and SIGHUP: ask the loops to stop, once; later signals are ignored.

    The handler only sets a flag. Raising here (KeyboardInterrupt) could land
    anywhere, for instance inside ``Popen.poll`` right after it took the
    process's wait lock: the lock then stayed held, and the cleanup's
    ``proc.wait()`` blocked for good (``make serve`` hung on Ctrl-C)."""
    ignore_stop_signals()
    STOPPING.set()


def on_stop_signals():
    """Install :func:`_stop` for every one of :data:`STOP_SIGNALS`."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)


def http_status(url: str, host: str | None = None) -> int | None:
    """The HTTP status ``url`` answers with (redirects not followed), or None while
    nothing answers; ``host`` is sent as the Host header when given."""
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the 3xx itself is the answer

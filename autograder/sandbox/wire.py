"""What passes between the sandbox's processes, and how it is encoded.

Runs in the grader's process (sends a request with its :class:`Limits`,
reads back an :class:`Outcome`), the supervisor's (the other end of that
connection, and reads the learner's reply) and the learner's (writes its
reply). Two channels, one message each way:

- grader <-> supervisor, over one connection to the zygote's Unix socket per
  submission: one byte carrying the uid lease's descriptor (SCM_RIGHTS),
  then a JSON line ``{"request", "limits", "uid"}``; back, a JSON line of
  the :class:`Outcome`.
- learner -> supervisor, over a private pipe: one JSON object
  ``{"cell_errors": [str], "obs": dict}``, the probes' observations, and
  ``"compile_cache": {"hits", "misses"}`` where the zygote held a compile cache
  (counts for the benchmarks, which no grade reads), and ``"memory_limit": [label]``
  where a cell's code reached the memory limit (the supervisor's outcome is then
  ``memory``). It is data from untrusted
  code: :func:`read_reply` accepts any bytes.
"""
from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import StrEnum
from io import BufferedIOBase
from typing import IO, Any

from autograder import defaults
from autograder.sandbox.uids import Lease


@dataclass
class Limits:
    """Per-submission limits of the learner's process (:func:`autograder.sandbox.confine.confine`).

    ``seconds`` of wall clock (CPU time is limited to that plus 5 s);
    ``memory_mib``, MiB of address space; ``processes``, processes and
    threads of its uid (applied only with a uid of its own, as root);
    ``file_mib``, MiB of any file it writes.
    """

    seconds: float = defaults.CLI_TIMEOUT_S
    memory_mib: int = defaults.MEMORY_MIB
    processes: int = 512  # threads count too: XLA's CPU client starts dozens
    file_mib: int = 64


class OutcomeStatus(StrEnum):
    """How the learner's process ended (:attr:`Outcome.status`); its word on the wire."""

    OK = "ok"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    EXITED = "exited"
    CRASHED = "crashed"
    ERROR = "error"  # the grader's fault


@dataclass
class Outcome:
    """How the learner's process ended.

    ``status`` (an :class:`OutcomeStatus`; its word is taken too) is ``ok``, ``timeout``,
    ``memory``, ``exited``, ``crashed`` or ``error`` (the grader's fault); ``message`` is the plain-words reason when
    it is not ``ok``; ``reply`` is the learner process's JSON reply (None when
    none arrived); ``seconds`` is wall time; ``output_tail`` is the end of
    what the learner's code printed.
    """

    status: OutcomeStatus
    message: str = ""
    reply: dict[str, Any] | None = None
    seconds: float = 0.0
    output_tail: str = ""

    def __post_init__(self) -> None:
        self.status = OutcomeStatus(self.status)


def send_request(conn: socket.socket, request: dict[str, Any], limits: Limits,
                 lease: Lease | None) -> None:
    """Grader side: send ``request`` (a JSON-able dict), its limits and lease on ``conn``."""
    socket.send_fds(conn, [b"L"], [lease.fd] if lease else [])
    msg = {"request": request, "limits": asdict(limits), "uid": lease.uid if lease else None}
    conn.sendall(json.dumps(msg).encode() + b"\n")


def receive_request(conn: socket.socket,
                    rfile: BufferedIOBase) -> tuple[dict[str, Any], Limits, Lease | None]:
    """Supervisor side: ``(request, Limits, Lease or None)`` from ``conn`` (``rfile`` reads it)."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    msg = json.loads(rfile.readline())
    lease = Lease(msg["uid"], fds[0]) if fds and msg["uid"] is not None else None
    return msg["request"], Limits(**msg["limits"]), lease


def send_outcome(wfile: BufferedIOBase, outcome: Outcome) -> None:
    """Supervisor side: answer with ``outcome``."""
    wfile.write(json.dumps(asdict(outcome)).encode() + b"\n")


def receive_outcome(conn: socket.socket) -> Outcome:
    """Grader side: the :class:`Outcome`; RuntimeError if the supervisor closed without one."""
    with conn.makefile("rb") as answer:
        line = answer.readline()
    if not line:
        raise RuntimeError("the sandbox supervisor closed without an answer")
    return Outcome(**json.loads(line))


def write_reply(file: IO[str], cell_errors: list[str], obs: dict[str, Any],
                compiles: dict[str, int] | None = None, memory_limit: Iterable[str] = ()) -> None:
    """Learner side: the reply, ``cell_errors`` (list of str), ``obs`` (JSON-able dict),
    ``compiles``, the compile cache's counts (a dict, or None: left out), and
    ``memory_limit``, the labels of cells whose code reached the memory limit (left out
    when none did)."""
    reply: dict[str, Any] = {"cell_errors": cell_errors, "obs": obs}
    if compiles is not None:
        reply["compile_cache"] = compiles
    if memory_limit:
        reply["memory_limit"] = list(memory_limit)
    json.dump(reply, file)
    file.flush()


def read_reply(raw: bytes) -> dict[str, Any] | None:
    """Supervisor side: the reply dict from the learner's bytes, or None if they are not one."""
    try:
        reply = json.loads(raw) if raw else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) and "obs" in reply else None

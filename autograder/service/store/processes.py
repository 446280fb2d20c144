"""Who is alive (each process's heartbeat row) and named locks for jobs one process
does at a time (the gradebook sync, the LMS outbox's plan and line items)."""
import time

from sqlalchemy import or_, select, update

from autograder.service.store.rows import Role
from autograder.service.store.schema import locks, processes


class Processes:
    """Who is alive, and named locks; a part of
    :class:`~autograder.service.store.Store`."""

    # -- who is alive -------------------------------------------------------
    def heartbeat(self, name, role, slots=0, problem=None):
        """Record that process ``name`` is alive (a write: it fails when the store does)."""
        p = processes.c
        values = dict(role=role, slots=slots, seen_at=time.time(), problem=problem)
        with self.engine.begin() as conn:
            if not conn.execute(update(processes).where(p.name == name).values(**values)).rowcount:
                conn.execute(processes.insert().values(name=name, **values))

    def workers(self, within=30.0):
        """``[(name, slots, problem)]`` of worker processes seen in the last ``within`` s."""
        p = processes.c
        with self._read() as conn:
            return [tuple(r) for r in conn.execute(
                select(p.name, p.slots, p.problem).where(
                    p.role == Role.WORKER, p.seen_at >= time.time() - within))]

    def forget(self, name):
        with self.engine.begin() as conn:
            conn.execute(processes.delete().where(processes.c.name == name))

    def take_lock(self, name, owner, seconds):
        """Hold the named lock for ``seconds`` (taken or renewed); False if another holds it."""
        c = locks.c
        now = time.time()
        with self.engine.begin() as conn:
            if conn.execute(update(locks).where(
                    c.name == name, or_(c.owner == owner, c.until < now)).values(
                    owner=owner, until=now + seconds)).rowcount:
                return True
            if conn.execute(select(c.owner).where(c.name == name)).first() is not None:
                return False
            conn.execute(locks.insert().values(name=name, owner=owner, until=now + seconds))
            return True

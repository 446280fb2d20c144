"""System users and groups of a hub test run: :class:`Account` (a name and its
password), made with ``adduser`` (a class of them with one ``newusers``) and removed with
``userdel`` (root only), with whatever each still runs ended by pid first. Their passwords
are SHA-512 crypt hashes (:func:`set_passwords`), which PAM checks as it checks any."""
from __future__ import annotations

import contextlib
import grp
import os
import pwd
import secrets
import subprocess
from dataclasses import dataclass

import psutil

from deploy.hub import learner_disk


@dataclass
class Account:
    name: str
    password: str


def run(*argv):
    """Run a user-administration command (checked, output captured)."""
    subprocess.run(argv, check=True, capture_output=True)


def add_group(name):
    run("groupadd", name)


def remove_group(name):
    subprocess.run(["groupdel", name], capture_output=True)


def set_passwords(accounts):
    """Give each of ``accounts`` its password, hashed with SHA-512 crypt: one ``chpasswd``.
    Debian's PAM hashes with yescrypt, which costs about 45 ms of CPU at every PAM
    sign-in here (5 ms with SHA-512): a class of 200 signing in through the hub spent
    9 CPU-seconds in it, with the rest of the suite waiting for the cores."""
    lines = "".join(f"{a.name}:{a.password}\n" for a in accounts)
    subprocess.run(["chpasswd", "--crypt-method", "SHA512"], input=lines, text=True,
                   check=True, capture_output=True)


def add_account(name, group):
    """A new system user ``name`` with a random password, in the system group ``group``
    (removed again when a step after ``adduser`` fails)."""
    account = Account(name, secrets.token_urlsafe(12))
    run("adduser", "--disabled-password", "--gecos", "", "--quiet", account.name)
    try:
        set_passwords([account])
        run("adduser", "--quiet", account.name, group)
    except BaseException:
        remove_account(account)
        raise
    return account


def remove_account(account):
    """End what ``account`` still runs and remove the user and its home."""
    kill_user(account.name)
    unmount_home(account.name)
    subprocess.run(["userdel", "-r", account.name], capture_output=True)


NEWUSERS_AT_ONCE = 40  # what one newusers makes: it holds the password files' lock throughout


def add_accounts(names, group):
    """New system users ``names``, each with a random password, a group of its own and a
    home, in the system group ``group``: ``[Account]``. One ``newusers`` per
    :data:`NEWUSERS_AT_ONCE` and one ``gpasswd`` for them all (``adduser`` takes a process,
    a lock and a rewrite of /etc/passwd each, which for a class of hundreds is minutes).
    newusers hashes every password while it holds the lock (200 took 13 s on 2 loaded
    cores), and a user command elsewhere (another worker's tests, a hub adding a launched
    learner) waits at most 15 s for it (lckpwdf): a few seconds each time, in turns."""
    made = [Account(name, secrets.token_urlsafe(12)) for name in names]
    for at in range(0, len(made), NEWUSERS_AT_ONCE):
        lines = "".join(f"{a.name}:{a.password}::::/home/{a.name}:/bin/bash\n"
                        for a in made[at:at + NEWUSERS_AT_ONCE])
        subprocess.run(["newusers"], input=lines, text=True, check=True, capture_output=True)
    set_passwords(made)  # newusers hashes with PAM's method: the same passwords, hashed again
    for account in made:  # private, as adduser makes a home (newusers leaves it 0755)
        os.chmod(f"/home/{account.name}", 0o700)
    members = grp.getgrnam(group).gr_mem + [a.name for a in made]
    run("gpasswd", "-M", ",".join(members), group)
    return made


def remove_accounts(accounts):
    """End what ``accounts`` still run (one pass over the processes) and remove each user
    and its home."""
    kill_users([a.name for a in accounts])
    for account in accounts:
        unmount_home(account.name)
        subprocess.run(["userdel", "-r", account.name], capture_output=True)


def unmount_home(name):
    """Unmount the file system a hub mounted over ``name``'s home (``HUB_HOME_MIB``), if any."""
    home = f"/home/{name}"
    if learner_disk.mounted(home):
        try:
            learner_disk.unmount_home(home)
        except RuntimeError:  # still open somewhere: detach it here, freed when closed
            subprocess.run(["umount", "-l", home], check=False)


@contextlib.contextmanager
def more_learners(accounts, count):
    """``count`` more learners (system users in this run's learners group): ``[Account]``,
    removed afterwards."""
    _, groups = accounts
    tag = secrets.token_hex(2)
    names = [f"c{tag}{i:03d}" for i in range(count)]
    try:
        yield add_accounts(names, groups["learners"])
    finally:
        remove_accounts([Account(n, "") for n in names])  # those never made: userdel says so, quietly


def _exists(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def kill_user(name):
    """End whatever a test user still runs (their server, kernels), by pid."""
    kill_users([name])


def kill_users(names):
    """End whatever the test users ``names`` still run, by pid, in one pass."""
    uids = {pwd.getpwnam(name).pw_uid for name in names if _exists(name)}
    for proc in psutil.process_iter(["uids"]):
        if proc.info["uids"] and proc.info["uids"].real in uids:
            try:
                proc.kill()
            except psutil.Error:
                pass


def hub_users(hub):
    """``{name: [hub group, ...]}`` of every user in the hub's own database (its state folder)."""
    import sqlite3
    db = sqlite3.connect(f"file:{hub.env['HUB_STATE']}/jupyterhub.sqlite?mode=ro", uri=True)
    try:
        users = {name: [] for (name,) in db.execute("SELECT name FROM users")}
        for name, group in db.execute("SELECT users.name, groups.name FROM users JOIN "
                                      "user_group_map ON users.id = user_group_map.user_id JOIN "
                                      "groups ON groups.id = user_group_map.group_id"):
            users[name].append(group)
    finally:
        db.close()
    return users


def remove_launched(hub):
    """Remove the system users sign-in by LTI launch made (``lti-...``) for ``hub``'s users."""
    for name in hub_users(hub):
        if name.startswith("lti-") and _exists(name):
            remove_account(Account(name, ""))

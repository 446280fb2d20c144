"""Each learner's home, bounded: a file system of its own, under ``make hub`` run as root.

A learner's home is otherwise a folder on the machine's disk, the disk of the grading
database, the gradebook and the hub's state: one learner filling it would stop grading
for everyone. :func:`mount_home` mounts, over the home, an ext4 file system in a sparse
image of ``HUB_HOME_MIB`` (``<images>/<name>.ext4``, in a root-only folder), through a
loop device: a write past its size fails with "No space left on device" in the
learner's own home, and her image never takes more than its size of the machine's disk.
The first mount copies what the home held into the image (``mkfs.ext4 -d``). It is
mounted when her server first starts (before the workspace is laid) and stays mounted:
every server's mount namespace is a copy of the machine's made at its start, so an
unmount here would leave the file system mounted in other learners' servers, and the
next mount would be a second, concurrent one of the same image (``unmount_home`` is for
removing a learner). The folder of her server's socket, hers too, is a 1 MiB tmpfs
(:func:`mount_small`). A larger
``HUB_HOME_MIB`` grows an image at its next mount (``resize2fs``), which, as it stays
mounted, is after the machine restarts; a smaller one applies to new images only
(shrinking could lose her files).

Measured here (ext4 on a virtual disk): making a 1 GiB image takes about 0.1 s, mounting
it about 20 ms. Loop mounts need root with ``CAP_SYS_ADMIN`` and ``/dev/loop-control``;
without them the hub refuses to start the server and says why (the home stays unbounded
only with ``HUB_HOME_MIB=0``). Quotas (ext4 or XFS project quotas) would need the home's
file system mounted with quota options, which a course cannot assume of its host.
"""
import os
import subprocess
from pathlib import Path

MKFS = ("mkfs.ext4", "-q", "-m", "0")  # no blocks reserved for root: all hers
OPTIONS = "loop,nosuid,nodev"


def mounted(path) -> bool:
    """Whether something is mounted at ``path`` (in this process's mount namespace)."""
    target = os.path.realpath(path)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if _unescape(line.split()[4]) == target:
            return True
    return False


def _unescape(field):
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mount_home(home, image, mib, uid, gid):
    """Mount ``image`` (a Path; made from ``home``'s files when missing, ``mib`` MiB) over
    ``home``, owned by ``uid``:``gid``, mode 0700; nothing when one is mounted there
    already. Raises RuntimeError with the tool's words when it cannot be made or mounted."""
    home = os.path.realpath(home)
    if mounted(home):
        return
    image = Path(image)
    image.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    size = mib * 2**20
    if not image.exists():
        held = _held_mib(home)
        if held > mib * 0.9:  # ext4's own metadata takes some of the image
            raise RuntimeError(f"{home} holds {held} MiB, more than its new file system of "
                               f"{mib} MiB (HUB_HOME_MIB) can take: raise HUB_HOME_MIB")
        made = image.with_suffix(".new")
        with open(made, "wb") as out:
            out.truncate(size)  # sparse: disk is taken as the learner writes
        _run(*MKFS, "-d", home, "-E", f"root_owner={uid}:{gid},lazy_itable_init=1", str(made))
        made.rename(image)
    elif image.stat().st_size < size:
        with open(image, "r+b") as out:
            out.truncate(size)
        _run("e2fsck", "-f", "-p", str(image))
        _run("resize2fs", "-f", str(image))
    _run("mount", "-t", "ext4", "-o", OPTIONS, str(image), home)
    os.chown(home, uid, gid)
    os.chmod(home, 0o700)


def _held_mib(folder):
    """MiB of disk the files below ``folder`` take (hard links counted once)."""
    seen, blocks = set(), 0
    for root, dirs, files in os.walk(folder):
        for name in files + dirs:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                blocks += info.st_blocks
    return blocks * 512 // 2**20


def unmount_home(home):
    """Unmount the file system over ``home`` (its loop device goes with it, or a tmpfs
    its memory); nothing when none is mounted. Raises RuntimeError when it stays busy."""
    home = os.path.realpath(home)
    if mounted(home):
        _run("umount", home)


def mount_small(folder, uid, gid, size="1m"):
    """A tmpfs of ``size`` over ``folder``, ``uid``'s, mode 0700: a folder a learner must be
    able to write in (her server's socket's) that holds no more than that, off the disk.
    Raises RuntimeError when it cannot be mounted."""
    _run("mount", "-t", "tmpfs", "-o",
         f"size={size},nr_inodes=64,mode=0700,uid={uid},gid={gid},nosuid,nodev,noexec",
         "tmpfs", os.path.realpath(folder))


def _run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()[-1000:]}")

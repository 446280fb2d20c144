"""A small virtual machine on a cgroup v2 only kernel, to run the course's cgroup code
where this host (cgroup v1 or hybrid) cannot: Debian's kernel under QEMU with
``cgroup_no_v1=all``, this machine's own root file system shared read-only (9p) as the
guest's, so the guest runs this checkout with its .venv's Python.

``python -m tests.grading.v2guest`` fetches the kernel (``apt-get download``, Debian's
registry) and builds the initramfs into :data:`CACHE`; :func:`run` boots it and runs a
shell script as root in the guest. The tests never download: without the cache they skip.
"""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "course-tests" / "cgroup-v2-guest"
KERNEL_PACKAGE = "linux-image-amd64"  # Debian's metapackage: depends on the current kernel's
BUSYBOX = Path("/bin/busybox")  # busybox-static: the initramfs's shell, insmod and mount
# The modules the guest needs to reach its root, in load order (Debian builds them as modules)
MODULES = ("drivers/virtio/virtio_ring", "drivers/virtio/virtio", "drivers/virtio/virtio_pci_modern_dev",
           "drivers/virtio/virtio_pci_legacy_dev", "drivers/virtio/virtio_pci", "net/9p/9pnet",
           "net/9p/9pnet_virtio", "fs/netfs/netfs", "fs/fscache/fscache", "fs/9p/9p")

# The initramfs's init: this machine's root (read-only) as the guest's, cgroup v2 alone at
# /sys/fs/cgroup, a private /tmp and /run, and the results folder (the 9p tag "out") at
# /run/out; runs /run/out/run.sh there, keeping its output and status beside it.
INIT = """#!/bin/busybox sh
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t devtmpfs dev /dev
for m in {modules}; do $B insmod /mod/$m.ko || echo "insmod $m failed"; done
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 host /host
$B mount -t proc proc /host/proc
$B mount -t sysfs sys /host/sys
$B mount -t cgroup2 cgroup2 /host/sys/fs/cgroup
$B mount -t devtmpfs dev /host/dev
$B mount -t tmpfs tmp /host/tmp
$B mount -t tmpfs run /host/run
$B mkdir -p /host/dev/shm /host/run/out
$B mount -t tmpfs shm /host/dev/shm
$B mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /host/run/out
$B chroot /host /bin/sh -c "cd /run/out && HOME=/tmp PATH=/usr/sbin:/usr/bin:/sbin:/bin sh run.sh > log 2>&1; echo \\$? > rc"
$B sync
$B poweroff -f
"""  # noqa: E501 (a shell command line of the guest)


def kernel() -> Path | None:
    """The cached guest kernel, or None (not fetched)."""
    found = sorted(CACHE.glob("vmlinuz-*"))
    return found[-1] if found and (CACHE / "initrd.gz").exists() else None


def qemu() -> str | None:
    return shutil.which("qemu-system-x86_64")


def missing() -> str | None:
    """Why :func:`run` cannot run here, or None."""
    if qemu() is None:
        return "no qemu-system-x86_64 (Debian's qemu-system-x86)"
    if kernel() is None:
        return f"no guest kernel in {CACHE}: run `python -m tests.grading.v2guest` (fetches it)"
    return None


def fetch():
    """Download Debian's current kernel package, keep its ``vmlinuz`` and make an
    initramfs of busybox, :data:`MODULES` and :data:`INIT` in :data:`CACHE`. Raises
    CalledProcessError when apt-get fails."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        depends = subprocess.run(["apt-cache", "depends", KERNEL_PACKAGE], check=True,
                                 capture_output=True, text=True).stdout
        image = next(line.split()[-1] for line in depends.splitlines() if "Depends:" in line)
        subprocess.run(["apt-get", "download", image], cwd=scratch, check=True)
        deb = next(scratch.glob("*.deb"))
        subprocess.run(["dpkg-deb", "-x", deb, scratch / "root"], check=True)
        vmlinuz = next((scratch / "root" / "boot").glob("vmlinuz-*"))
        modules = next((scratch / "root" / "lib" / "modules").iterdir()) / "kernel"
        initrd = scratch / "initrd"
        for folder in ("bin", "mod", "proc", "dev", "host"):
            (initrd / folder).mkdir(parents=True)
        shutil.copy(BUSYBOX, initrd / "bin" / "busybox")
        for module in MODULES:
            shutil.copy(modules / f"{module}.ko", initrd / "mod")
        names = " ".join(Path(m).name for m in MODULES)
        (initrd / "init").write_text(INIT.replace("{modules}", names))
        (initrd / "init").chmod(0o755)
        files = subprocess.run(["find", "."], cwd=initrd, check=True, capture_output=True).stdout
        archive = subprocess.run([str(BUSYBOX), "cpio", "-o", "-H", "newc"], cwd=initrd, input=files,
                                 check=True, capture_output=True).stdout
        (CACHE / "initrd.gz").write_bytes(gzip.compress(archive, 1))
        for old in CACHE.glob("vmlinuz-*"):
            old.unlink()
        shutil.copy(vmlinuz, CACHE / vmlinuz.name)


def run(script: str, out: Path, memory_mib: int = 1024, timeout_s: float = 300) -> tuple[int, str]:
    """Boot the guest, run ``script`` (sh, as root, in ``out``, seen as ``/run/out``) and
    power off: ``(its exit status, its output)``; status -1 when it never finished.
    Under QEMU's emulator (TCG): KVM on this project's machines hangs Debian's kernel
    in its decompressor. Raises TimeoutExpired past ``timeout_s`` seconds."""
    out = Path(out).resolve()
    (out / "run.sh").write_text(script)
    subprocess.run([qemu(), "-accel", "tcg", "-m", str(memory_mib), "-smp", "1", "-nographic",
                    "-no-reboot", "-nodefaults", "-serial", f"file:{out / 'console.log'}",
                    "-kernel", str(kernel()), "-initrd", str(CACHE / "initrd.gz"),
                    "-append", "console=ttyS0 quiet panic=-1 cgroup_no_v1=all "
                               "systemd.unified_cgroup_hierarchy=1",
                    "-virtfs", "local,path=/,mount_tag=host,security_model=none,readonly=on",
                    "-virtfs", f"local,path={out},mount_tag=out,security_model=none"],
                   check=True, timeout=timeout_s, stdin=subprocess.DEVNULL, capture_output=True)
    rc = (out / "rc").read_text().strip() if (out / "rc").exists() else "-1"
    log = (out / "log").read_text() if (out / "log").exists() else (out / "console.log").read_text()
    return int(rc), log


if __name__ == "__main__":
    fetch()
    print(f"guest kernel and initramfs in {CACHE}", file=sys.stderr)

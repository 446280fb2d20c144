"""A learner's home as a file system of its own (deploy/hub/learner_disk.py), directly:
what the home held is copied in, a write past its size fails in the home alone, a home
larger than the size asked is refused with the setting to raise, a larger size grows it."""
import errno
import os

import pytest

from deploy.hub import learner_disk

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "notes.txt").write_text("kept")
    yield folder
    learner_disk.unmount_home(folder)


def _fill(folder, mib):
    """Write ``mib`` MiB into ``folder``; the errno that stopped it, or None."""
    try:
        with open(folder / "fill", "wb") as out:
            for _ in range(mib):
                out.write(b"x" * 2**20)
                out.flush()
                os.fsync(out.fileno())
    except OSError as error:
        return error.errno
    return None


def test_her_files_come_along_and_a_write_past_its_size_fails(home, tmp_path):
    image = tmp_path / "images" / "eve.ext4"
    learner_disk.mount_home(home, image, 32, 65534, 65534)
    assert learner_disk.mounted(home) and (home / "notes.txt").read_text() == "kept"
    assert (home.stat().st_uid, home.stat().st_mode & 0o777) == (65534, 0o700)
    assert _fill(home, 64) == errno.ENOSPC
    assert image.stat().st_blocks * 512 <= 32 * 2**20
    learner_disk.mount_home(home, image, 32, 65534, 65534)  # mounted already: nothing


def test_a_larger_size_grows_her_home_and_a_home_too_big_is_refused(home, tmp_path):
    image = tmp_path / "images" / "eve.ext4"
    (home / "big").write_bytes(b"x" * 20 * 2**20)
    with pytest.raises(RuntimeError, match="raise HUB_HOME_MIB"):
        learner_disk.mount_home(home, image, 16, 65534, 65534)
    learner_disk.mount_home(home, image, 32, 65534, 65534)
    learner_disk.unmount_home(home)
    learner_disk.mount_home(home, image, 64, 65534, 65534)
    assert os.statvfs(home).f_blocks * os.statvfs(home).f_frsize > 48 * 2**20
    assert (home / "big").stat().st_size == 20 * 2**20

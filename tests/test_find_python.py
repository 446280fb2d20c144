"""scripts/find_python.sh: which Python `make` makes .venv from (3.12 or newer)."""
import shutil
import subprocess
import sys

from tests.course import REPO

FIND = REPO / "scripts" / "find_python.sh"


def find(env, tools):
    """Run the script with a PATH that holds only the tools it uses (no Python)."""
    tools.mkdir(exist_ok=True)
    for tool in ("sh", "ls", "sort"):
        if not (tools / tool).exists():
            (tools / tool).symlink_to(shutil.which(tool))
    return subprocess.run([str(tools / "sh"), str(FIND)], env={"PATH": str(tools), **env},
                          capture_output=True, text=True)


def test_a_given_python_that_is_too_old_is_refused_in_one_line(tmp_path):
    old = tmp_path / "python3.11"
    old.write_text("#!/bin/sh\nexit 1\n")  # what `python -c 'sys.exit(version < 3.12)'` says
    old.chmod(0o755)
    done = find({"PYTHON": str(old)}, tmp_path / "tools")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == f"PYTHON={old} is not Python 3.12 or newer"


def test_pyenv_s_3_12_is_found_when_the_path_has_none(tmp_path):
    bin_dir = tmp_path / "versions" / "3.12.9" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python3").symlink_to(sys.executable)  # this venv's, 3.12 or newer
    done = find({"PYENV_ROOT": str(tmp_path), "HOME": str(tmp_path)}, tmp_path / "tools")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(bin_dir / "python3")


def test_with_none_it_says_what_to_install(tmp_path):
    done = find({"PYENV_ROOT": str(tmp_path), "HOME": str(tmp_path)}, tmp_path / "tools")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "install python3.12" in done.stderr
    assert "PYTHON=/path/to/python3.12" in done.stderr

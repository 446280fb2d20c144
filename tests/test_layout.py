"""The README's layout table matches the tree: every path it names exists, and every
folder of the repository and every module or package of the grader is named in it,
so "where does X live?" has an answer a reader can trust (issue 12)."""
from __future__ import annotations

import glob
import re
import subprocess

from tests.course import REPO

# files at the root that explain themselves (configuration of tools, lock files)
SELF_EXPLAINING = {".gitignore", "package.json", "package-lock.json", "pytest.ini",
                   "requirements.txt", "README.md", "Makefile", "__init__.py"}


def layout_rows():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def expand(path):
    """``path`` with each ``<placeholder>`` standing for every folder there (globbed);
    kept as written when nothing matches, so the existence test names it."""
    pattern = re.sub(r"<[^>]+>", "*", path)
    matches = sorted(glob.glob(pattern, root_dir=REPO)) if pattern != path else []
    return [m.rstrip("/") for m in matches] or [path.rstrip("/")]


def named_paths():
    """Each backticked path in the table, resolved against its row's own first-column
    folder (``pipeline.py`` in the ``autograder/`` row is ``autograder/pipeline.py``;
    in a ``<exercise>/`` row, the same file in every exercise's folder)."""
    found = set()
    for row in layout_rows():
        first, rest = row.split(" | ", 1)
        heads = re.findall(r"`([^`]+)`", first)
        for head in heads:
            found.update(expand(head))
        base = next((h for h in heads if h.endswith("/")), "")
        for name in re.findall(r"`([\w./<>-]+)`", rest):
            if "/" in name or "." in name:
                found.update(expand(name if (REPO / name).exists() else base + name))
    return found


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_every_path_the_layout_names_exists():
    missing = sorted(p for p in named_paths() if not (REPO / p).exists())
    assert not missing, f"README's layout names paths that do not exist: {missing}"


def test_every_folder_and_grader_module_is_in_the_layout():
    named = named_paths()
    files = tracked()
    wanted = {f.split("/")[0] for f in files if "/" in f or f not in SELF_EXPLAINING}
    wanted |= {"/".join(f.split("/")[:2]) for f in files
               if f.startswith("autograder/") and f.split("/")[1] not in SELF_EXPLAINING}
    absent = sorted(w for w in wanted if not any(n == w or n.startswith(w + "/") for n in named))
    assert not absent, f"README's layout table does not say where these live: {absent}"

"""`make book`'s learner workspace (scripts/jupyter_local.py ``build_workspace``):
regenerated from the site, but a notebook the learner edited is kept, and an unchanged
file is not written again."""
import json
import os

from scripts import jupyter_local


def _notebook(text):
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [text]}],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "nbformat": 4, "nbformat_minor": 5}


def _build(tmp_path, text):
    lessons = tmp_path / "site"
    lessons.mkdir(exist_ok=True)
    (lessons / "one.ipynb").write_text(json.dumps(_notebook(text)))
    jupyter_local.build_workspace(tmp_path / "ws", lessons=lessons, release=tmp_path / "none")
    return json.loads((tmp_path / "ws" / "lessons" / "one.ipynb").read_text())


def test_a_notebook_only_opened_in_jupyterlab_is_still_updated(tmp_path):
    _build(tmp_path, "first")
    opened = tmp_path / "ws" / "lessons" / "one.ipynb"
    nb = json.loads(opened.read_text())  # what JupyterLab writes when it saves on open
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    nb["metadata"]["language_info"] = {"name": "python"}
    opened.write_text(json.dumps(nb, indent=1))
    assert _build(tmp_path, "second")["cells"][0]["source"] == ["second"]


def test_a_notebook_the_learner_edited_is_kept(tmp_path):
    _build(tmp_path, "first")
    edited = tmp_path / "ws" / "lessons" / "one.ipynb"
    nb = json.loads(edited.read_text())
    nb["cells"][0]["source"] = ["my notes"]
    edited.write_text(json.dumps(nb))
    assert _build(tmp_path, "second")["cells"][0]["source"] == ["my notes"]


def test_the_lessons_rule_helper_is_copied_beside_them(tmp_path):
    # the lessons' hidden cells import it; under the hub the repository is out of reach
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "course_rules.py").write_text("def rule(*a): pass\n")
    _build(tmp_path, "first")
    assert (tmp_path / "ws" / "lessons" / "course_rules.py").read_text() == "def rule(*a): pass\n"


def test_a_new_release_of_an_edited_notebook_is_offered_beside_it(tmp_path):
    _build(tmp_path, "first")
    edited = tmp_path / "ws" / "lessons" / "one.ipynb"
    nb = json.loads(edited.read_text())
    nb["cells"][0]["source"] = ["my notes"]
    edited.write_text(json.dumps(nb))
    mine = edited.read_bytes()
    assert _build(tmp_path, "first")["cells"][0]["source"] == ["my notes"]
    offered = tmp_path / "ws" / "lessons" / "one (new version).ipynb"
    assert not offered.exists()  # nothing new was released
    _build(tmp_path, "second")
    assert edited.read_bytes() == mine  # never overwritten
    cells = json.loads(offered.read_text())["cells"]
    assert "A new version of this exercise was released" in cells[0]["source"]
    assert "`one.ipynb`" in cells[0]["source"] and cells[1]["source"] == ["second"]
    took = json.loads(offered.read_text())
    took["cells"][1]["source"] = ["my answer, moved"]
    offered.write_text(json.dumps(took))
    _build(tmp_path, "third")  # a copy the learner worked in is kept too
    assert json.loads(offered.read_text())["cells"][1]["source"] == ["my answer, moved"]


def test_an_unchanged_rebuild_writes_no_file_and_a_change_arrives_whole(tmp_path):
    """make book runs while JupyterLab or a server reads the workspace: an unchanged
    file is left alone (same inode, so an open notebook sees no change on disk), a
    changed one is a new file renamed into place, readable by everyone."""
    _build(tmp_path, "first")
    workspace = tmp_path / "ws"
    def files():
        return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in workspace.rglob("*")
                if p.is_file()}

    before = files()
    _build(tmp_path, "first")
    assert files() == before
    _build(tmp_path, "second")
    notebook = workspace / "lessons" / "one.ipynb"
    assert notebook.stat().st_ino != before[notebook][0]
    assert notebook.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in notebook.parent.iterdir()) == ["one.ipynb"]  # no temporary left


def test_a_replaced_file_keeps_its_owner_and_mode(tmp_path):
    """``sudo make hub`` in a checkout whose user already has a workspace: a notebook it
    updates stays the user's, as it was (root gives it back; anyone else writes their own)."""
    path = tmp_path / "one.ipynb"
    path.write_text("old")
    os.chmod(path, 0o600)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    if os.geteuid() == 0:
        os.chown(path, *owner)
    assert jupyter_local.write_if_changed(path, b"new")
    assert path.read_bytes() == b"new"
    assert (path.stat().st_uid, path.stat().st_gid, path.stat().st_mode & 0o777) == (*owner, 0o600)

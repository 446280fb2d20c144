"""Lay the course in a learner's home: ``python learner_home.py HOME``.

Run by :class:`course_spawner.CourseSpawner` as the learner, from a staging copy
that holds this file, ``jupyter_local.py``, ``lessons/`` and ``release/``. Writes

* the workspace (``build_workspace``: lessons and released exercises; a
  notebook the learner changed is kept);
* ``nbgrader_config.py`` (read by nbgrader's Validate from the server's folder);
* ``~/.course-lib/autograder/learner_submit.py``: what the notebooks' submit
  cell imports (the server's ``$PYTHONPATH``; the repository itself is hidden),
  and ``defaults.py`` beside it, which it imports;
* ``~/.jupyter``: nbgrader's Validate on, its menu and exchange tools off, and
  nothing fetched from the internet (the settings ``make serve`` uses).
"""
import json
import sys
from pathlib import Path

import jupyter_local  # the staging copy of scripts/jupyter_local.py


def main(home):
    here = Path(__file__).resolve().parent
    notebooks = jupyter_local.build_workspace(home, lessons=here / "lessons",
                                              release=here / "release")
    (home / "nbgrader_config.py").write_text(jupyter_local.NBGRADER_CONFIG)
    lib = home / ".course-lib" / "autograder"
    lib.mkdir(parents=True, exist_ok=True)
    (lib / "__init__.py").write_text("")
    for module in ("learner_submit.py", "defaults.py"):
        (lib / module).write_text((here / module).read_text())
    config = home / ".jupyter"
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    # the same LabApp settings and autosave default (for the submit cell) as make serve
    server = {"ServerApp": {"jpserver_extensions": jupyter_local.SERVER_EXTENSIONS},
              "LabApp": {**jupyter_local.LAB_APP["LabApp"],
                         "app_settings_dir": str(config / "labsettings")}}
    jupyter_local.write_lab_overrides(config / "labsettings")
    (config / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": jupyter_local.DISABLED_LAB_PLUGINS}, indent=1))
    print(f"{len(notebooks)} notebooks in {home}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

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
  nothing fetched from the internet (the settings ``make serve`` uses); terminals whose
  processes the kernel kills before the server at its memory limit (:data:`TERMINAL`);
* ``~/.ipython/profile_default/startup/50-course-memory.py`` (:data:`MEMORY_NOTE`): a
  kernel started after the kernel killed a process of her server at its memory limit
  (JupyterLab only says "the kernel appears to have died") says so in the first cell
  it runs, with the limit.
"""
import json
import sys
from pathlib import Path

import jupyter_local  # the staging copy of scripts/jupyter_local.py

# Run by IPython in each kernel at its start (a startup file). COURSE_MEMORY_EVENTS is the
# cgroup file counting the server's processes killed at its memory limit (course_spawner.py);
# the count a kernel has told of is kept in the server's own /tmp.
MEMORY_NOTE = r'''
def _course_memory_note():
    import os
    events, mib = os.environ.get("COURSE_MEMORY_EVENTS"), os.environ.get("COURSE_MEMORY_MIB")
    if not events:
        return
    try:
        with open("/proc/self/oom_score_adj", "w") as own:
            own.write("300")  # at the limit, a kernel is killed before the server itself
    except OSError:
        pass
    try:
        kills = int(next(line.split()[1] for line in open(events) if line.startswith("oom_kill ")))
    except (OSError, StopIteration, ValueError, IndexError):
        return
    told = "/tmp/.course-memory-kills-told"
    try:
        before = int(open(told).read())
    except (OSError, ValueError):
        before = 0
    if kills <= before:
        return
    with open(told, "w") as out:
        out.write(str(kills))
    ip = get_ipython()

    def say(*_):
        print(f"Your server reached its memory limit of {mib} MiB (all its processes "
              "together: kernels, terminals, files in /tmp), so a process of it was "
              "stopped; the kernel restarted. Close notebooks you do not use "
              "(Kernel > Shut Down Kernel) or work on smaller arrays.")
        ip.events.unregister("pre_run_cell", say)

    ip.events.register("pre_run_cell", say)


_course_memory_note()
del _course_memory_note
'''


# Her terminals' shell, as jupyter-server starts it (a login shell), made the first the
# kernel kills at her server's memory limit, before the server itself (its children,
# kernels and terminals, inherit its score; a process may raise its own, never lower it).
TERMINAL = ["/bin/sh", "-c", 'echo 300 > /proc/self/oom_score_adj; exec "${SHELL:-/bin/sh}" -l']


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
    server = {"ServerApp": {"jpserver_extensions": jupyter_local.SERVER_EXTENSIONS,
                            "terminado_settings": {"shell_command": TERMINAL}},
              "LabApp": {**jupyter_local.LAB_APP["LabApp"],
                         "app_settings_dir": str(config / "labsettings")}}
    jupyter_local.write_lab_overrides(config / "labsettings")
    (config / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": jupyter_local.DISABLED_LAB_PLUGINS}, indent=1))
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "50-course-memory.py").write_text(MEMORY_NOTE)
    print(f"{len(notebooks)} notebooks in {home}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

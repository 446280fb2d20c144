"""Every default lives in autograder/defaults.py, and every place that needs one reads it.

Fast: no site build, no browser, no grading. The site build's copy of the
defaults is checked in tests/browser (the pages use it), the service's answer
in tests/service/test_api.py (``GET /api/config``).
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import defaults
from tests.course import REPO

# Code, not prose: documentation (*.md) may say what a default is.
CODE_SUFFIXES = {".py", ".js", ".yml", ".yaml", ".ini", ".toml", ".cfg", ".sh"}
CODE_NAMES = {"Makefile", "run"}  # .ci/run
HOME = Path(defaults.__file__).relative_to(REPO).as_posix()


def code_files():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, check=True, capture_output=True, text=True).stdout.split("\n")
    for name in filter(None, listed):
        path = REPO / name
        if name != HOME and path.is_file() and (path.suffix in CODE_SUFFIXES or path.name in CODE_NAMES):
            yield name, path.read_text(errors="replace")


def default_literals():
    """``{description: regex}`` of what only defaults.py may write."""
    ports = sorted({v for k, v in vars(defaults).items() if k.endswith("_PORT") or k == "PORT"})
    # A port below 1024 is a short, common number (80 is also a width, a count): it
    # counts where it stands as a port, after ":" or "port" or "PORT=".
    found = {f"port {p}": rf"(?<![\w.]){p}(?![\w])" if p >= 1024 else
             rf"(?:(?<=:)|(?<=port )|(?<=PORT=)|(?<=PORT = )){p}(?![\w])" for p in ports}
    found["the learner-id pattern"] = re.escape(defaults.LEARNER_PATTERN.strip("^$"))
    found["the strict site build"] = re.escape(defaults.SITE_BUILD[3])
    found["nbgrader's release"] = r"""["']generate_assignment["']"""
    return found


def test_no_default_is_written_outside_defaults_py():
    literals = default_literals()
    assert len(literals) >= 9  # six ports and three commands or patterns: it looks for something
    repeated = []
    for name, text in code_files():
        for line_no, line in enumerate(text.splitlines(), 1):
            for what, pattern in literals.items():
                if re.search(pattern, line):
                    repeated.append(f"{name}:{line_no}: {what}: {line.strip()}")
    assert not repeated, ("defaults written outside autograder/defaults.py (read them from "
                          "there):\n" + "\n".join(repeated))


def make_dry_run(*targets, **env):
    """What ``make TARGETS`` would run on a fresh clone (``make -n -B``: every recipe,
    also the release that an up-to-date checkout skips), with the caller's environment
    minus the course's variables, plus ``env``."""
    clean = {k: v for k, v in os.environ.items()
             if k not in defaults.ENVIRONMENT and not k.startswith("GRADER_")}
    proc = subprocess.run(["make", "-n", "-B", *targets], cwd=REPO, env=dict(clean, **env),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_runs_the_commands_and_ports_of_defaults_py():
    out = make_dry_run("book", "serve")
    assert f".venv/bin/{' '.join(defaults.SITE_BUILD)} " in out
    assert '-m autograder.release "$a"' in out  # which runs defaults.RELEASE (release_argv)
    assert f"PORT={defaults.PORT} HOST={defaults.HOST} JUPYTER_PORT={defaults.JUPYTER_PORT} " in out
    assert "PORT=9000 " in make_dry_run("serve", PORT="9000")  # README: PORT=9000 make serve


def test_the_defaults_command_prints_one_value_per_name():
    proc = subprocess.run([sys.executable, "-m", "autograder.defaults", "GRADER_PORT", "SITE_BUILD"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    assert proc.stdout.split("\n")[:2] == [str(defaults.GRADER_PORT), " ".join(defaults.SITE_BUILD)]
    bad = subprocess.run([sys.executable, "-m", "autograder.defaults", "NO_SUCH"], cwd=REPO,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown: NO_SUCH" in bad.stderr


def _without_course_environment(monkeypatch):
    for name in list(os.environ):
        if name in defaults.ENVIRONMENT or name.startswith("GRADER_") or name in ("HOST", "PORT"):
            monkeypatch.delenv(name)


def _parsers():
    """``{program: (parse(argv) -> options, its settings)}`` for every program that takes
    settings, parsed as each does."""
    from autograder import __main__ as cli, gradescope
    from autograder.service import __main__ as service
    from autograder.service.commands import worker

    return {"service": (service.parse, defaults.SERVICE),
            "worker": (worker.parse, defaults.WORKER),
            "cli": (lambda argv: cli.parse(["x.ipynb", "--out", "o", *argv]), defaults.CLI),
            "gradescope": (lambda argv: gradescope.parse_run(["run", "update_with_donate", *argv]),
                           defaults.GRADESCOPE)}


def test_every_program_takes_its_settings_from_the_table(monkeypatch):
    """Each program's options are its rows of defaults.SETTINGS: the flag, the default
    parsed as the command line would be, and the environment's value when one is set."""
    _without_course_environment(monkeypatch)
    for program, (parse, names) in _parsers().items():
        args = parse([])
        for name in names:
            row = defaults.BY_NAME[name]
            expected = row.parse(row.default) if isinstance(row.default, str) else row.default
            if name == "GRADER_ORIGINS":
                continue  # made from the host and PORT when not given: below
            assert getattr(args, row.dest) == expected, (program, name)
    monkeypatch.setenv("GRADER_PORT", "9801")
    monkeypatch.setenv("GRADER_TIMEOUT", "7.5")
    monkeypatch.setenv("HOST", "127.0.0.2")  # GRADER_HOST's second variable
    args = _parsers()["service"][0]([])
    assert (args.port, args.timeout, args.host) == (9801, 7.5, "127.0.0.2")
    assert args.origins.startswith(f"http://127.0.0.2:{defaults.PORT},")
    assert _parsers()["cli"][0]([]).timeout == defaults.CLI_TIMEOUT_S  # no variable of its own


def test_a_bad_setting_from_the_environment_is_named_against_its_option(monkeypatch, capsys):
    from autograder.service.__main__ import parse

    _without_course_environment(monkeypatch)
    monkeypatch.setenv("GRADER_RATE", "ten")
    try:
        parse([])
    except SystemExit as exc:
        assert exc.code == 2
    assert "argument --rate: must look like 10/60" in capsys.readouterr().err


def test_no_program_writes_an_option_default_of_its_own():
    """Only autograder/options.py gives an option (``--name``) a default or a type: every
    other is a flag without a value of its own (``--force``), a path or an exercise name;
    positional arguments (an instructor command's hours) are what the command is about."""
    import ast

    found = []
    for path in (REPO / "autograder").rglob("*.py"):
        if path.name == "options.py" or "samples" in path.parts:  # learners' answers
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value.startswith("-")
                    and any(k.arg in ("default", "type") for k in node.keywords)):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, "options with defaults outside the table: " + ", ".join(found)
    text = "\n".join(p.read_text() for p in (REPO / "autograder").rglob("*.py")
                     if p.name != "defaults.py" and "samples" not in p.parts)
    for value in (f"{defaults.MEMORY_MIB}", f"{defaults.CLI_TIMEOUT_S:g} s", f"={defaults.CLI_TIMEOUT_S}"):
        assert value not in text, value


def test_the_settings_table_of_service_md_is_made_from_the_table():
    page = (REPO / "autograder" / "SERVICE.md").read_text()
    assert defaults.settings_table(defaults.SERVICE) in page, (
        "autograder/SERVICE.md's settings table differs from defaults.SETTINGS: paste "
        "`python -m autograder.defaults --service-table` in its place")


def test_each_setting_is_declared_once():
    names = [s.name for s in defaults.SETTINGS]
    assert len(names) == len(set(names))
    for program in (defaults.SERVICE, defaults.WORKER, defaults.CLI, defaults.GRADESCOPE):
        flags = [defaults.BY_NAME[n].flag for n in program]
        assert len(flags) == len(set(flags)) and all(flags), program
    variables = [v for s in defaults.SETTINGS for v in s.env[:1]]
    assert len(variables) == len(set(variables))
    assert {s.shown for s in defaults.SETTINGS if s.shown} == {
        "max_bytes", "rate", "max_per_learner", "max_per_client", "max_queue", "learner_bytes",
        "timeout_s", "memory_mib", "max_held", "max_uploads"}


LEARNER_IDS = ["ada", "a.b@c-d_e", "A" * 64, "A" * 65, "-ada", ".ada", "", "ada lovelace", "ädä",
               "ada\n"]


def test_the_pages_check_learner_ids_as_the_service_does():
    """grader.js tests ids with ``new RegExp(LEARNER_PATTERN)``; the service with ``re``
    (:func:`autograder.service.api.app.is_learner_id`)."""
    from autograder.service.api.app import is_learner_id

    script = ("const [p, ids] = JSON.parse(process.argv[1]);"
              "process.stdout.write(JSON.stringify(ids.map(id => new RegExp(p).test(id))));")
    node = subprocess.run(["node", "-e", script, json.dumps([defaults.LEARNER_PATTERN, LEARNER_IDS])],
                          capture_output=True, text=True, check=True)
    pages = dict(zip(LEARNER_IDS, json.loads(node.stdout)))
    assert pages == {learner: is_learner_id(learner) for learner in LEARNER_IDS}
    assert pages["ada"] and not pages["ada\n"]


def test_the_pages_defaults_script_is_written_from_defaults_py():
    from book._ext import course_run

    script = course_run.defaults_script()
    values = json.loads(re.search(r"window\.COURSE_DEFAULTS = (\{.*\});", script).group(1))
    assert values == dict(defaults.for_pages(), jupyterToken="")
    for name in ("grader.js", "course-run.js"):  # they read it, and no value of their own
        assert "window.COURSE_DEFAULTS" in (REPO / "book" / "_static" / name).read_text()


def test_the_submit_cell_finds_its_defaults_in_a_learners_home(tmp_path):
    """Under make hub the repository is hidden: the submit module and defaults.py are
    copied into ~/.course-lib (course_spawner's staging, then learner_home.py)."""
    from deploy.hub import course_spawner

    staging, home = tmp_path / "staging", tmp_path / "home"
    (staging / "lessons").mkdir(parents=True)
    (staging / "lessons" / "intro.ipynb").write_text(  # what the site build writes there
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (staging / "release").mkdir()
    home.mkdir()
    for path in course_spawner.STAGED:
        shutil.copy(path, staging / path.name)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    laid = subprocess.run([sys.executable, str(staging / "learner_home.py"), str(home)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert laid.returncode == 0, laid.stderr
    # the learner's kernel: PYTHONPATH is the course-lib (the hub's Spawner.environment)
    probe = ("from autograder import defaults, learner_submit; "
             "print(defaults.__file__, learner_submit.defaults is defaults, defaults.grader_url())")
    kernel = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, text=True,
                            capture_output=True,
                            env=dict(env, PYTHONPATH=str(home / course_spawner.COURSE_LIB)))
    assert kernel.returncode == 0, kernel.stderr
    assert kernel.stdout.split() == [str(home / ".course-lib" / "autograder" / "defaults.py"), "True",
                           f"http://{defaults.HOST}:{defaults.GRADER_PORT}"]


DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
        "autograder/SERVICE.md", "deploy/README.md", "benchmarks/README.md"]
STATED = re.compile(r"`(--[a-z-]+|GRADER_[A-Z_]+)(?: [A-Z]+)?`\s*(?:\([^)]*?default\s+)?"
                    r"([0-9][0-9.]*)(\s*MiB)?")


def stated_defaults(text):
    """``[(flag or variable, number said)]`` where prose says a setting's default:
    "`GRADER_TIMEOUT` 20 s", "`--timeout S` (per submission, default 60)", "5 MiB"."""
    return [(name, float(number) * (2**20 if mib else 1))
            for name, number, mib in STATED.findall(text)]


def test_the_documentation_states_the_defaults_the_table_holds():
    """Prose may say a default (a reader needs it there); it must be the table's."""
    assert stated_defaults("`GRADER_MAX_BYTES` 5 MiB; `--timeout S` (per submission, default\n60)") \
        == [("GRADER_MAX_BYTES", 5 * 2**20), ("--timeout", 60.0)]
    wrong = []
    for doc in DOCS:
        for name, number in stated_defaults((REPO / doc).read_text()):
            rows = [s for s in defaults.SETTINGS if name in (s.flag, *s.env[:1])]
            values = {float(s.default.count if isinstance(s.default, defaults.Rate) else s.default)
                      for s in rows if isinstance(s.default, (int, float, tuple))}
            if rows and number not in values:
                wrong.append(f"{doc}: {name} said {number:g}, the table holds {sorted(values)}")
    assert not wrong, "\n".join(wrong)

"""The grading service's rooms hold: only ``store/`` runs SQL on the service's tables,
only ``api/`` answers HTTP (the views, the gradebook, the LMS and the store raise
no HTTP errors), and every spelling of a command the repository uses runs it. Read from the source, so a
module that breaks a room's rule fails
here before anyone has to find it."""
import ast
import importlib
import re

import pytest

from autograder.service.__main__ import COMMANDS, main as service_main
from tests.course import REPO

SERVICE = REPO / "autograder" / "service"
# what runs SQL: SQLAlchemy's statements and engines, the store's tables, its connections
SQL_MODULES = ("sqlalchemy", "autograder.service.store.schema", "psycopg", "sqlite3")
SQL_CALLS = {"exec_driver_sql", "_read", "engine"}
# what answers HTTP: tornado's handlers and errors, the API's own
HTTP_MODULES = ("tornado.web", "autograder.service.api")
HTTP_NAMES = {"HTTPError", "Refused"}
NO_HTTP = ("store", "gradebook", "lms", "class_views")


def imported(tree):
    """``[(module, name or None)]`` of every import in ``tree``, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, a.name) for a in node.names]
    return found


def runs_sql(source):
    """What in ``source`` runs SQL itself (imports of SQL modules but SQLAlchemy's
    exceptions, a store's engine or connections), in words; [] when nothing does."""
    tree = ast.parse(source)
    said = [f"imports {m}" + (f".{n}" if n else "") for m, n in imported(tree)
            if m.startswith(SQL_MODULES) and not m.startswith("sqlalchemy.exc")]
    said += [f"uses .{n.attr}" for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and n.attr in SQL_CALLS]
    return said


def answers_http(source):
    """What in ``source`` answers HTTP (tornado's handlers or errors, the API's), in words."""
    tree = ast.parse(source)
    said = [f"imports {m}" + (f".{n}" if n else "") for m, n in imported(tree)
            if m.startswith(HTTP_MODULES) or (m, n) == ("tornado", "web")]
    said += [f"names {n.id if isinstance(n, ast.Name) else n.attr}" for n in ast.walk(tree)
             if isinstance(n, ast.Name) and n.id in HTTP_NAMES
             or isinstance(n, ast.Attribute) and n.attr in HTTP_NAMES]
    return said


def modules(*rooms):
    """``{path relative to the service: source}`` of the service's modules, in ``rooms``
    only when given."""
    return {str(p.relative_to(SERVICE)): p.read_text(encoding="utf-8")
            for p in sorted(SERVICE.rglob("*.py"))
            if not rooms or p.relative_to(SERVICE).parts[0] in rooms}


def test_only_the_store_runs_sql_on_its_tables():
    found = {path: said for path, source in modules().items()
             if not path.startswith("store/") and (said := runs_sql(source))}
    assert not found, f"SQL outside autograder/service/store/: {found}"


def test_only_the_api_answers_http():
    found = {path: said for path, source in modules(*NO_HTTP).items()
             if (said := answers_http(source))}
    assert not found, f"HTTP outside autograder/service/api/: {found}"


@pytest.mark.parametrize("source", [
    "from sqlalchemy import select\n", "import sqlalchemy\n", "from sqlalchemy.orm import Session\n",
    "def f():\n    from autograder.service.store.schema import submissions\n",
    "import autograder.service.store.schema\n",
    "def f(store):\n    store.engine.begin()\n", "def f(store):\n    store._read()\n",
    "def f(conn):\n    conn.exec_driver_sql('DELETE FROM passback')\n",
    "import sqlite3\n", "import psycopg\n"])
def test_the_sql_check_sees_each_way_in(source):
    assert runs_sql(source)


@pytest.mark.parametrize("source", [
    "import tornado.web\n", "from tornado import web\n", "from tornado.web import HTTPError\n",
    "from autograder.service.api.handler import Refused\n",
    "def f():\n    from autograder.service.api import handler\n",
    "def f(web):\n    raise web.HTTPError(403)\n"])
def test_the_http_check_sees_each_way_in(source):
    assert answers_http(source)


def test_the_checks_pass_what_the_rooms_allow():
    allowed = ("from sqlalchemy.exc import SQLAlchemyError\nfrom autograder.service.store "
               "import lti\n\ndef f(store):\n    return lti.people(store)\n")
    assert runs_sql(allowed) == [] and answers_http(allowed) == []


def spellings():
    """Every ``python -m autograder.service...`` module the docs, the Makefile, deploy/,
    scripts and tests name (with a command word after the package where one follows)."""
    found = set()
    for path in REPO.glob("**/*"):
        if path.suffix not in (".md", ".py", ".yaml", ".yml", ".sh") and path.name != "Makefile":
            continue
        if any(part in (".venv", "node_modules", "_build", ".git") for part in path.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for module, word in re.findall(
                r"-m\W{0,6}(autograder\.service(?:\.\w+)*)(?:\W{1,6}([a-z_]+))?", text):
            found.add(module if module != "autograder.service" or word not in COMMANDS
                      else f"{module} {word}")
    return sorted(found)


def test_every_spelling_of_a_command_the_repository_uses_runs_it():
    """The docs' and deployments' spellings (``python -m autograder.service.worker``) and
    the one entry (``python -m autograder.service worker``) run the same command."""
    named = spellings()
    assert "autograder.service.worker" in named and "autograder.service" in named
    for spelling in named:
        module, _, word = spelling.partition(" ")
        assert importlib.util.find_spec(module), f"python -m {spelling}: no such module"
        if word:
            assert word in COMMANDS
    for word in COMMANDS:
        command = importlib.import_module(f"autograder.service.commands.{word}")
        assert importlib.import_module(f"autograder.service.{word}").main is command.main


@pytest.mark.parametrize("word", COMMANDS)
def test_the_one_entry_runs_each_command(word, capsys):
    with pytest.raises(SystemExit) as done:
        service_main([word, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m autograder.service.{word}")

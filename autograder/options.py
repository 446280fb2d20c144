"""Command-line options made from the table of settings (:data:`autograder.defaults.SETTINGS`).

Every program of the course adds its settings by name (:func:`add`), so a flag,
its environment variables, its default and its help are written once, in
``defaults.py``; :func:`shown` is what ``GET /api/config`` answers of them.
"""
import argparse
from typing import Any

from autograder import defaults


def add(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add settings ``names`` (keys of :data:`~autograder.defaults.BY_NAME`) to ``parser``.

    An option's default is the environment's text when a variable of its row is set
    (argparse parses it like a command-line value, so a bad one is reported against
    its option), else the row's default. Raises KeyError for an unknown name.
    """
    for name in names:
        row = defaults.BY_NAME[name]
        text = defaults.environment_text(name)
        default = text if text is not None else row.default
        where = f"{row.env[0]}: " if row.env else ""
        extra: dict[str, Any] = {"choices": row.choices} if row.choices else {}
        parser.add_argument(row.flag, dest=row.dest, type=row.parse, default=default,
                            help=f"{where}{row.help} (default {row.said_default()})", **extra)


def shown(args: argparse.Namespace, names) -> dict:
    """``{shown key: value}`` of the settings ``names`` whose rows say ``/api/config``
    shows them, read from parsed ``args`` (a rate as ``{"count", "seconds"}``)."""
    answer = {}
    for row in (defaults.BY_NAME[n] for n in names):
        if row.shown:
            value = getattr(args, row.dest)
            answer[row.shown] = value._asdict() if isinstance(value, defaults.Rate) else value
    return answer


"""``python -m autograder.service.backup``: the spelling of ``python -m autograder.service backup``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.backup`)."""
import sys

from autograder.service.commands.backup import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m autograder.service.members``: the spelling of ``python -m autograder.service members``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.members`)."""
import sys

from autograder.service.commands.members import main

if __name__ == "__main__":
    sys.exit(main())

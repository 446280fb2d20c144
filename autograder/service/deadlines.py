"""``python -m autograder.service.deadlines``: the spelling of ``python -m autograder.service deadlines``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.deadlines`)."""
import sys

from autograder.service.commands.deadlines import main

if __name__ == "__main__":
    sys.exit(main())

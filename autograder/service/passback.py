"""``python -m autograder.service.passback``: the spelling of ``python -m autograder.service passback``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.passback`)."""
import sys

from autograder.service.commands.passback import main

if __name__ == "__main__":
    sys.exit(main())

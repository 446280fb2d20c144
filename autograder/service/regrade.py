"""``python -m autograder.service.regrade``: the spelling of ``python -m autograder.service regrade``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.regrade`)."""
import sys

from autograder.service.commands.regrade import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m autograder.service.worker``: the spelling of ``python -m autograder.service worker``
that the docs, the Makefile and deployments use (:mod:`autograder.service.commands.worker`)."""
import sys

from autograder.service.commands.worker import main

if __name__ == "__main__":
    sys.exit(main())

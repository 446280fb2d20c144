#!/bin/sh
# The course image's entry: lay the course in the learner's home (a notebook she changed
# is kept), then run the given command (jupyterhub-singleuser, with the hub's arguments).
set -e
python3 /srv/course/learner_home.py "$HOME" >&2
exec "$@"

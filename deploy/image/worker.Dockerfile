# The grading workers' image: the course image (deploy/image/Dockerfile) plus what grading
# needs and a learner must never read: the grader (autograder/, with every exercise's
# hidden tests) and the exercises' sources. Learners' servers run the course image, never
# this one (docs/security.md, "On a Docker Swarm"). Built from the checkout's root after
# the course image, whose tag SERVER names:
#
#   docker build -f deploy/image/worker.Dockerfile --build-arg SERVER=course-server \
#     -t course-worker .
#
# A worker is `python -m autograder.service.worker` as root in the container: it leases
# submissions from the service's PostgreSQL database (GRADER_DB, the API's) and grades them
# in the sandbox, whose learner processes run as unprivileged uids of their own. The
# course folder (GRADER_COURSE, nbgrader's: the gradebook's submitted copies) is a mount
# every worker shares with the grading service. See deploy/README.md.
ARG SERVER=course-server
FROM ${SERVER}
USER root

# The grading service's own imports, beyond the course image's (the course's pins)
COPY deploy/image/worker-requirements.txt /srv/pins/worker.txt
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi && \
    /opt/course/bin/pip install --no-cache-dir --disable-pip-version-check \
      -c /srv/pins/constraints.txt -r /srv/pins/worker.txt

# The grader where it finds its checkout (autograder/defaults.py: CHECKOUT is the folder
# above the package), its hidden tests root's alone (the sandbox's uids cannot read them)
COPY autograder /srv/grader/autograder
COPY exercises/source /srv/grader/exercises/source
COPY exercises/nbgrader_config.py /srv/grader/exercises/
RUN chmod -R go-rwx /srv/grader/autograder/exercises/*/hidden /srv/grader/exercises/source

ENV PYTHONPATH=/srv/grader HOME=/root
WORKDIR /srv/grader
ENTRYPOINT ["tini", "-g", "--", "python", "-m", "autograder.service.worker"]
CMD []

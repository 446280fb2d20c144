# The course's entry points. Every target creates .venv from requirements.txt and
# installs the course itself into it, editable (pyproject.toml), when it is missing or
# older than either file.
#   make serve   build the site and serve it (the main job)
#   make hub     the course for a class: JupyterHub, sign-in, a JupyterLab per learner
#   make book    build the site only
#   make test    run the test suite (what .ci/run calls)
#   make test-fast  the fast tier only: no site build, browser, nbgrader kernel, grading
#                command or server (under 90 s, random order); see pytest.ini's markers
#   make gradescope  one Gradescope autograder zip per exercise, into $(GRADESCOPE_OUT)
#   make drift JAX=0.10.2  the lessons and sample grades on another JAX, rule by rule (on a CUDA GPU where there is one)
#   make backup BACKUP=DIR / make restore BACKUP=DIR  everything the course keeps
# .venv is made from Python 3.12 or newer: PYTHON=/path/to/python3.12 when given, else
# the one scripts/find_python.sh finds (the PATH, then pyenv's). A .venv made from an
# older Python is made again.
PYTHON ?=
VENV   := .venv
BIN    := $(VENV)/bin
# autograder/defaults.py and autograder/exercises are standard library only, so any
# python3 reads them before .venv exists.
READER := python3
# Defaults come from autograder/defaults.py; PORT=9000 make serve overrides one.
default = $(shell $(READER) -m autograder.defaults $(1))
PORT   ?= $(call default,PORT)
HOST   ?= $(call default,HOST)
JUPYTER_PORT ?= $(call default,JUPYTER_PORT)
GRADESCOPE_OUT ?= _build/gradescope
# Visibility of the hidden tests' results on Gradescope: visible or after_published.
GRADESCOPE_VISIBILITY ?= $(call default,GRADESCOPE_VISIBILITY)
# The exercises (nbgrader assignments), as registered in autograder/exercises/__init__.py
# (plain Python: no venv needed to read it). Released into exercises/release/ for the site.
ASSIGNMENTS = $(shell $(READER) -c "from autograder.exercises import names; print(*names())")

.PHONY: venv release released book serve hub test test-fast gradescope drift backup restore clean
venv: $(VENV)/.installed
# thebe (served by the site) and axe-core (browser tests), from the npm registry.
NODE_DEPS := node_modules/.package-lock.json
$(NODE_DEPS): package.json package-lock.json
	@echo "==> npm ci (thebe for the site, axe-core for the browser tests)"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The course is installed editable after the pins (no dependencies of its own): .venv's
# interpreters import autograder, scripts, deploy.hub, ... from this checkout.
$(VENV)/.installed: requirements.txt pyproject.toml
	@echo "==> creating $(VENV) and installing requirements.txt (first run takes a few minutes)"
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null || { \
	  base=$$(PYTHON="$(PYTHON)" scripts/find_python.sh) || exit 1; \
	  echo "==> $(VENV) from $$base"; rm -rf $(VENV); "$$base" -m venv $(VENV); }
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet --progress-bar off -r requirements.txt
	@$(BIN)/python -m pip uninstall --quiet --yes $$($(BIN)/python -m autograder.defaults NOT_KEPT)  # defaults.py: why
	@$(BIN)/python -m pip install --quiet --progress-bar off --no-deps -e .
	@touch $@

# Released again only when what a release is made of changed (an unchanged make serve
# or make hub starts without four nbgrader runs): the source notebooks, nbgrader's
# config, the submit cell it adds, the exercise list, the installed nbgrader.
RELEASED := exercises/release/.released
RELEASE_INPUTS := $(shell find exercises/source -type f -not -path "*/.ipynb_checkpoints/*") \
  exercises/nbgrader_config.py autograder/learner_submit.py autograder/nbgrader_release.py \
  autograder/exercises/__init__.py $(wildcard autograder/exercises/*/hidden/tests.py) $(VENV)/.installed
# make release fails (make: Error 3) when it refused an exercise; make book, serve, hub and
# test release through `released`, which starts them with that exercise's kept release
# (the grading service holds its new submissions and says why: docs/instructors.md).
REFUSED := exercises/release/.refused
release: released
	@if [ -s $(REFUSED) ]; then echo "==> make release refused:$$(cat $(REFUSED))"; exit 3; fi
released:
	@test -f exercises/gradebook.db || rm -f $(RELEASED)  # the gradebook must know them too
	@$(MAKE) --no-print-directory --silent $(RELEASED)
# autograder/release.py runs nbgrader generate_assignment for one exercise without ever
# removing its released notebook first, and refuses (status 3, nothing touched) a change
# nbgrader cannot make once learners submitted: that exercise keeps its released version.
$(RELEASED): $(RELEASE_INPUTS) autograder/release.py
	@test -n "$(ASSIGNMENTS)" || { echo "==> no exercises: $(READER) could not read autograder/exercises"; exit 1; }
	@echo "==> releasing exercises with nbgrader generate_assignment: $(ASSIGNMENTS)"
	@refused=""; for a in $(ASSIGNMENTS); do \
	  PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m autograder.release "$$a"; rc=$$?; \
	  if [ $$rc -eq 3 ]; then refused="$$refused $$a"; elif [ $$rc -ne 0 ]; then exit 1; fi; done; \
	  if [ -n "$$refused" ]; then echo "==> not released (kept as released before):$$refused"; \
	  mkdir -p $(dir $(REFUSED)); echo "$$refused" > $(REFUSED); else rm -f $(REFUSED); touch $@; fi

BUILD_LOCK = $(if $(shell command -v flock),flock _build/.build.lock)
book: released $(NODE_DEPS)
	@mkdir -p _build/logs
	@echo "==> building the site into _build/html (strict: warnings are errors; cached execution; log: _build/logs/book.log)"
	@# TF_CPP_MIN_LOG_LEVEL=3: the lessons read donated buffers on purpose, and XLA's C++
	@# log would print an "E... previously donated" line for each (the Python error is
	@# what the page shows; an unexpected one still fails the build).
	@# The build's own output goes to the log (its closing "paste this line into your
	@# browser: file://..." names a copy of the site that cannot reach the grader);
	@# on failure its end is shown.
	@# One build at a time in _build (flock(1), where util-linux has it): a second
	@# make book, serve or hub started meanwhile waits for the first.
	@JAX_PLATFORMS=cpu TF_CPP_MIN_LOG_LEVEL=3 $(BUILD_LOCK) $(BIN)/$(call default,SITE_BUILD) \
	  > _build/logs/book.log 2>&1 || { tail -n 40 _build/logs/book.log; echo "==> the site build failed: _build/logs/book.log"; exit 1; }
	@echo "==> site built in _build/html (make serve serves it with the course's servers)"
	@# The workspace copies what the build wrote: under the same lock, so another build
	@# (make hub's or make serve's in the same checkout) never rewrites it meanwhile.
	@$(BUILD_LOCK) $(BIN)/python scripts/jupyter_local.py workspace

serve: book
	@echo "==> starting the course servers (Ctrl-C stops them all)"
	@PORT=$(PORT) HOST=$(HOST) JUPYTER_PORT=$(JUPYTER_PORT) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python scripts/serve.py

# JupyterHub (deploy/hub/jupyterhub_config.py) with configurable-http-proxy from
# node_modules; its database and cookie secret stay in $(HUB_STATE) across restarts.
HUB_STATE ?= $(call default,HUB_STATE)
# Its ports default to privileged ones (autograder/defaults.py: HUB_ENVIRONMENT), not
# make serve's: PORT and GRADER_PORT are passed on only when set in the environment.
# Sign-in: HUB_AUTH=pam (the default) or HUB_AUTH=lti with the LMS's LTI_* settings, read
# from the environment as every other setting (docs/lti.md, "Sign-in from an LMS").
hub: book
	@echo "==> starting JupyterHub (state in $(HUB_STATE); it says its URL once the course answers)"
	@mkdir -p -m 0700 "$(HUB_STATE)"
	@cd "$(HUB_STATE)" && HUB_STATE="$(HUB_STATE)" PATH="$(CURDIR)/$(BIN):$$PATH" \
	  $(CURDIR)/$(BIN)/python $(CURDIR)/scripts/hub.py

# One pytest-xdist worker per core and one more (tests/conftest.py: the suite waits a
# fifth of its time); tests that share a build or a module's fixtures stay on one worker
# (tests/tiers.py: group_of; tests/conftest.py: the scheduler). The
# 30 slowest steps are listed at the end: where the suite's time goes, run by run.
test: released $(NODE_DEPS)
	@echo "==> running the test suite"
	@JAX_PLATFORMS=cpu $(BIN)/python -m pytest tests -n auto --durations=30

# The fast tier: the tests in none of pytest.ini's slow tiers (tests/tiers.py marks them),
# ruff and mypy among them (tests/test_static_checks.py; pyproject.toml says the rules),
# in a new random order each time (pytest-random-order; it prints the seed, and
# --random-order-seed=N repeats that order), on two pytest-xdist workers (about 760 tests
# of under a second each: two workers halve the wall time on this project's 2 cores).
test-fast: venv
	@echo "==> running the fast tier (make test runs every tier)"
	@JAX_PLATFORMS=cpu $(BIN)/python -m pytest tests --fast --random-order-bucket=global -n 2

# One zip per registered exercise (ASSIGNMENTS): a new exercise gets its zip.
gradescope: venv
	@echo "==> building Gradescope autograders into $(GRADESCOPE_OUT)/"
	@for ex in $(ASSIGNMENTS); do \
	  JAX_PLATFORMS=cpu $(BIN)/python -m autograder gradescope "$$ex" --out "$(GRADESCOPE_OUT)" \
	    --visibility "$(GRADESCOPE_VISIBILITY)" || exit 1; done

# The drift report (scripts/drift.py): every lesson executed and every sample graded in
# a throwaway venv with JAX $(JAX) on $(DRIFT_PYTHON), compared with this build; it
# prints same / changed / failed per rule, glued value and sample, and writes
# book/drift_report.json (commit it: the lessons say from it where their rules held).
# On a machine with a CUDA GPU the lessons run there (JAX's CUDA plugin in the venv) and
# the report goes to book/drift_report_gpu.json; DRIFT_PLATFORM=cpu or gpu decides instead.
# DRIFT_PLATFORM=tpu runs them on a TPU into book/drift_report_tpu.json (docs/testing.md:
# the committed one was made on a TPU machine with its own JAX, scripts/drift.py observe --cells).
JAX ?=
DRIFT_PYTHON ?= $(call default,DRIFT_PYTHON)
DRIFT_PLATFORM ?= auto
drift: book
	@test -n "$(JAX)" || { echo "==> say which JAX: make drift JAX=0.10.2"; exit 2; }
	@JAX_PLATFORMS=cpu $(BIN)/python scripts/drift.py --jax "$(JAX)" --python "$(DRIFT_PYTHON)" \
	  --platform "$(DRIFT_PLATFORM)"

# A consistent copy of everything the course keeps, taken while it runs, and putting it
# back (servers stopped): autograder/service/commands/backup.py; GRADER_DB, GRADER_COURSE and
# HUB_STATE say where the course's data is when not in this checkout. The backup is
# its owner's only (0700/0600), holds the course's own files (hidden tests, sources)
# and no pids, locks or sockets (docs/instructors.md, "Backups").
BACKUP ?=
backup: venv
	@test -n "$(BACKUP)" || { echo "==> say where: make backup BACKUP=/path/to/a/new/folder"; exit 2; }
	@$(BIN)/python -m autograder.service.backup save "$(BACKUP)"
restore: venv
	@test -n "$(BACKUP)" || { echo "==> say which: make restore BACKUP=/path/to/the/backup"; exit 2; }
	@$(BIN)/python -m autograder.service.backup restore "$(BACKUP)"

# Never course data: the gradebook (due dates, extensions, grades), grading.db, the
# hub's state and exercises/submitted stay (make backup copies them).
clean:
	rm -rf _build exercises/release

#!/bin/sh
# Prints the Python the course's .venv is made from: 3.12 or newer (JAX 0.11 dropped
# 3.11). In order: $PYTHON when given; python3.12 or python3.13 on the PATH; python3
# when it is new enough; the newest 3.12, else 3.13, that pyenv has installed. Exits 1 with
# one line saying what to install when there is none.
new_enough() {
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null
}
if [ -n "$PYTHON" ]; then
  if new_enough "$PYTHON"; then command -v "$PYTHON"; exit 0; fi
  echo "PYTHON=$PYTHON is not Python 3.12 or newer" >&2; exit 1
fi
for candidate in python3.12 python3.13 python3; do
  found=$(command -v "$candidate") && new_enough "$found" && { echo "$found"; exit 0; }
done
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
# 3.12 first: the version the pins are checked on.
for candidate in $(ls -d "$root"/versions/3.12.* 2>/dev/null | sort -rV) \
                 $(ls -d "$root"/versions/3.13.* 2>/dev/null | sort -rV); do
  new_enough "$candidate/bin/python3" && { echo "$candidate/bin/python3"; exit 0; }
done
echo "the course needs Python 3.12 or newer: install python3.12 (or 'pyenv install 3.12'), or run make PYTHON=/path/to/python3.12" >&2
exit 1

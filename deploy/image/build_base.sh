#!/bin/sh
# A Debian trixie base for the course image without a registry (trixie, not bookworm:
# the course needs Python 3.12 or newer, bookworm has 3.11): a minbase root made by
# mmdebstrap (root; 2 min 11 s and 168 MB measured here), imported as the local image $1
# (default course-base:trixie) into the Docker engine $DOCKER_HOST names.
# The tarball is kept in $COURSE_CACHE (default ~/.cache/course-tests), named by
# what it holds, so a second run (or CI's next) only imports it.
#   deploy/image/build_base.sh [TAG]
set -eu
tag=${1:-course-base:trixie}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# what the image needs from Debian: an interpreter for the venv, the CA bundle,
# tini (the servers' process 1: it reaps the kernels' children)
include=python3,python3-venv,ca-certificates,tini
cache=${COURSE_CACHE:-$HOME/.cache/course-tests}
mkdir -p "$cache"
key=$(printf '%s %s' "$include" "$mirror" | sha256sum | cut -c1-12)
tarball="$cache/trixie-minbase-$key.tar"
if [ ! -s "$tarball" ]; then
  mmdebstrap --quiet --variant=minbase --include="$include" trixie "$tarball.part" "$mirror"
  mv "$tarball.part" "$tarball"
fi
docker import "$tarball" "$tag" >/dev/null
echo "$tag"

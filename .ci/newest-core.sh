#!/usr/bin/env bash
# CI's newest-ansible-core leg: the unit tests, `ansible-playbook site.yml --syntax-check` and the
# lab's site.yml twice (the second run must change nothing) with the newest ansible-core and its
# `ansible` package (.ci/newest-core/constraints.txt). That core needs Python 3.12 or later, so the
# controller runs in a Debian 13 container (Python 3.13) built from the lab node image; the lab's
# nodes are the usual containers, started from here, and the controller joins their network.
# tests/run_all.sh runs this as one of its parallel jobs. Expects the project's virtualenv on PATH
# (for `clusterforge lab up/down`) and a Docker engine; prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/.."

# A lab of its own (a head node and one compute node: the leg checks the engine, not scale), apart
# from the test suite's lab (cftest) and the user's (lab).
LAB=${CLUSTERFORGE_NEWEST_LAB:-newest}
BASE_IMAGE=clusterforge/lab-node:trixie
IMAGE_REPOSITORY=clusterforge/controller-newest
started=$SECONDS
step() { printf '\n==> newest-core (%s s): %s\n' "$((SECONDS - started))" "$*"; }

work=$(mktemp -d)
export CLUSTERFORGE_STATE_DIR="$work/state"
cleanup() {
  clusterforge lab down --name "$LAB" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step "controller image (built once per dependency set, then cached)"
docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 || clusterforge lab image
context="$work/image"
mkdir -p "$context/ca-certificates"
cp .ci/newest-core/Dockerfile .ci/newest-core/constraints.txt "$context/"
find /usr/local/share/ca-certificates -maxdepth 1 -name '*.crt' -exec cp {} "$context/ca-certificates/" \; 2>/dev/null || true
python3 -c '
import sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))
' >"$context/requirements.txt"
# The tag names what went into the image: the base image, the Dockerfile, the requirements, the CAs.
digest=$(
  {
    docker image inspect -f '{{.Id}}' "$BASE_IMAGE"
    find "$context" -type f | LC_ALL=C sort | xargs cat
  } | sha256sum | cut -c1-16
)
image="$IMAGE_REPOSITORY:$digest"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  docker build -t "$image" "$context" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
  # Older dependency sets are of no further use.
  docker images "$IMAGE_REPOSITORY" --format '{{.Repository}}:{{.Tag}}' | { grep -vxF "$image" || true; } \
    | xargs -r docker rmi >/dev/null
fi
echo "$image"

step "lab $LAB (head01, node01)"
clusterforge lab up --name "$LAB" --size tiny >"$work/lab-up.log" 2>&1 || { cat "$work/lab-up.log"; exit 1; }
inventory="$CLUSTERFORGE_STATE_DIR/labs/$LAB/lab.topology.yml"

step "controller: unit tests, syntax check, site.yml twice"
# The project as a clone has it (tracked and untracked files, not ignored ones), copied in rather than
# mounted so nothing the leg writes (egg-info, caches) lands in the checkout. The lab's state (inventory,
# SSH key, known_hosts) is mounted at the same path, as its inventory names those paths.
git ls-files -z --cached --others --exclude-standard \
  | tar --null --files-from=- --ignore-failed-read -cf "$work/project.tar" 2>/dev/null
# promtool and amtool for the monitoring rules' unit tests, where the tests look for them (a directory
# of the leg's own: the pytest job may be fetching the checkout's copy at the same time).
tools="$work/extra/.clusterforge/tools/bin"
bash tests/tools/monitoring-tools.sh "$tools" >/dev/null
tar -rf "$work/project.tar" -C "$work/extra" .clusterforge
docker run --rm -i \
    --network "clusterforge-$LAB" \
    -v "$CLUSTERFORGE_STATE_DIR:$CLUSTERFORGE_STATE_DIR" \
    -e CLUSTERFORGE_STATE_DIR \
    -e "CLUSTERFORGE_INVENTORY=$inventory" \
    "$image" \
    bash -c 'mkdir /project && tar -x -C /project && exec bash /project/.ci/newest-core/controller.sh' \
    <"$work/project.tar"

step "passed"

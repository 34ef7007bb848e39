#!/usr/bin/env bash
# Inside the newest-core controller container (see .ci/newest-core.sh): the project is in /project,
# the lab's inventory at $CLUSTERFORGE_INVENTORY.
set -euo pipefail
cd /project
started=$SECONDS
step() { printf '\n==> newest-core controller (%s s): %s\n' "$((SECONDS - started))" "$*"; }

# A repository of its own: tests list the project's files with git, as in a clone.
git init -q && git add -A
pip install -q --no-deps --no-build-isolation --disable-pip-version-check -e .
ansible --version | head -1
python --version

step "unit tests"
pytest tests/unit -q -p no:cacheprovider

step "ansible-playbook site.yml --syntax-check"
ansible-playbook site.yml --syntax-check

# Through the runner, as users run it: its summary line gives the counts to check.
for run in first second; do
  step "site.yml on the lab: $run run"
  code=0
  clusterforge run -i "$CLUSTERFORGE_INVENTORY" >"/tmp/$run.log" 2>&1 || code=$?
  cat "/tmp/$run.log"
  if [ "$code" -ne 0 ]; then
    echo "newest-core: the $run run of site.yml exited $code" >&2
    exit 1
  fi
done
summary=$(grep -E '^hosts: [0-9]+ +failed: 0 +unreachable: 0 +changed tasks: [0-9]+' /tmp/second.log | tail -1)
case "$summary" in
  *"changed tasks: 0") echo "newest-core: the second run changed nothing ($summary)" ;;
  *) echo "newest-core: the second run was not idempotent: ${summary:-no summary line}" >&2; exit 1 ;;
esac

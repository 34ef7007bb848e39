#!/usr/bin/env bash
# Inside the newest-core controller container (see .ci/newest-core.sh): the project is in /project,
# the lab's inventory at $CLUSTERFORGE_INVENTORY. Every check runs even when an earlier one failed
# (one CI run tells all), and the script fails if any did.
set -euo pipefail
cd /project
started=$SECONDS
failed=()
step() { printf '\n==> newest-core controller (%s s): %s\n' "$((SECONDS - started))" "$*"; }

# A repository of its own: tests list the project's files with git, as in a clone.
git init -q && git add -A
pip install -q --no-deps --no-build-isolation --disable-pip-version-check -e .
ansible --version | head -1
python --version

step "unit tests"
pytest tests/unit -q -p no:cacheprovider || failed+=("unit tests")

step "ansible-playbook site.yml --syntax-check"
ansible-playbook site.yml --syntax-check || failed+=("syntax check")

# Through the runner, as users run it: its closing line gives the counts to check.
for run in first second; do
  step "site.yml on the lab: $run run"
  code=0
  clusterforge run -i "$CLUSTERFORGE_INVENTORY" >"/tmp/$run.log" 2>&1 || code=$?
  cat "/tmp/$run.log"
  if [ "$code" -ne 0 ]; then
    failed+=("site.yml $run run (exit $code)")
    break
  fi
  if [ "$run" = second ]; then
    summary=$(grep -oE '^hosts: [0-9]+ +failed: [0-9]+ +unreachable: [0-9]+ +changed tasks: [0-9]+' /tmp/second.log | tail -1 || true)
    if [[ $summary =~ failed:\ 0\ +unreachable:\ 0\ +changed\ tasks:\ 0$ ]]; then
      echo "newest-core: the second run changed nothing ($summary)"
    else
      failed+=("the second run was not idempotent: ${summary:-no closing line}")
    fi
  fi
done

step "done"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'newest-core: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi

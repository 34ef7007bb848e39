#!/usr/bin/env bash
# The whole test suite: lint, unit and integration tests, and every Molecule scenario.
# Expects the project's virtualenv on PATH (see the README's second command).
# Any failure, including pytest finding no tests (exit 5), fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "ruff"
ruff check .
ruff format --check .

step "yamllint"
yamllint --strict .

step "ansible-lint (production profile)"
ansible-lint

step "ansible-playbook site.yml --syntax-check"
ansible-playbook site.yml --syntax-check

step "lab node image (built once, then cached)"
clusterforge lab image

# pytest and the Molecule scenarios are independent (each brings up containers of its own, named
# apart) and spend much of their time waiting on apt and systemd, so they run CLUSTERFORGE_CI_JOBS
# at a time (default 2). Each job's output goes to a log, printed whole when the job ends; the run
# fails when any job fails. The newest-core job runs the unit tests, the syntax check and a lab's
# site.yml twice under the newest ansible-core, the controller in a Debian 13 container
# (.ci/newest-core.sh); it and pytest, the longest jobs, start first.
jobs=(pytest newest-core)
for scenario in molecule/*/molecule.yml; do
  name=$(basename "$(dirname "$scenario")")
  # A scenario too long for CI (a real DKMS build) is marked on demand in its molecule.yml.
  if grep -q '^# clusterforge: on-demand' "$scenario" && [ "${CLUSTERFORGE_ON_DEMAND:-0}" != 1 ]; then
    step "molecule test -s $name: on demand, not run (CLUSTERFORGE_ON_DEMAND=1 runs it)"
    continue
  fi
  jobs+=("$name")
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# The command of a job (names are plain words: pytest, newest-core, a scenario's directory).
job_command() {
  case $1 in
    pytest) echo pytest ;;
    newest-core) echo bash .ci/newest-core.sh ;;
    *) echo molecule test -s "$1" ;;
  esac
}
run_job() {
  local job=$1 logs=$2 start=$SECONDS rc=0 command
  read -ra command <<<"$(job_command "$job")"
  "${command[@]}" >"$logs/$job.log" 2>&1 || rc=$?
  {
    printf '\n==> %s (rc %s, %s s)\n' "$(job_command "$job")" "$rc" "$((SECONDS - start))"
    cat "$logs/$job.log"
  } | flock "$logs/.print" cat
  echo "$rc" >"$logs/$job.rc"
}
export -f job_command run_job
printf '%s\n' "${jobs[@]}" | xargs -P "${CLUSTERFORGE_CI_JOBS:-2}" -I{} bash -c 'run_job "$1" "$2"' _ {} "$logs"

# Why a job failed, from its log: pytest's summary of failures, or for a scenario what
# tests/why_failed.awk finds (its failed verifier session or Ansible task) and the scenario's recap.
why_failed() {
  local job=$1 log=$2
  if [ ! -s "$log" ]; then
    echo "(no log)"
  elif [ "$(job_command "$job")" = pytest ]; then
    sed -n '/short test summary info/,$p' "$log" | tail -n 80 | grep . || tail -n 60 "$log"
  else
    awk -f tests/why_failed.awk "$log" | tail -n 150
    echo "(...)"
    tail -n 12 "$log"
  fi
}

failed=()
for job in "${jobs[@]}"; do
  [ "$(cat "$logs/$job.rc" 2>/dev/null || echo missing)" = 0 ] || failed+=("$job")
done
if [ ${#failed[@]} -gt 0 ]; then
  # Each job's log was printed when it ended, maybe an hour of output ago; a CI page that keeps only
  # the tail would hide why. So why each failed job failed is printed again here: pytest's summary of
  # failures, or a scenario's failed verifier session and failed Ansible tasks, then its recap.
  for job in "${failed[@]}"; do
    step "why $job failed (from its log, printed in full above)"
    why_failed "$job" "$logs/$job.log"
  done
  step "failed: ${failed[*]}"
  exit 1
fi
step "all tests passed: ${jobs[*]}"

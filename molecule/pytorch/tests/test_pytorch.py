"""State the pytorch scenario leaves on the node (molecule verify, testinfra). Expected values are
the scenario's inputs (converge.yml, prepare.yml, molecule.yml), not the role's variables."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = "/opt/clusterforge/envs"
CURRENT, PREVIOUS = "2.6.0+standin", "2.5.1+standin"
# The file resolved through links: a venv's python run as pytorch-current/bin/python reports paths under the link.
PROBE = (
    "import json, os, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda,"
    " 'available': torch.cuda.is_available(), 'file': os.path.realpath(torch.__file__)}))"
)


def _torch(host, python: str) -> dict:
    return json.loads(host.check_output(f'{python} -c "{PROBE}"'))


def test_debian_s_torch_is_installed_at_its_version_and_held(host):
    package = host.package("python3-torch")
    assert package.is_installed
    assert package.version == "2.6.0+dfsg-7"
    assert "hold" in host.check_output("dpkg --get-selections python3-torch")


def test_debian_s_torch_imports_as_a_cpu_build_with_torchrun(host):
    found = _torch(host, "/usr/bin/python3")
    assert found["version"].split("+")[0] == "2.6.0"
    assert found["cuda"] is None
    assert found["available"] is False
    assert found["file"].startswith("/usr/lib/python3/dist-packages/torch/")
    assert host.file("/usr/bin/torchrun").mode & 0o111


def test_current_names_the_converged_env_and_previous_the_one_before(host):
    current = host.file(f"{ROOT}/pytorch-current")
    previous = host.file(f"{ROOT}/pytorch-previous")
    assert current.is_symlink and current.linked_to == f"{ROOT}/pytorch-{CURRENT}"
    assert previous.is_symlink and previous.linked_to == f"{ROOT}/pytorch-{PREVIOUS}"
    # No staged link is left behind by the atomic switch.
    assert not host.file(f"{ROOT}/.pytorch-current.new").exists


@pytest.mark.parametrize(("link", "version"), [("pytorch-current", CURRENT), ("pytorch-previous", PREVIOUS)])
def test_each_env_holds_its_pinned_torch_and_six_apart_from_the_system(host, link, version):
    found = _torch(host, f"{ROOT}/{link}/bin/python")
    assert found["version"] == version
    assert found["file"].startswith(f"{ROOT}/pytorch-{version}/lib/")
    assert host.check_output(f"{ROOT}/{link}/bin/python -c 'import six; print(six.__version__)'") == "1.17.0"


def test_the_env_records_the_hash_pinned_requirements_it_was_built_from(host):
    record = host.file(f"{ROOT}/pytorch-{CURRENT}/clusterforge-requirements.txt")
    assert record.mode == 0o644
    lines = [line for line in record.content_string.splitlines() if not line.startswith("#")]
    assert lines == [
        f"torch=={CURRENT} --hash=sha256:8e0dd929cf1f69b2718390154b630c505d010e9ad676b8c87d521aa54fe5ad73",
        "six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274",
    ]


def test_the_current_env_s_torchrun_is_the_stand_in_s(host):
    out = host.check_output(f"{ROOT}/pytorch-current/bin/torchrun")
    assert out == "torchrun: clusterforge test stand-in for PyTorch, it launches nothing"


@pytest.mark.parametrize(
    ("examples", "torchrun"),
    [
        ("/opt/clusterforge/distribution-examples", "/usr/bin/torchrun"),
        ("/opt/clusterforge/examples", f"{ROOT}/pytorch-current/bin/torchrun"),
    ],
)
def test_each_source_s_launch_template_and_acceptance_job_are_installed(host, examples, torchrun):
    sbatch = host.file(f"{examples}/torchrun.sbatch")
    assert sbatch.mode == 0o644
    assert f"  {torchrun} \\\n" in sbatch.content_string
    # No GPU in the node type: one process per node, gloo.
    assert "--nproc_per_node=1" in sbatch.content_string
    assert host.file(f"{examples}/ddp_smoke.py").mode == 0o755


def test_the_refused_builds_left_no_environment(host):
    left = host.check_output(
        "find /opt/clusterforge/refusal-envs -mindepth 1 -maxdepth 1 -name 'pytorch-*' -not -name '*.requirements.txt'"
    )
    assert left == ""


# Two ranks on the node, Debian's torch, gloo, env://: an uninterrupted run, then a run whose rank 1
# kills itself before step 23, then the same job started again, which resumes from step 20's checkpoint.
ACCEPTANCE = r"""
set -u
run() {
  port=$1; shift; pids=""
  for r in 0 1; do
    env MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r timeout 300 \
      python3 /opt/clusterforge/examples/ddp_smoke.py --steps 40 --checkpoint-every 5 --timeout 60 "$@" \
      > "$work/log-$port-$r" 2>&1 &
    pids="$pids $!"
  done
  rc=0; for p in $pids; do wait "$p" || rc=$?; done
  echo "attempt $port rc=$rc"
}
work=$(mktemp -d)
run 29511 --checkpoint-dir "$work/ref" --result-dir "$work/ref-result"
run 29512 --checkpoint-dir "$work/job" --result-dir "$work/job-result" --kill-rank 1 --kill-at-step 23
run 29513 --checkpoint-dir "$work/job" --result-dir "$work/job-result"
for f in "$work"/ref-result/rank-0.json "$work"/job-result/rank-0.json "$work"/job-result/rank-1.json; do
  cat "$f"; echo
done
grep -h "kills itself" "$work"/log-29512-*
rm -rf "$work"
"""


def _training_judge():
    """plugins/module_utils/training_judge.py, imported as Ansible packs it (ansible.module_utils)."""
    import ansible.module_utils

    module_utils = str(Path(__file__).resolve().parents[3] / "plugins" / "module_utils")
    if module_utils not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(module_utils)
    return importlib.import_module("ansible.module_utils.training_judge")


def test_the_acceptance_job_loses_a_rank_resumes_and_ends_with_the_uninterrupted_loss(host):
    done = host.run(ACCEPTANCE)
    lines = done.stdout.splitlines()
    assert lines[0] == "attempt 29511 rc=0", done.stdout + done.stderr
    assert lines[1].startswith("attempt 29512 rc=") and lines[1] != "attempt 29512 rc=0", done.stdout
    assert lines[2] == "attempt 29513 rc=0", done.stdout + done.stderr
    reference, *ranks = (json.loads(line) for line in lines[3:6])
    assert lines[6].endswith("kills itself before step 23")
    assert [rank["resumed_from"] for rank in ranks] == [20, 20]
    verdict = _training_judge().judge(
        {
            "world_size": 2,
            "checkpoint_every": 5,
            "ranks": ranks,
            "killed": {"rank": 1, "host": ranks[1]["host"], "at_step": 23},
            "reference_loss": reference["final_loss"],
        }
    )
    assert verdict.status == "pass", verdict.message
    assert verdict.check == "training.smoke"


# torchrun.sbatch as converge rendered it for Debian's torch (no libuv: the c10d rendezvous on a
# FileStore), run for real without Slurm. `srun` is a clusterforge STAND-IN written below (it starts
# its command once per node of SLURM_NNODES, both on this host, as two torchrun agents); torchrun,
# torch, the rendezvous and ddp_smoke.py are real. An uninterrupted job, then one whose rank 1 kills
# itself before step 13: torchrun restarts the workers, which resume from step 10's checkpoint.
TORCHRUN_JOB = r"""
set -u
work=$(mktemp -d)
mkdir "$work/bin"
cat > "$work/bin/srun" <<'EOF'
#!/bin/bash
# clusterforge test STAND-IN for Slurm's srun: the command once per node of SLURM_NNODES, all on
# this host, with each task's SLURM_NODEID and SLURM_PROCID; fails when a task fails.
while [[ $1 == --* ]]; do shift; done
pids=()
for ((n = 0; n < SLURM_NNODES; n++)); do
  SLURM_NODEID=$n SLURM_PROCID=$n "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
EOF
chmod 755 "$work/bin/srun"
job() {
  id=$1; shift
  env PATH="$work/bin:$PATH" LOGLEVEL=INFO SLURM_JOB_ID=$id SLURM_JOB_NAME=torchrun SLURM_NNODES=2 \
    CHECKPOINT_DIR="$work/job-$id" timeout 300 bash /opt/clusterforge/distribution-examples/torchrun.sbatch \
    --steps 30 --checkpoint-every 5 --timeout 60 --result-dir "$work/result-$id" "$@" > "$work/log-$id" 2>&1
  echo "job $id rc=$?"
}
job 101
job 102 --kill-rank 1 --kill-at-step 13
for f in "$work"/result-101/rank-0.json "$work"/result-102/rank-0.json "$work"/result-102/rank-1.json; do
  cat "$f"; echo
done
echo "killed: $(grep -c 'kills itself before step 13' "$work/log-102")"
echo "restarts: $(grep -c 'will restart worker group' "$work/log-102")"
echo "libuv errors: $(cat "$work"/log-* | grep -c 'without libuv')"
tail -n 40 "$work/log-102" >&2
rm -rf "$work"
"""


def test_the_launch_template_s_torchrun_restarts_a_killed_rank_on_debian_s_torch(host):
    done = host.run(TORCHRUN_JOB)
    lines = done.stdout.splitlines()
    assert lines[:2] == ["job 101 rc=0", "job 102 rc=0"], done.stdout + done.stderr
    reference, *ranks = (json.loads(line) for line in lines[2:5])
    assert lines[5:] == ["killed: 1", "restarts: 2", "libuv errors: 0"], done.stdout + done.stderr
    assert [rank["resumed_from"] for rank in sorted(ranks, key=lambda r: r["rank"])] == [10, 10]
    verdict = _training_judge().judge(
        {
            "world_size": 2,
            "checkpoint_every": 5,
            "ranks": ranks,
            "killed": {"rank": 1, "host": ranks[1]["host"], "at_step": 13},
            "reference_loss": reference["final_loss"],
        }
    )
    assert verdict.status == "pass", verdict.message

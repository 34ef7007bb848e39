"""The pytorch role's torchrun.sbatch, rendered by Ansible's own templating and run with FAKE
scontrol and srun (shell scripts written here that print their arguments), so the srun line a
user's job runs is checked argument by argument."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "pytorch"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def _sbatch(gpus: int, bin_dir: str = "/opt/clusterforge/envs/pytorch-current/bin", file_store: bool = False) -> str:
    variables = {
        "__pytorch_torchrun_file_store": file_store,
        "ansible_managed": "Ansible managed",
        "pytorch_examples_dir": DEFAULTS["pytorch_examples_dir"],
        "pytorch_checkpoint_root": DEFAULTS["pytorch_checkpoint_root"],
        "__pytorch_sbatch_gpus": gpus,
        "__pytorch_bin_dir": bin_dir,
    }
    return render((ROLE / "templates" / "torchrun.sbatch.j2").read_text(), **variables)


def _run(tmp_path, script: str, *args: str, **extra_env: str) -> list[str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text(
        '#!/bin/sh\n# FAKE scontrol\n[ "$1 $2" = "show hostnames" ] && printf "gpu001\\ngpu002\\n"\n'
    )
    (fake / "srun").write_text('#!/bin/sh\n# FAKE srun: one argument per line\nfor a in "$@"; do echo "$a"; done\n')
    for tool in fake.iterdir():
        tool.chmod(0o755)
    path = tmp_path / "torchrun.sbatch"
    path.write_text(script)
    env = {
        "PATH": f"{fake}:/usr/bin:/bin",
        "SLURM_JOB_NODELIST": "gpu[001-002]",
        "SLURM_NNODES": "2",
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NAME": "torchrun",
        **extra_env,
    }
    done = subprocess.run(["bash", str(path), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout.splitlines()


def test_the_template_is_valid_bash_and_asks_one_task_per_node_with_the_node_type_s_gpus(tmp_path):
    script = _sbatch(8)
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert script.startswith("#!/bin/bash\n#\n# Ansible managed\n")
    assert "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" in script
    assert "#SBATCH --requeue\n" in script


def test_srun_starts_torchrun_with_the_c10d_rendezvous_on_the_first_node(tmp_path):
    argv = _run(tmp_path, _sbatch(8), "--steps", "100")
    assert argv == [
        "--kill-on-bad-exit=1",
        "/opt/clusterforge/envs/pytorch-current/bin/torchrun",
        "--nnodes=2",
        "--nproc_per_node=8",
        "--rdzv_backend=c10d",
        "--rdzv_endpoint=gpu001:29500",
        "--rdzv_id=42",
        "--max-restarts=3",
        "/opt/clusterforge/examples/ddp_smoke.py",
        "--backend",
        "nccl",
        "--checkpoint-dir",
        "/scratch/checkpoints/torchrun-42",
        "--steps",
        "100",
    ]


@pytest.mark.parametrize("gpus", [0, "0"])
def test_a_node_type_without_gpus_gets_one_gloo_process_per_node(tmp_path, gpus):
    script = _sbatch(gpus, bin_dir="/usr/bin")
    assert "--gpus-per-node" not in script
    argv = _run(tmp_path, script)
    assert "/usr/bin/torchrun" in argv
    assert "--nproc_per_node=1" in argv
    assert argv[argv.index("--backend") + 1] == "gloo"


def test_debian_s_torch_without_libuv_gets_the_c10d_rendezvous_on_a_file_store(tmp_path):
    """The FileStore path (vars/Debian-13.yml); tests molecule/pytorch runs it for real with a rank killed."""
    checkpoints = tmp_path / "job"
    script = _sbatch(0, bin_dir="/usr/bin", file_store=True)
    argv = _run(tmp_path, script, CHECKPOINT_DIR=str(checkpoints), SLURM_RESTART_COUNT="2")
    assert argv[argv.index("--rdzv_backend=c10d") + 1 :][:3] == [
        f"--rdzv_endpoint={checkpoints}/rendezvous-2",
        "--rdzv_conf=store_type=file",
        "--rdzv_id=42",
    ]
    assert checkpoints.is_dir()  # the FileStore's directory exists before torchrun opens it
    assert "export USE_LIBUV=0 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1\n" in script
    assert "scontrol" not in script.split("set -euo pipefail")[1]


def test_the_role_picks_the_file_store_only_for_a_distribution_torch_without_libuv():
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    expression = role_vars["__pytorch_torchrun_file_store"]
    debian13 = yaml.safe_load((ROLE / "vars" / "Debian-13.yml").read_text())
    assert debian13["__pytorch_distribution_libuv"] is False
    public = DEFAULTS["pytorch_distribution_libuv"]
    cases = [("distribution", debian13, True), ("pip", debian13, False), ("distribution", {}, False)]
    for source, os_vars, expected in cases:
        found = render(expression, pytorch_source=source, pytorch_distribution_libuv=public, **os_vars)
        assert found is expected, (source, os_vars)

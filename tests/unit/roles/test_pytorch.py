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


def _sbatch(gpus: int, bin_dir: str = "/opt/clusterforge/envs/pytorch-current/bin") -> str:
    variables = {
        "ansible_managed": "Ansible managed",
        "pytorch_examples_dir": DEFAULTS["pytorch_examples_dir"],
        "pytorch_checkpoint_root": DEFAULTS["pytorch_checkpoint_root"],
        "__pytorch_sbatch_gpus": gpus,
        "__pytorch_bin_dir": bin_dir,
    }
    return render((ROLE / "templates" / "torchrun.sbatch.j2").read_text(), **variables)


def _run(tmp_path, script: str, *args: str) -> list[str]:
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

"""playbooks/validate.yml's acceptance-job step on hosts reached with the local connection (no
containers, no Slurm): which compute nodes it would train on, and why it says skipped, never
passed, where it cannot run the job."""

from __future__ import annotations

import json

import pytest

from tests.integration.conftest import local_inventory, local_playbook
from tests.paths import PROJECT


def _training_record(tmp_path, *extra: str) -> dict:
    inventory = local_inventory(tmp_path, {"h1": "", "c1": "", "c2": ""})
    # The local hosts in the Slurm groups: h1 the controller (which launches), c1 and c2 compute.
    inventory.write_text(inventory.read_text() + "[slurm_controller]\nh1\n[slurm_compute]\nc1\nc2\n")
    done = local_playbook(
        tmp_path,
        PROJECT / "playbooks" / "validate.yml",
        inventory,
        "-e",
        f"clusterforge_report_dir={tmp_path / 'reports'}",
        "-e",
        "clusterforge_validation_run_id=local",
        "-e",
        f"clusterforge_validation_textfile_dir={tmp_path / 'none'}",
        *extra,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    results = json.loads((tmp_path / "reports" / "local" / "h1.json").read_text())["results"]
    for host in ("c1", "c2"):  # the verdict is the launching host's only
        other = json.loads((tmp_path / "reports" / "local" / f"{host}.json").read_text())["results"]
        assert not [r for r in other if r["module"] == "training_check"]
    return next(r for r in results if r["module"] == "training_check")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["-e", "clusterforge_orchestrator=kubernetes"],
            "skipped: the acceptance job runs through Slurm; the orchestrator is kubernetes"
            " (a Kubernetes PyTorchJob is rendered, not run)",
        ),
        (
            ["-e", "clusterforge_validation_training_script=/nonexistent/ddp_smoke.py"],
            "skipped: no torch: no compute node has the acceptance job /nonexistent/ddp_smoke.py"
            " (the training stage's pytorch role installs it)",
        ),
    ],
)
def test_without_slurm_or_torch_the_job_is_skipped_with_the_reason(tmp_path, extra, message):
    record = _training_record(tmp_path, *extra)
    assert record["status"] == "skipped"
    assert record["checks"][0]["message"] == message


def test_compute_nodes_with_the_job_are_handed_to_slurm(tmp_path):
    # A file every host has stands in for the job: both compute nodes are chosen, and the launch
    # host, without Slurm's commands here, says so instead of passing.
    record = _training_record(tmp_path, "-e", "clusterforge_validation_training_script=/etc/hostname")
    assert record["status"] == "skipped"
    assert record["checks"][0]["message"] == "skipped: sinfo not found (not a Slurm controller or login node)"
    assert record["notes"] == []

"""playbooks/acceptance.yml (`clusterforge run acceptance`) on hosts reached with the local connection.

No containers: the five hosts of validate's local topology (two GPU nodes per leaf) run on this
machine, each judging REAL recorded outputs from its own replay directory (labelled replayed in the
results): gpu02's InfiniBand counters grew between the two readings (two real perfquery captures,
tests/fixtures/perfquery), gpu03's DCGM diagnostic failed (a real dcgmi output); the others pass.
The training step runs live and says it is skipped (no ddp_smoke.py or torch on this machine).
"""

from __future__ import annotations

import json
import shutil

import yaml

from tests.integration.conftest import local_inventory, local_playbook, run_replayed
from tests.integration.test_validate_local import GOOD, topology
from tests.paths import PROJECT
from tests.unit.plugins.module_utils.samples import fixture

CLEAN = fixture("perfquery", "hca-2port-extended-clean-osc.txt")
GREW = fixture("perfquery", "hca-1port-extended-link-downed-xmit-discards-osc.txt")
DCGM_PASS = fixture("dcgmi_diag", "r4-8gpu-legacy-format-pass-gcm.txt")
DCGM_FAIL = fixture("dcgmi_diag", "r1-deployment-fail-deepops.txt")


def test_acceptance_names_the_step_that_failed_on_each_node(tmp_path):
    inventory = tmp_path / "burnin.topology.yml"
    inventory.write_text(yaml.safe_dump(topology(), sort_keys=False))
    replay = tmp_path / "replay"
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):
        node = replay / host
        node.mkdir(parents=True)
        shutil.copy(CLEAN, node / "perfquery-before.txt")
        shutil.copy(GREW if host == "gpu02" else CLEAN, node / "perfquery-after.txt")
        shutil.copy(DCGM_FAIL if host == "gpu03" else DCGM_PASS, node / "dcgmi-diag.txt")
        shutil.copy(GOOD, node / "all_reduce_perf.2node.txt")  # the run across the leaf, from its first node
    (replay / "head01").mkdir()
    reports = tmp_path / "reports"
    done = run_replayed(tmp_path, "acceptance", inventory, "burnin", "clusterforge_acceptance_dcgm_level=4")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-4000:]
    assert "hosts: 5  failed: 2  unreachable: 0" in done.stdout, output[-4000:]

    results = {
        host: {r["module"]: r for r in json.loads((reports / "burnin" / f"{host}.json").read_text())["results"]}
        for host in ("head01", "gpu01", "gpu02", "gpu03", "gpu04")
    }
    status = {host: {step: r["status"] for step, r in steps.items()} for host, steps in results.items()}
    assert status["gpu02"] == {
        "dcgm_check": "pass",
        "training_burnin": "skipped",
        "nccl_check": "pass",
        "ib_counters": "fail",
    }
    assert status["gpu03"] == {
        "dcgm_check": "fail",
        "training_burnin": "skipped",
        "nccl_check": "pass",
        "ib_counters": "pass",
    }
    assert (
        status["gpu01"]
        == status["gpu04"]
        == {
            "dcgm_check": "pass",
            "training_burnin": "skipped",
            "nccl_check": "pass",
            "ib_counters": "pass",
        }
    )
    # No hardware on the head node: every hardware step says so, none passes.
    assert status["head01"] == dict.fromkeys(("dcgm_check", "training_burnin", "nccl_check", "ib_counters"), "skipped")
    assert results["head01"]["dcgm_check"]["checks"][0]["message"] == "skipped: no hardware"
    # One NCCL run per leaf, across its two nodes, recorded on both.
    assert results["gpu01"]["nccl_check"]["hosts"] == results["gpu02"]["nccl_check"]["hosts"] == ["gpu01", "gpu02"]
    assert "link_downed 0 -> 1 (+1)" in json.dumps(results["gpu02"]["ib_counters"])
    assert results["gpu02"]["ib_counters"]["source"] == "replay"

    # The failure message and the step table name the node and the step.
    assert "FAILED gpu02: Fail hosts whose checks failed: ib_counters: 2 of 2 checks failed" in output
    assert "FAILED gpu03: Fail hosts whose checks failed: dcgm_check: 5 of 9 checks failed" in output
    table = (
        "gpu02: dcgm_check pass (replayed), training_burnin skipped, nccl_check pass (replayed),"
        " ib_counters fail (replayed)"
    )
    assert table in output


def test_out_of_range_burn_in_variables_are_refused_by_name(tmp_path):
    inventory = local_inventory(tmp_path, {"node01": ""})
    done = local_playbook(
        tmp_path,
        PROJECT / "playbooks" / "acceptance.yml",
        inventory,
        "-e",
        f"clusterforge_report_dir={tmp_path / 'reports'}",
        "-e",
        '{"clusterforge_acceptance_dcgm_level": 5, "clusterforge_acceptance_training_seconds": "ten"}',
    )
    assert done.returncode == 2
    assert (
        "acceptance.yml: clusterforge_acceptance_training_seconds is not a whole number above 0;"
        ' clusterforge_acceptance_dcgm_level is "5", expected 1, 2, 3 or 4'
    ) in done.stdout
    assert not (tmp_path / "reports").exists()  # refused before anything ran

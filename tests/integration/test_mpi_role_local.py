"""The mpi role through ansible-playbook with the local connection, on this machine: a host in none of
mpi_groups is left alone; a host in one stops at the role's checks with a message that names the
variable or the release, before anything is installed (the release test names a release no machine
is, so it never installs, wherever it runs)."""

from __future__ import annotations

import json

from tests.integration.conftest import local_inventory, local_playbook
from tests.paths import PROJECT

PLAYBOOK = PROJECT / "tests" / "integration" / "playbooks" / "mpi_role.yml"


def _run(tmp_path, groups: list[str], *extra: str):
    inventory = local_inventory(tmp_path, {"node01": ""})
    text = inventory.read_text()
    for group in groups:
        text += f"[{group}]\nnode01\n"
    inventory.write_text(text)
    done = local_playbook(tmp_path, PLAYBOOK, inventory, *extra)
    return done, " ".join(done.stdout.split())


def test_a_host_outside_mpi_groups_is_left_alone(tmp_path):
    done, output = _run(tmp_path, ["slurm_controller"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "changed=0" in output and "failed=0" in output


def test_a_bad_mca_parameter_is_refused_naming_the_variable(tmp_path):
    params = json.dumps({"mpi_openmpi_mca_params": {"BTL; rm": "tcp"}})
    done, output = _run(tmp_path, ["slurm_compute"], "-e", params)
    assert done.returncode != 0
    assert "mpi_openmpi_mca_params a mapping of MCA parameter names (lower-case letters, digits, _)" in output


def test_an_unsupported_release_is_refused_naming_it(tmp_path):
    done, output = _run(tmp_path, ["slurm_login"], "-e", json.dumps({"__mpi_supported_releases": ["Plan9-4"]}))
    assert done.returncode != 0
    assert "mpi: installs on Plan9-4; node01 is " in output

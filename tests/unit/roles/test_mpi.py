"""The mpi role's decisions, rendered by Ansible's own templating: which hosts get MPI, which packages
at which versions, the MCA block merged into openmpi-mca-params.conf, and the container default."""

from __future__ import annotations

import pytest
import yaml
from ansible.plugins.loader import filter_loader

from tests.paths import PROJECT
from tests.unit.roles.harness import OS_FACTS, render, vars_file

ROLE = PROJECT / "roles" / "mpi"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
INSTALL = yaml.safe_load((ROLE / "tasks" / "install.yml").read_text())
filter_loader.add_directory(str(PROJECT / "plugins" / "filter"))
CONTAINER = {
    "virtualization_role": "guest",
    "virtualization_type": "docker",
    "virtualization_tech_guest": ["container"],
}
HOST = {"virtualization_role": "host", "virtualization_type": "kvm", "virtualization_tech_guest": []}


def _variables(**overrides) -> dict:
    os_vars = yaml.safe_load(vars_file(ROLE, OS_FACTS["debian13"]).read_text())
    return {
        **DEFAULTS,
        **ROLE_VARS,
        **os_vars,
        "ansible_facts": {**OS_FACTS["debian13"], **HOST},
        "group_names": ["compute", "slurm_compute"],
        **overrides,
    }


def _task(name: str) -> dict:
    return next(task for task in INSTALL if task["name"] == name)


@pytest.mark.parametrize(
    ("groups", "selected"),
    [(["compute", "slurm_compute"], True), (["slurm_login"], True), (["head", "slurm_controller"], False), ([], False)],
)
def test_only_hosts_of_mpi_groups_get_mpi(groups, selected):
    assert render(ROLE_VARS["__mpi_selected"], **_variables(group_names=groups)) is selected


@pytest.mark.parametrize(
    ("development", "expected"),
    [
        (False, ["openmpi-bin=5.0.7-1", "openmpi-common=5.0.7-1", "libopenmpi40=5.0.7-1", "libpmix2t64=5.0.7-1"]),
        (
            True,
            [
                "openmpi-bin=5.0.7-1",
                "openmpi-common=5.0.7-1",
                "libopenmpi40=5.0.7-1",
                "libpmix2t64=5.0.7-1",
                "libopenmpi-dev=5.0.7-1",
                "libpmix-dev=5.0.7-1",
                "gcc=4:14.2.0-1",
            ],
        ),
    ],
)
def test_debian_13_packages_are_pinned_to_the_versions_asked(development, expected):
    install = _task("Install OpenMPI and PMIx at their pinned versions")["ansible.builtin.apt"]
    variables = _variables(mpi_development=development)
    variables["__mpi_all_packages"] = render(ROLE_VARS["__mpi_all_packages"], **variables)
    assert render(install["name"], **variables) == expected
    # One version variable moves every package of its project.
    pinned = _variables(mpi_development=development, mpi_pmix_version="5.0.8-1")
    pinned["__mpi_all_packages"] = render(ROLE_VARS["__mpi_all_packages"], **pinned)
    assert [p for p in render(install["name"], **pinned) if "pmix" in p] == [
        p.replace("5.0.7-1", "5.0.8-1") for p in expected if "pmix" in p
    ]


def test_the_mca_block_is_one_sorted_line_per_parameter():
    merge = _task("Merge the MCA parameters into OpenMPI's parameter file")["ansible.builtin.blockinfile"]
    params = {"pml": "ob1", "btl": "self,sm,tcp", "btl_tcp_if_include": "eth0"}
    variables = _variables(mpi_openmpi_mca_params=params)
    assert render(merge["block"], **variables) == "btl = self,sm,tcp\nbtl_tcp_if_include = eth0\npml = ob1"
    assert render(merge["state"], **variables) == "present"
    # An empty mapping takes the block away again.
    assert render(merge["state"], **_variables(mpi_openmpi_mca_params={})) == "absent"
    assert render(merge["path"], **variables) == "/etc/openmpi/openmpi-mca-params.conf"


def test_the_mca_default_keeps_debian_s_settings():
    assert DEFAULTS["mpi_openmpi_mca_params"] == {}
    merge = _task("Merge the MCA parameters into OpenMPI's parameter file")["ansible.builtin.blockinfile"]
    assert render(merge["state"], **_variables()) == "absent"

"""The slurm role's configuration files, rendered by Ansible's own templating."""

from __future__ import annotations

import pytest
import yaml
from ansible.plugins.loader import filter_loader

from tests.paths import PROJECT, filters
from tests.unit.roles.harness import OS_FACTS, render, vars_file

ROLE = PROJECT / "roles" / "slurm"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
TEMPLATES = ROLE / "templates"
TOPOLOGY = PROJECT / "molecule" / "slurm" / "files" / "slurm.topology.yml"
filter_loader.add_directory(str(PROJECT / "plugins" / "filter"))


def _facts(address: str, **overrides) -> dict:
    return {
        **OS_FACTS["debian13"],
        "default_ipv4": {"address": address, "interface": "eth0"},
        "processor_count": 2,
        "processor_cores": 16,
        "processor_threads_per_core": 2,
        "memtotal_mb": 515000,
        "virtualization_role": "host",
        "virtualization_type": "kvm",
        **overrides,
    }


def _cluster(gpus: int = 8, model: str = "H100-SXM5-80GB") -> dict:
    hostvars = {
        "head01": {"ansible_facts": _facts("10.0.0.1")},
        "node01": {
            "ansible_facts": _facts("10.0.0.11"),
            "clusterforge_expected_gpus": gpus,
            "clusterforge_expected_gpu_model": model,
        },
        "node02": {
            "ansible_facts": _facts("10.0.0.12"),
            "clusterforge_expected_gpus": gpus,
            "clusterforge_expected_gpu_model": model,
        },
    }
    groups = {
        "all": list(hostvars),
        "slurm_controller": ["head01"],
        "slurm_compute": ["node01", "node02"],
        "slurm_login": [],
        "su1": ["node01"],
    }
    return {"hostvars": hostvars, "groups": groups}


def _variables(host: str = "node01", **overrides) -> dict:
    os_vars = yaml.safe_load(vars_file(ROLE, OS_FACTS["debian13"]).read_text())
    cluster = overrides.pop("cluster", None) or _cluster()
    return {
        **DEFAULTS,
        **ROLE_VARS,
        **os_vars,
        **cluster,
        "ansible_facts": cluster["hostvars"][host]["ansible_facts"],
        "inventory_hostname": host,
        "ansible_play_hosts_all": list(cluster["hostvars"]),
        "ansible_managed": "Ansible managed",
        # tasks/mpi.yml's decision (tests/unit/roles/test_slurm_mpi.py): every host has mpi_pmix.so.
        "__slurm_mpi": {"value": "pmix", "missing": [], "message": ""},
        **overrides,
    }


def _template(name: str, **overrides) -> str:
    variables = _variables(**overrides)
    return render((TEMPLATES / name).read_text(), **variables)


def _conf(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_slurm_conf_names_each_compute_node_with_its_hardware_and_gpus():
    lines = _conf(_template("slurm.conf.j2"))
    assert "SlurmctldHost=head01(10.0.0.1)" in lines
    assert "ClusterName=cluster" in lines
    assert "TopologyPlugin=topology/tree" in lines
    nodes = [line for line in lines if line.startswith("NodeName=")]
    assert nodes == [
        "NodeName=node01 NodeAddr=10.0.0.11 CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 "
        "RealMemory=513976 Gres=gpu:h100_sxm5_80gb:8 State=UNKNOWN",
        "NodeName=node02 NodeAddr=10.0.0.12 CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 "
        "RealMemory=513976 Gres=gpu:h100_sxm5_80gb:8 State=UNKNOWN",
    ]
    assert "PartitionName=batch Nodes=node01,node02 Default=YES MaxTime=INFINITE State=UP" in lines


def test_a_node_without_gpus_has_no_gres_and_gres_conf_is_empty():
    cluster = _cluster(gpus=0)
    assert "Gres=" not in _template("slurm.conf.j2", cluster=cluster)
    assert _conf(_template("gres.conf.j2", cluster=cluster)) == []


def test_partitions_from_topology_groups_hold_only_compute_nodes():
    partitions = [
        {"name": "batch", "group": "slurm_compute", "default": True, "options": "State=UP"},
        {"name": "unit1", "group": "su1"},
        {"name": "heads", "group": "slurm_controller"},
    ]
    lines = [line for line in _conf(_template("slurm.conf.j2", slurm_partitions=partitions)) if "Partition" in line]
    assert lines == [
        "PartitionName=batch Nodes=node01,node02 Default=YES State=UP",
        "PartitionName=unit1 Nodes=node01",
        "PartitionName=heads Nodes=",
    ]


def test_node_addresses_and_reserved_memory_can_be_set():
    text = _template("slurm.conf.j2", slurm_node_addresses={"node02": "192.168.1.2"}, slurm_memory_reserved_mb=0)
    assert "NodeName=node02 NodeAddr=192.168.1.2 " in text
    assert "RealMemory=515000 " in text


@pytest.mark.parametrize(
    ("autodetect", "gpus", "expected"),
    [
        ("off", 8, "NodeName=node01 AutoDetect=off Name=gpu Type=h100_sxm5_80gb File=/dev/nvidia[0-7]"),
        ("off", 1, "NodeName=node01 AutoDetect=off Name=gpu Type=h100_sxm5_80gb File=/dev/nvidia0"),
        ("nvml", 8, "NodeName=node01 AutoDetect=nvml"),
    ],
)
def test_gres_conf_lists_device_files_or_asks_nvml(autodetect, gpus, expected):
    lines = _conf(_template("gres.conf.j2", cluster=_cluster(gpus=gpus), slurm_gres_autodetect=autodetect))
    assert lines[0] == expected
    assert len(lines) == 2


@pytest.mark.parametrize(
    ("facts", "constrain"),
    [
        ({"virtualization_role": "host", "virtualization_type": "kvm", "virtualization_tech_guest": []}, True),
        # A VM owns its cgroups.
        ({"virtualization_role": "guest", "virtualization_type": "kvm", "virtualization_tech_guest": ["kvm"]}, True),
        (
            {
                "virtualization_role": "guest",
                "virtualization_type": "docker",
                "virtualization_tech_guest": ["container", "docker"],
            },
            False,
        ),
    ],
)
def test_cgroup_constraints_are_off_only_inside_containers(facts, constrain):
    # The default reads the shared container filter (plugins/filter/node.py), as every role does.
    variables = _variables(ansible_facts=_facts("10.0.0.11", **facts))
    value = render(DEFAULTS["slurm_cgroup_constrain"], **variables)
    assert str(value).strip() == str(constrain)
    # Preflight's fact wins over the facts.
    assert str(render(DEFAULTS["slurm_cgroup_constrain"], **variables, clusterforge_in_container=constrain)) == str(
        not constrain
    )
    cgroup = _conf(_template("cgroup.conf.j2", slurm_cgroup_constrain=constrain))
    slurm = _conf(_template("slurm.conf.j2", slurm_cgroup_constrain=constrain))
    if constrain:
        assert {"ConstrainCores=yes", "ConstrainRAMSpace=yes", "ConstrainDevices=yes"} <= set(cgroup)
        assert "ProctrackType=proctrack/cgroup" in slurm and "TaskPlugin=task/cgroup,task/affinity" in slurm
    else:
        assert cgroup == ["CgroupPlugin=disabled"]
        assert "ProctrackType=proctrack/linuxproc" in slurm


def test_accounting_points_slurmctld_at_slurmdbd():
    assert "AccountingStorageType=accounting_storage/slurmdbd" in _template("slurm.conf.j2", slurm_accounting=True)
    assert "AccountingStorageType=accounting_storage/none" in _template("slurm.conf.j2")


def test_slurmdbd_conf_carries_the_password():
    text = _template("slurmdbd.conf.j2", slurm_dbd_password="s3cret")
    assert "StoragePass=s3cret" in text and "DbdHost=head01" in text


def test_topology_conf_without_a_topology_file_is_one_switch():
    assert _conf(_template("topology.conf.j2")) == ["SwitchName=top Nodes=node01,node02"]


def test_topology_conf_keeps_only_the_nodes_slurm_knows():
    render_conf = filters("plugins/filter/slurm.py")["clusterforge_slurm_topology_conf"]
    two = _conf(render_conf(str(TOPOLOGY), ["slurm-node01", "slurm-node02"]))
    assert two == ["SwitchName=su1 Nodes=slurm-node[01-02]", "SwitchName=top Switches=su1"]
    three = _conf(render_conf(str(TOPOLOGY), ["slurm-node01", "slurm-node02", "slurm-node03"]))
    assert three == [
        "SwitchName=su1 Nodes=slurm-node[01-02]",
        "SwitchName=su2 Nodes=slurm-node03",
        "SwitchName=top Switches=su[1-2]",
    ]


def test_the_topology_template_uses_the_renderer():
    text = _template(
        "topology.conf.j2", slurm_topology_file=str(TOPOLOGY), __slurm_compute_hosts=["slurm-node01", "slurm-node02"]
    )
    assert _conf(text) == ["SwitchName=su1 Nodes=slurm-node[01-02]", "SwitchName=top Switches=su1"]


def test_hosts_outside_a_limited_run_are_the_slurm_hosts_not_in_the_play():
    variables = _variables(ansible_play_hosts_all=["node02"])
    assert sorted(render(ROLE_VARS["__slurm_outside_hosts"], **variables)) == ["head01", "node01"]
    assert render(ROLE_VARS["__slurm_outside_hosts"], **_variables()) == []


def test_the_health_hook_names_its_drains_and_knows_the_expected_gpus():
    text = _template("clusterforge-slurm-health.j2", clusterforge_expected_gpus=8)
    assert "expected_gpus=8" in text
    assert 'prefix="clusterforge-health:"' in text
    assert "state=resume" in text

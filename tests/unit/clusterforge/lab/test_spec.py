from __future__ import annotations

import pytest
import yaml

from clusterforge.errors import UsageError
from clusterforge.lab import cluster, spec


def _lab_hosts(project, state_dir, size, name="lab"):
    return cluster.prepare(project / "inventories/lab/lab.topology.yml", size, name)


def test_default_lab_is_a_head_and_two_compute_nodes(project, state_dir):
    hosts = _lab_hosts(project, state_dir, spec.DEFAULT_SIZE)
    assert [(h.name, h.group) for h in hosts] == [("head01", "head"), ("node01", "compute"), ("node02", "compute")]
    assert hosts[1].container == "clusterforge-lab-node01"


@pytest.mark.parametrize("size", list(spec.SIZES))
def test_every_size_sets_the_compute_count(project, state_dir, size):
    hosts = _lab_hosts(project, state_dir, size)
    assert sum(h.group == "compute" for h in hosts) == spec.SIZES[size]
    assert len({h.name for h in hosts}) == len(hosts)


def test_lab_topology_is_the_inventory_and_reaches_nodes_over_ssh_by_default(project, state_dir):
    _lab_hosts(project, state_dir, "tiny", name="other")
    written = yaml.safe_load(cluster.inventory_path("other").read_text())
    assert written["plugin"] == "topology"
    assert written["ansible"]["host"] == "clusterforge-other-{name}"
    variables = written["ansible"]["vars"]
    lab = state_dir / "labs" / "other"
    assert variables["ansible_connection"] == "ssh"
    assert variables["ansible_user"] == "clusterforge"
    assert variables["ansible_become_method"] == "sudo"
    assert "ansible_become" not in variables  # would override the tasks' `become: false`
    assert variables["ansible_ssh_private_key_file"] == str(lab / "id_ed25519")
    assert variables["ansible_ssh_common_args"] == f"-o UserKnownHostsFile={lab / 'known_hosts'}"
    assert variables["ansible_python_interpreter"] == "/usr/bin/python3"


def test_docker_connection_stays_an_option(project, state_dir):
    cluster.prepare(project / "inventories/lab/lab.topology.yml", "tiny", "other", "docker")
    variables = yaml.safe_load(cluster.inventory_path("other").read_text())["ansible"]["vars"]
    assert variables["ansible_connection"] == "community.docker.docker"
    assert not {"ansible_user", "ansible_ssh_private_key_file", "ansible_become_method"} & set(variables)


def test_unknown_connection_names_the_known_ones(project, state_dir):
    with pytest.raises(UsageError, match=r"unknown lab connection 'winrm': expected one of ssh, docker"):
        cluster.prepare(project / "inventories/lab/lab.topology.yml", "tiny", "lab", "winrm")


def test_unknown_size_names_the_known_ones(project, state_dir):
    with pytest.raises(UsageError, match=r"unknown lab size 'huge': expected one of tiny, small"):
        _lab_hosts(project, state_dir, "huge")


@pytest.mark.parametrize("name", ["", "1lab", "lab_1", "lab/x", "lab x"])
def test_bad_lab_names_are_refused(project, state_dir, name):
    with pytest.raises(UsageError, match="invalid lab name"):
        _lab_hosts(project, state_dir, "tiny", name=name)


def test_too_large_a_topology_is_refused_for_the_lab(project, state_dir):
    with pytest.raises(UsageError, match="too many for a lab"):
        cluster.prepare(project / "inventories/examples/h100-superpod.topology.yml", None, "lab")


def test_invalid_lab_topology_writes_nothing(tmp_path, state_dir):
    bad = tmp_path / "bad.topology.yml"
    bad.write_text("plugin: topology\ncluster: {name: x}\n")
    with pytest.raises(UsageError, match="the lab topology is not valid"):
        cluster.prepare(bad, None, "lab")
    assert not cluster.inventory_path("lab").exists()


def test_unknown_release_is_refused():
    with pytest.raises(UsageError, match="unknown lab OS 'buster'"):
        spec.image_tag("buster")


def test_molecule_platform_matches_the_lab_container_settings(project):
    """Molecule scenarios and the lab must boot nodes the same way."""
    config = yaml.safe_load((project / ".config/molecule/config.yml").read_text())
    platform = config["platforms"][0]
    options = spec.docker_run_options()
    assert platform["capabilities"] == options["cap_add"]
    assert platform["security_opts"] == options["security_opt"]
    assert platform["tmpfs"] == list(options["tmpfs"])
    assert platform["volumes"] == list(spec.NODE_VOLUMES) + [
        f"${{MOLECULE_PROJECT_DIRECTORY}}/{spec.APT_DIR_IN_PROJECT}/{name}:{target}:ro"
        for name, target in spec.APT_MOUNTS
    ]
    assert platform["cgroupns_mode"] == options["cgroupns"]
    assert platform["command"] == options["command"]
    assert platform["privileged"] is options["privileged"] is False
    assert platform["image"].endswith(f"{spec.image_tag(spec.DEFAULT_RELEASE)}}}")


def test_the_lab_mounts_its_apt_proxy_choice_read_only_from_the_package(project):
    """The files exist where the lab mounts them from, the project path Molecule uses is the same
    directory, and the script apt runs is executable (a bind mount keeps the mode)."""
    volumes = spec.docker_run_options()["volumes"]
    for name, target in spec.APT_MOUNTS:
        source = spec.APT_DIR / name
        assert volumes[str(source)] == {"bind": target, "mode": "ro"}
        assert source.is_file()
        assert (project / spec.APT_DIR_IN_PROJECT / name).resolve() == source.resolve()
    assert (spec.APT_DIR / spec.APT_DETECT).stat().st_mode & 0o111
    drop_in = (spec.APT_DIR / spec.APT_MOUNTS[1][0]).read_text()
    assert f'Acquire::http::Proxy-Auto-Detect "{spec.APT_MOUNTS[0][1]}";' in drop_in


def test_a_lab_node_mounts_the_lab_s_shared_volume_and_a_molecule_instance_none():
    """Every node of a lab mounts the same volume read-write at the same path (the lab's shared
    file system); the options without a lab name (Molecule's) mount no such volume."""
    volumes = spec.docker_run_options("ci")["volumes"]
    assert volumes[spec.shared_volume_name("ci")] == {"bind": spec.SHARED_MOUNT, "mode": "rw"}
    assert spec.shared_volume_name("ci") != spec.shared_volume_name("dev")
    assert spec.SHARED_MOUNT not in [v["bind"] for v in spec.docker_run_options()["volumes"].values()]

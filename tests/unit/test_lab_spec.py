from __future__ import annotations

import pytest
import yaml

from clusterforge.errors import UsageError
from clusterforge.lab import spec


def test_default_lab_is_a_head_and_two_compute_nodes():
    hosts = spec.hosts_for(spec.DEFAULT_SIZE, "lab")
    assert [(h.name, h.group) for h in hosts] == [
        ("head01", "head"),
        ("node01", "compute"),
        ("node02", "compute"),
    ]
    assert hosts[1].container == "clusterforge-lab-node01"


@pytest.mark.parametrize("size", list(spec.SIZES))
def test_every_size_names_hosts_uniquely(size):
    hosts = spec.hosts_for(size, "lab")
    assert len({h.name for h in hosts}) == len(hosts) == sum(spec.SIZES[size].values())


def test_unknown_size_names_the_known_ones():
    with pytest.raises(UsageError, match=r"unknown lab size 'huge': expected one of tiny, small"):
        spec.hosts_for("huge", "lab")


@pytest.mark.parametrize("name", ["", "1lab", "lab_1", "lab/x", "lab x"])
def test_bad_lab_names_are_refused(name):
    with pytest.raises(UsageError, match="invalid lab name"):
        spec.hosts_for("tiny", name)


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
    assert platform["volumes"] == list(spec.NODE_VOLUMES)
    assert platform["cgroupns_mode"] == options["cgroupns"]
    assert platform["command"] == options["command"]
    assert platform["privileged"] is options["privileged"] is False
    assert platform["image"].endswith(f"{spec.image_tag(spec.DEFAULT_RELEASE)}}}")

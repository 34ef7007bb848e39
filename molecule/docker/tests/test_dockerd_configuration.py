"""dockerd on a node with the site's own daemon.json (prepare.yml): the daemon runs with the inputs'
data-root and log settings and systemd's cgroups, daemon.json keeps the site's keys, the user is in the
docker group, and dockerd was restarted once for the new configuration. Inputs:
molecule/docker/molecule.yml."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def daemon_json(host) -> dict:
    return json.loads(host.file("/etc/docker/daemon.json").content_string)


def test_dockerd_runs_with_the_data_root_log_driver_and_cgroup_driver(host, inputs):
    assert host.service("docker").is_running
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert info["DockerRootDir"] == inputs["docker_data_root"]
    assert info["LoggingDriver"] == "json-file"
    assert info["CgroupDriver"] == "systemd"
    assert info["Driver"] == "vfs"  # the site's storage driver


def test_the_managed_keys_are_set(daemon_json, inputs):
    assert daemon_json["data-root"] == inputs["docker_data_root"]
    # The site's own label stays beside the rotation the inputs ask for.
    assert daemon_json["log-opts"] == {
        "labels": "site",
        "max-size": inputs["docker_log_max_size"],
        "max-file": str(inputs["docker_log_max_file"]),
    }
    assert daemon_json["default-shm-size"] == inputs["docker_default_shm_size"]
    assert daemon_json["exec-opts"] == ["native.umask=normal", "native.cgroupdriver=systemd"]
    assert daemon_json["default-ulimits"]["stack"] == {"Name": "stack", "Hard": 67108864, "Soft": 67108864}
    for key, value in inputs["docker_daemon_config"].items():
        assert daemon_json[key] == value


def test_the_site_s_keys_survived(daemon_json):
    # prepare.yml's daemon.json: the storage driver, a log label and an exec option of its own.
    assert daemon_json["storage-driver"] == "vfs"
    assert daemon_json["log-opts"]["labels"] == "site"
    assert "native.umask=normal" in daemon_json["exec-opts"]


def test_the_users_are_in_the_docker_group(host, inputs):
    for user in inputs["docker_users"]:
        assert "docker" in host.user(user).groups


# dockerd started once when the package was installed and restarted once by the handler for the new
# daemon.json; the idempotence run restarted nothing.
def test_dockerd_started_exactly_twice(host):
    journal = host.check_output("journalctl --unit=docker.service --output=cat --no-pager").splitlines()
    assert len([line for line in journal if line.startswith("Started docker.service")]) == 2

"""os_tuning on a GPU node: the sysctl file and live values, the site's own files left alone, and the
memlock limit as sessions and services really get it. Inputs: molecule/os_tuning/molecule.yml."""

from __future__ import annotations

import pytest

SYSCTL_FILE = "/etc/sysctl.d/90-clusterforge-os-tuning.conf"
LIMITS_FILE = "/etc/security/limits.d/90-clusterforge-memlock.conf"
# The role's tuning for a GPU node (clusterforge_expected_gpus > 0 turns hugepages on), as its
# README states them; the scenario's os_tuning_sysctl_extra is added from the inputs.
GPU_NODE_SYSCTL = {
    "vm.nr_hugepages": "8192",
    "net.core.rmem_max": "2147483647",
    "net.core.wmem_max": "2147483647",
    "net.ipv4.tcp_rmem": "4096 87380 2147483647",
    "net.ipv4.tcp_wmem": "4096 65536 2147483647",
}
# Keys the container owns in its network namespace: their live values must match too.
LIVE = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.somaxconn"]
# Written by prepare.yml before the role ran.
SITE_FILES = {
    "/etc/sysctl.d/60-site-local.conf": "net.core.netdev_max_backlog = 5000\n",
    "/etc/security/limits.d/50-site.conf": "@hpc soft nofile 65536\n",
}


@pytest.fixture
def persisted(inputs):
    assert inputs["clusterforge_expected_gpus"] > 0, "the scenario is a GPU node"
    return GPU_NODE_SYSCTL | {key: str(value) for key, value in inputs["os_tuning_sysctl_extra"].items()}


def test_every_key_is_persisted_with_its_value_and_nothing_else(host, persisted):
    sysctl_file = host.file(SYSCTL_FILE)
    assert sysctl_file.user == "root"
    assert sysctl_file.mode == 0o644
    lines = sysctl_file.content_string.splitlines()
    assert lines[1] == "# Ansible managed"
    settings = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert {key.strip(): value.strip() for key, value in (line.split("=", 1) for line in settings)} == persisted
    assert len(settings) == len(persisted)


@pytest.mark.parametrize("key", LIVE)
def test_the_node_s_own_keys_are_applied_live(host, persisted, key):
    assert " ".join(host.check_output(f"sysctl -n {key}").split()) == persisted[key]


@pytest.mark.parametrize(("path", "content"), SITE_FILES.items())
def test_the_site_s_own_files_are_left_as_they_were(host, path, content):
    assert host.file(path).content_string == content


def test_the_memlock_limit_is_set_for_every_user_and_for_root(host, inputs):
    lines = host.file(LIMITS_FILE).content_string.splitlines()
    memlock = str(inputs["os_tuning_memlock"])
    for who in ("*      ", "root   "):
        for kind in ("soft", "hard"):
            assert f"{who} {kind}    memlock    {memlock}" in lines


def test_systemd_hands_services_the_memlock_limit(host, inputs):
    value = host.check_output("systemctl show --property=DefaultLimitMEMLOCK --value")
    assert value == str(inputs["os_tuning_memlock"] * 1024)  # KiB in the input, bytes in systemd


# The value itself, not only that a session opens: the container starts at the engine's 8 MiB, so
# the input's 4 MiB comes from the role's pam_limits file (root by name, others by '*').
@pytest.mark.parametrize("user", ["root", "nobody"])
def test_login_sessions_get_the_memlock_limit_soft_and_hard(host, inputs, user):
    out = host.check_output(f"runuser --login {user} --shell /bin/sh --command 'ulimit -S -l; ulimit -H -l'")
    assert out.splitlines() == [str(inputs["os_tuning_memlock"])] * 2


def test_a_service_gets_the_memlock_limit_soft_and_hard(host, inputs):
    out = host.check_output("systemd-run --wait --pipe --quiet --collect -- /bin/sh -c 'ulimit -S -l; ulimit -H -l'")
    assert out.splitlines() == [str(inputs["os_tuning_memlock"])] * 2

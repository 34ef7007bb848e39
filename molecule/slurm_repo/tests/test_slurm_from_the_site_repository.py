"""Slurm from a site's own repository (the lab's signed mirror): its source signed-by its own keyring,
the pins and holds at the site's version, apt's policy naming the site as that version's source, the
site server's own log of every .deb fetched, and Slurm (with slurmdbd) running a job. Inputs:
molecule/slurm_repo/molecule.yml (slurm_version, slurm_repository_url)."""

from __future__ import annotations

import json
import re

import pytest

PACKAGES = ["slurm-client", "slurm-wlm-basic-plugins", "slurmctld", "slurmd", "slurmdbd"]
PINS = {
    "client": "slurm-wlm-basic-plugins slurm-client",
    "daemons": "slurmctld slurmd",
    "dbd": "slurmdbd",
}


def test_the_source_names_the_site_repository_signed_by_its_own_keyring(host, inputs):
    sources = host.file("/etc/apt/sources.list.d/clusterforge-slurm.sources").content_string
    assert f"URIs: {inputs['slurm_repository_url']}" in sources.splitlines()
    assert "Suites: trixie" in sources.splitlines()
    assert "Components: main" in sources.splitlines()
    assert "Signed-By: /etc/apt/keyrings/clusterforge-slurm.asc" in sources.splitlines()


def test_the_keyring_is_the_mirror_s_key(host):
    fingerprint = json.loads(host.file("/srv/mirror/mirror.json").content_string)["fingerprint"]
    keys = host.check_output("gpg --batch --no-tty --show-keys --with-colons /etc/apt/keyrings/clusterforge-slurm.asc")
    assert f"fpr:::::::::{fingerprint}:" in keys.splitlines()


@pytest.mark.parametrize(("name", "packages"), PINS.items())
def test_the_slurm_packages_are_pinned_to_the_site_s_version(host, inputs, name, packages):
    pin = host.file(f"/etc/apt/preferences.d/clusterforge-slurm-{name}").content_string
    assert f"Package: {packages}\nPin: version {inputs['slurm_version']}\nPin-Priority: 1001" in pin


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_is_installed_at_the_pinned_version_which_the_site_serves(host, inputs, package):
    version = inputs["slurm_version"]
    assert host.package(package).version == version
    policy = host.check_output(f"apt-cache policy {package}")
    assert f"Installed: {version}" in policy
    assert f"Candidate: {version}" in policy
    # The version table's entry for it (priority 1001, from the pin) lists the site as its source.
    entry = re.search(rf"\*\*\* {re.escape(version)} 1001\n((?:\s{{8}}.*\n?)*)", policy)
    assert entry, policy
    assert f"500 {inputs['slurm_repository_url']} trixie/main" in entry.group(1)


def test_every_slurm_package_is_held(host):
    holds = host.check_output("apt-mark showhold").splitlines()
    assert set(PACKAGES) <= set(holds)


# apt fetches one instance of a version that several sources serve, so the proof of where the .debs
# came from is the site server's own access log. apt percent-encodes the '+' of a revision (%2b).
@pytest.mark.parametrize("package", PACKAGES)
def test_the_node_fetched_every_slurm_package_from_the_site_repository(host, inputs, package):
    log = host.check_output("journalctl --unit=clusterforge-lab-mirror --no-pager --output=cat")
    version = re.escape(re.sub(r"^[0-9]+:", "", inputs["slurm_version"])).replace(r"\+", "(?:\\+|%2[bB])")
    assert re.search(rf'"GET /slurm/debian/pool/\S*/{package}_{version}_\w+\.deb HTTP/1\.[01]" 200 ', log)


def test_slurmdbd_runs_and_knows_the_cluster(host):
    config = host.check_output("scontrol show config")
    cluster = re.findall(r"(?m)^ClusterName\s+=\s+(\S+)$", config)
    assert host.check_output("sacctmgr --noheader --parsable2 show cluster format=Cluster").splitlines() == cluster


def test_a_job_runs_on_the_node(host, until):
    nodes = until(lambda: host.check_output("sinfo --noheader --Node --format='%N|%T'"), lambda n: n.endswith("|idle"))
    assert nodes == "slurm-repo01|idle"
    assert host.check_output("srun --nodes=1 --time=1 hostname") == "slurm-repo01"

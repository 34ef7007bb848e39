"""Docker's repository path against the lab's signed mirror (stand-in packages): the key installed as the
source's signed-by keyring, the pinned versions installed and held, apt's candidate held back from the
newer version in the mirror, and the hold alone keeping docker-ce back without the pin. Inputs:
converge.yml's docker_repo_url; the versions are the role's pinned defaults, which the scenario keeps."""

from __future__ import annotations

import pytest

REPO_URL = "http://127.0.0.1:8080/docker/linux/debian"
PINNED = "5:28.5.1-1~debian.13~trixie"
NEWER = "5:28.5.2-1~debian.13~trixie"
VERSIONS = {"docker-ce": PINNED, "docker-ce-cli": PINNED, "containerd.io": "1.7.28-1~debian.13~trixie"}


def test_the_key_is_installed_as_the_source_s_signed_by_keyring(host):
    assert host.file("/etc/apt/keyrings/docker.asc").content == host.file("/srv/mirror/docker/linux/debian/gpg").content
    lines = host.file("/etc/apt/sources.list.d/docker.sources").content_string.splitlines()
    for line in (
        "Signed-By: /etc/apt/keyrings/docker.asc",
        f"URIs: {REPO_URL}",
        "Suites: trixie",
        "Components: stable",
    ):
        assert line in lines


@pytest.mark.parametrize(("package", "version"), VERSIONS.items())
def test_the_pinned_stand_ins_are_installed_and_held(host, package, version):
    status = host.check_output(f"dpkg-query --show --showformat '${{Version}} ${{binary:Summary}}' {package}")
    assert status.startswith(f"{version} ")
    assert "clusterforge test stand-in" in status
    assert package in host.check_output("apt-mark showhold").splitlines()


def test_the_pin_makes_the_older_version_the_candidate(host):
    policy = host.check_output("apt-cache policy docker-ce")
    assert f"Candidate: {PINNED}" in policy
    assert NEWER in policy


# Without the pin (an empty preferences directory), only the hold stands between docker-ce and the newer one.
def test_the_hold_alone_keeps_docker_ce_back(host):
    no_pins = "/tmp/verify-no-preferences"
    simulate = f"mkdir -p {no_pins} && apt-get --simulate -o Dir::Etc::PreferencesParts={no_pins} upgrade"
    assert "Inst docker-ce " not in host.check_output(simulate)
    assert "Inst docker-ce " in host.check_output(f"{simulate} --ignore-hold")

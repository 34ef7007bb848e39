"""package_cache on one node (the cache host and its own client): the cache is installed, pinned,
held and running; apt goes through it; a source naming another Debian mirror is served from the
scenario's backend; and a package the cache holds installs again with the way out gone.

Expected values come from the scenario's inputs (molecule.yml) and apt-cacher-ng's own defaults."""

from __future__ import annotations

from pathlib import Path

import yaml

SCENARIO = Path(__file__).resolve().parents[1]
_INVENTORY = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["inventory"]["host_vars"]
HOST, HOST_VARS = next(iter(_INVENTORY.items()))
BACKENDS = {
    archive: [url.rstrip("/") + "/" for url in urls] for archive, urls in HOST_VARS["package_cache_backends"].items()
}
# apt-cacher-ng's own port and files; the scenario leaves them as they are.
PORT = 3142
LOG = "/var/log/apt-cacher-ng/apt-cacher.log"
APT_FILE = "/etc/apt/apt.conf.d/90clusterforge-package-cache"
# Small packages of Debian main that nothing in the scenario installs: one fetched through the
# cache before the way out is cut, one never fetched (it must fail without upstream).
CACHED = "hello"
NEVER_FETCHED = "figlet"
APT = "DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Acquire::Retries=0 -o Acquire::http::Timeout=5"


def test_the_cache_is_installed_pinned_and_held(host):
    package = host.package("apt-cacher-ng")
    assert package.is_installed
    pin = host.file("/etc/apt/preferences.d/clusterforge-package-cache").content_string
    assert f"Package: apt-cacher-ng\nPin: version {package.version}\n" in pin
    assert host.check_output("apt-mark showhold apt-cacher-ng") == "apt-cacher-ng"


def test_the_cache_runs_and_listens_on_its_port(host):
    service = host.service("apt-cacher-ng")
    assert service.is_running
    assert service.is_enabled
    assert host.socket(f"tcp://{PORT}").is_listening


def test_apt_goes_through_the_cache_and_local_repositories_do_not(host):
    drop_in = host.file(APT_FILE)
    assert (drop_in.user, drop_in.group, drop_in.mode) == ("root", "root", 0o644)
    settings = host.check_output("apt-config dump Acquire::http")
    assert f'Acquire::http::Proxy "http://{HOST}:{PORT}/";' in settings
    # The lab's auto-detect (mounted into every instance) gives way to the cluster's cache.
    assert 'Acquire::http::Proxy-Auto-Detect "";' in settings
    assert 'Acquire::http::Proxy::127.0.0.1 "DIRECT";' in settings
    assert 'Acquire::http::Proxy::localhost "DIRECT";' in settings


def test_the_cache_fetches_each_archive_from_the_named_mirrors_only(host):
    for archive, urls in BACKENDS.items():
        backends = host.file(f"/etc/apt-cacher-ng/backends_{archive}")
        assert (backends.user, backends.mode) == ("root", 0o644)
        mirrors = [line for line in backends.content_string.splitlines() if line and not line.startswith("#")]
        assert mirrors == urls, archive


def test_the_settings_file_is_read_after_the_packages_own(host):
    files = host.check_output("ls /etc/apt-cacher-ng/*.conf").split()
    assert files[-1] == "/etc/apt-cacher-ng/zzz_clusterforge.conf", files
    assert f"Port: {PORT}" in host.file(files[-1]).content_string.splitlines()


def test_a_source_naming_another_debian_mirror_is_served_from_the_backend(host):
    """ftp.de.debian.org does not answer from here: its index arrives only through the cache,
    which fetches it from the backend. apt runs on a scratch state, so the node's lists stay."""
    release = host.check_output(". /etc/os-release && echo $VERSION_CODENAME")
    scratch = "/tmp/package-cache-remap"
    options = (
        f"-o Dir::Etc::SourceList={scratch}/sources.list -o Dir::Etc::SourceParts=/nonexistent "
        f"-o Dir::State::Lists={scratch}/lists"
    )
    index = f"{scratch}/lists/ftp.de.debian.org_debian_dists_{release}_main_binary-amd64_Packages*"
    host.check_output(f"rm -rf {scratch} && mkdir -p {scratch}/lists/partial")
    host.check_output(f"echo 'deb http://ftp.de.debian.org/debian {release} main' > {scratch}/sources.list")
    try:
        direct = host.run(f"{APT} {options} -o Acquire::http::Proxy=DIRECT update; ls {index}")
        assert direct.rc != 0, "ftp.de.debian.org answered directly: the test would prove nothing"
        cached = host.run(f"{APT} {options} update && ls {index}")
        assert cached.rc == 0, cached.stdout + cached.stderr
    finally:
        host.run(f"rm -rf {scratch}")


def test_a_cached_package_installs_again_with_upstream_gone(host):
    """The second install of a package finds it in the cache, not on the node (apt-get clean) and
    not upstream (no default route: nothing outside the container network answers)."""
    host.run(f"{APT} purge {CACHED} {NEVER_FETCHED} && apt-get clean")
    first = host.run(f"{APT} install --no-install-recommends {CACHED}")
    assert first.rc == 0, first.stdout + first.stderr
    host.check_output(f"{APT} purge {CACHED} && apt-get clean")
    route = host.check_output("ip -4 route show default")
    assert route.startswith("default via "), route
    try:
        host.check_output("ip -4 route del default")
        outside = host.run("timeout 5 bash -c 'exec 3<>/dev/tcp/deb.debian.org/80'")
        assert outside.rc != 0, "deb.debian.org still answers: upstream is not gone"
        again = host.run(f"{APT} install --no-install-recommends {CACHED}")
        assert again.rc == 0, again.stdout + again.stderr
        assert host.package(CACHED).is_installed
        never = host.run(f"{APT} install --no-install-recommends {NEVER_FETCHED}")
        assert never.rc != 0, f"{NEVER_FETCHED} installed with upstream gone: the cache cannot have had it"
    finally:
        host.run(f"ip -4 route replace {route}")  # "default via <gateway> dev <device>", as read
        host.run(f"{APT} purge {CACHED} {NEVER_FETCHED}")
    deb_lines = [line for line in host.file(LOG).content_string.splitlines() if f"/{CACHED}_" in line]
    assert deb_lines, f"{LOG} has no line for {CACHED}: apt did not go through the cache"

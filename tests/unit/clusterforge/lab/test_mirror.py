"""The lab's signed apt mirror (clusterforge.lab.mirror): vendor layouts, signatures, stand-ins."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterforge.lab import mirror

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("dpkg-deb", "gpg", "gpgv")),
    reason="building the mirror needs dpkg-deb, gpg and gpgv (Debian's dpkg and gnupg)",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror") / "root"
    manifest = mirror.build(root, suite="trixie", arch="amd64")
    return root, manifest


def _keyring(root: Path, tmp_path: Path, key_path: str) -> Path:
    keyring = tmp_path / "keyring.gpg"
    armored = (root / key_path).read_bytes()
    keyring.write_bytes(subprocess.run(["gpg", "--dearmor"], input=armored, capture_output=True, check=True).stdout)
    return keyring


def _stanzas(packages: Path) -> list[dict[str, str]]:
    return [mirror._fields(block) for block in packages.read_text().split("\n\n") if block.strip()]


def test_docker_repo_has_the_vendor_suite_layout_and_a_valid_inrelease(built, tmp_path):
    root, manifest = built
    dist = root / "docker/linux/debian/dists/trixie"
    keyring = _keyring(root, tmp_path, manifest["repos"]["docker"]["key"])
    subprocess.run(["gpgv", "--keyring", str(keyring), str(dist / "InRelease")], check=True, capture_output=True)
    subprocess.run(
        ["gpgv", "--keyring", str(keyring), str(dist / "Release.gpg"), str(dist / "Release")],
        check=True,
        capture_output=True,
    )
    release = (dist / "Release").read_text()
    assert "Suite: trixie" in release and "Components: stable" in release
    packages = dist / "stable/binary-amd64/Packages"
    digest = hashlib.sha256(packages.read_bytes()).hexdigest()
    assert f" {digest} " in release
    assert gzip.decompress((dist / "stable/binary-amd64/Packages.gz").read_bytes()) == packages.read_bytes()


def test_nvidia_repo_is_flat_and_signed(built, tmp_path):
    root, manifest = built
    base = root / "libnvidia-container/stable/deb/amd64"
    keyring = _keyring(root, tmp_path, "libnvidia-container/gpgkey")
    subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "InRelease")], check=True, capture_output=True)
    for stanza in _stanzas(base / "Packages"):
        assert stanza["Filename"].startswith("./")
        assert (base / stanza["Filename"]).is_file()
    assert manifest["repos"]["libnvidia-container"]["flat"] is True


def test_cuda_repo_is_flat_signed_and_named_like_nvidia_s(built, tmp_path):
    root, manifest = built
    repo = manifest["repos"]["cuda"]
    assert repo["path"] == "compute/cuda/repos/debian12/x86_64"
    assert repo["key"] == "compute/cuda/repos/debian12/x86_64/3bf863cc.pub"
    base = root / repo["path"]
    keyring = _keyring(root, tmp_path, repo["key"])
    subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "InRelease")], check=True, capture_output=True)
    drivers = [s for s in _stanzas(base / "Packages") if s["Package"] == "cuda-drivers-550"]
    assert sorted(s["Depends"] for s in drivers) == [
        "nvidia-driver-cuda (= 550.127.08-1)",
        "nvidia-driver-cuda (= 550.163.01-1)",
    ]


def test_every_vendor_package_is_a_labelled_standin_in_two_versions(built):
    root, manifest = built
    versions: dict[str, set[str]] = {}
    for name, repo in manifest["repos"].items():
        for stanza in _stanzas(next((root / repo["path"]).rglob("Packages"))):
            assert mirror.STANDIN_LABEL in stanza["Description"], stanza["Package"]
            versions.setdefault(stanza["Package"], set()).add(stanza["Version"])
            deb = root / repo["path"] / stanza["Filename"]
            files = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True)
            paths = [line.split()[-1] for line in files.stdout.splitlines() if not line.endswith("/")]
            extra = (
                [f"./{mirror.FABRICMANAGER_UNIT[0]}"] if stanza["Package"].startswith("nvidia-fabricmanager") else []
            ) + ([f"./{mirror.LNET_UNIT[0]}"] if stanza["Package"] == "lustre-client-utils" else [])
            extra += [f"./{mirror.KUBELET_UNIT[0]}"] if stanza["Package"] == "kubelet" else []
            extra += [f"./{mirror.DCGM_UNIT[0]}"] if stanza["Package"] == "datacenter-gpu-manager" else []
            extra += (
                [f"./{mirror.IMEX_UNIT[0]}", f"./{mirror.IMEX_CONFIG[0]}"]
                if stanza["Package"] == "nvidia-imex-550"
                else []
            )
            assert sorted(paths) == sorted([f"./{mirror.STANDIN_MARKER_DIR}/{stanza['Package']}", *extra]), name
    assert versions["nvidia-container-toolkit"] == {"1.17.8-1", "1.17.9-1"}
    assert versions["docker-ce"] == {"5:28.5.1-1~debian.13~trixie", "5:28.5.2-1~debian.13~trixie"}
    assert versions["nvidia-driver-cuda"] == {"550.127.08-1", "550.163.01-1"}
    assert versions["nvidia-imex-550"] == {"550.127.08-1", "550.163.01-1"}
    assert versions["libcudnn9-dev-cuda-12"] == {"9.10.2.21-1", "9.11.0.98-1"}
    assert versions["cuda-toolkit-12-4"] == {"12.4.0-1", "12.4.1-1"}
    assert versions["cuda-toolkit-12-6"] == {"12.6.2-1", "12.6.3-1"}
    assert set(versions) == {
        "nvidia-driver-cuda",
        "nvidia-fabricmanager-550",
        "nvidia-imex-550",
        "cuda-drivers-550",
        "cuda-toolkit-12-4",
        "cuda-toolkit-12-6",
        "docker-ce",
        "docker-ce-cli",
        "containerd.io",
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container1",
        "libnvidia-container-tools",
        "libcudnn9-cuda-12",
        "libcudnn9-headers-cuda-12",
        "libcudnn9-dev-cuda-12",
        "datacenter-gpu-manager",
        "lustre-client-modules-dkms",
        "lustre-client-utils",
        "kubeadm",
        "kubelet",
        "kubectl",
        "doca-ofed",
        "mlnx-ofed-kernel-dkms",
        "mlnx-ofed-kernel-utils",
        "nvidia-fs",
        "nvidia-fs-dkms",
    }
    assert versions["nvidia-fs"] == versions["nvidia-fs-dkms"] == {"2.19.7-1", "2.20.5-1"}
    assert versions["lustre-client-utils"] == {"2.15.6-1", "2.15.7-1"}
    assert versions["kubeadm"] == {"1.33.5-1.1", "1.33.6-1.1"}
    assert versions["datacenter-gpu-manager"] == {"1:3.3.5", "1:3.3.6"}
    assert versions["doca-ofed"] == {"3.2.1-034000", "3.2.1-044000"}
    assert versions["mlnx-ofed-kernel-dkms"] == {"25.10.OFED.25.10.1.7.1.1", "25.10.OFED.25.10.1.7.2.1"}


def test_pool_file_names_drop_the_epoch():
    assert mirror.deb_filename("docker-ce", "5:28.5.1-1~debian.13~trixie", "amd64") == (
        "docker-ce_28.5.1-1~debian.13~trixie_amd64.deb"
    )


def test_a_real_deb_joins_a_repository_and_an_unknown_repository_is_refused(tmp_path):
    real = mirror.build_standin(mirror.StandIn(mirror.DOCKER, "extra-tool", "1.0-1"), "amd64", tmp_path)
    root = tmp_path / "root"
    manifest = mirror.build(root, arch="amd64", standins=[], extra_debs={mirror.DOCKER: [real]})
    assert [p["Package"] for p in manifest["repos"]["docker"]["packages"]] == ["extra-tool"]
    with pytest.raises(ValueError, match="unknown repository 'nvidia'"):
        mirror.build(tmp_path / "other", arch="amd64", extra_debs={"nvidia": [real]})


def test_the_fabric_manager_stand_in_carries_a_harmless_unit_of_nvidia_s_name(tmp_path):
    pkg = next(p for p in mirror.default_standins() if p.name == "nvidia-fabricmanager-550")
    deb = mirror.build_standin(pkg, "amd64", tmp_path)
    tree = tmp_path / "tree"
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tree)], check=True)
    unit = (tree / "usr/lib/systemd/system/nvidia-fabricmanager.service").read_text()
    assert mirror.STANDIN_LABEL in unit
    assert "ExecStart=/bin/sleep infinity" in unit
    others = ("nvidia-fabricmanager-550", "nvidia-imex-550")
    assert [p.files for p in mirror.default_standins() if p.files and p.name not in others] == [
        (mirror.DCGM_UNIT,),
        (mirror.DCGM_UNIT,),
        (mirror.LNET_UNIT,),
        (mirror.LNET_UNIT,),
        (mirror.KUBELET_UNIT,),
        (mirror.KUBELET_UNIT,),
    ]


def test_the_imex_stand_in_carries_a_harmless_unit_and_a_config_of_nvidia_s_names(tmp_path):
    pkg = next(p for p in mirror.default_standins() if p.name == "nvidia-imex-550")
    deb = mirror.build_standin(pkg, "amd64", tmp_path)
    tree = tmp_path / "tree"
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(tree)], check=True)
    unit = (tree / "usr/lib/systemd/system/nvidia-imex.service").read_text()
    assert mirror.STANDIN_LABEL in unit
    assert "ExecStart=/bin/sleep infinity" in unit
    config = (tree / "etc/nvidia-imex/config.cfg").read_text()
    assert config.startswith(f"# {mirror.STANDIN_LABEL}")
    assert "SERVER_PORT=50000\nIMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n" in config


def test_lustre_repo_is_flat_signed_and_laid_out_like_a_whamcloud_client_directory(built, tmp_path):
    root, manifest = built
    repo = manifest["repos"]["lustre"]
    assert repo["path"] == "lustre/lustre-2.15.x/debian12/client"
    assert repo["flat"] is True
    base = root / repo["path"]
    keyring = _keyring(root, tmp_path, repo["key"])
    subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "InRelease")], check=True, capture_output=True)
    found = sorted((s["Package"], s["Version"]) for s in _stanzas(base / "Packages"))
    assert found == [
        ("lustre-client-modules-dkms", "2.15.6-1"),
        ("lustre-client-modules-dkms", "2.15.7-1"),
        ("lustre-client-utils", "2.15.6-1"),
        ("lustre-client-utils", "2.15.7-1"),
    ]
    pkg = next(p for p in mirror.default_standins() if p.name == "lustre-client-utils")
    tree = tmp_path / "tree"
    subprocess.run(["dpkg-deb", "--extract", str(mirror.build_standin(pkg, "amd64", tmp_path)), str(tree)], check=True)
    unit = (tree / "usr/lib/systemd/system/lnet.service").read_text()
    assert mirror.STANDIN_LABEL in unit and "ExecStart=/bin/true" in unit


def test_doca_repo_is_flat_signed_and_laid_out_like_nvidia_s(built, tmp_path):
    """NVIDIA's <base>/<release>/<os>/<arch>/ flat directory, its key at the base as the DOCA-Host guide
    fetches it; the metapackage ties each build to its kernel packages' exact version."""
    root, manifest = built
    repo = manifest["repos"]["doca"]
    assert repo["path"] == "public/repo/doca/3.2.1/debian12/x86_64"
    assert repo["key"] == "public/repo/doca/GPG-KEY-Mellanox.pub"
    assert repo["flat"] is True
    base = root / repo["path"]
    keyring = _keyring(root, tmp_path, repo["key"])
    subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "InRelease")], check=True, capture_output=True)
    metapackages = sorted(
        (s["Version"], s["Depends"]) for s in _stanzas(base / "Packages") if s["Package"] == "doca-ofed"
    )
    assert metapackages == [
        (
            "3.2.1-034000",
            "mlnx-ofed-kernel-dkms (= 25.10.OFED.25.10.1.7.1.1), mlnx-ofed-kernel-utils (= 25.10.OFED.25.10.1.7.1.1)",
        ),
        (
            "3.2.1-044000",
            "mlnx-ofed-kernel-dkms (= 25.10.OFED.25.10.1.7.2.1), mlnx-ofed-kernel-utils (= 25.10.OFED.25.10.1.7.2.1)",
        ),
    ]
    arm = mirror.repos("trixie", "arm64")["doca"]
    assert arm.path == "public/repo/doca/3.2.1/debian12/arm64-sbsa"

"""The lab's signed package mirror: a local apt repository laid out like the vendors' repositories.

Role tests that install from a vendor repository (Docker's docker-ce, NVIDIA's
libnvidia-container) cannot reach it, so they install from this mirror instead. It is signed with
a throw-away GPG key made when it is built, so the roles' key handling (keyring under
/etc/apt/keyrings, fingerprint check, ``signed-by``) is exercised for real, and apt verifies
every index it reads.

Seven repositories, in the vendors' (and a site's) layouts:

- ``docker/linux/debian``: Docker's ``https://download.docker.com/linux/debian <suite> stable``
  (``dists/<suite>/stable/binary-<arch>/Packages``), key at ``docker/linux/debian/gpg``.
- ``libnvidia-container/stable/deb/<arch>``: NVIDIA's flat repository
  ``https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /``, key at
  ``libnvidia-container/gpgkey``.
- ``compute/cuda/repos/debian12/<x86_64|sbsa>``: NVIDIA's flat CUDA repository
  ``https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /``, key at
  ``compute/cuda/repos/debian12/x86_64/3bf863cc.pub`` (the driver packages', the CUDA toolkit
  metapackages', Fabric Manager's, IMEX's, cuDNN's and DCGM's stand-ins).
- ``lustre/lustre-2.15.x/debian12/client``: a Lustre client repository laid out like Whamcloud's
  per-release, per-OS client directories (``lustre-<version>/<os>/client/``), as a flat apt
  repository a site or DDN serves, key at ``lustre/lustre-2.15.x/debian12/client/lustre.asc``
  (the lustre_client role's stand-ins: lustre-client-modules-dkms and lustre-client-utils, the
  latter with a harmless lnet.service).
- ``kubernetes/core:/stable:/v1.33/deb``: the Kubernetes project's flat per-minor repository
  ``https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /``, key at ``.../deb/Release.key`` (the
  kubernetes role's stand-ins: kubeadm, kubelet with a harmless kubelet.service, kubectl).
- ``public/repo/doca/3.2.1/debian12/<x86_64|arm64-sbsa>``: NVIDIA's flat DOCA repository
  ``https://linux.mellanox.com/public/repo/doca/<release>/<os>/<arch>/ ./``, key at
  ``public/repo/doca/GPG-KEY-Mellanox.pub`` (the rdma role's DOCA-OFED stand-ins: the doca-ofed
  profile metapackage, mlnx-ofed-kernel-dkms and mlnx-ofed-kernel-utils; versions shaped like
  NVIDIA's, <DOCA release>-<build> and <OFED>.OFED.<OFED build>, two builds of the one release
  in the one directory, not NVIDIA's build numbers; the DKMS stand-in builds no module).
- ``slurm/debian``: a site's own Slurm repository (``<suite> main``), key at
  ``slurm/debian/slurm.asc``. It has no stand-ins: a test adds Debian's real Slurm .debs with
  ``--deb slurm=PATH`` (molecule/slurm_repo), as a site mirrors them.

The vendor packages are stand-ins: built here with dpkg-deb, named and versioned like the
vendor's, with "clusterforge test stand-in" in their Description, and installing nothing but a
marker file under /usr/share/clusterforge-standin/ (plus, for a few, the files a role test needs
from the vendor's package, such as the Fabric Manager stand-in's systemd unit, which runs
``/bin/sleep infinity``). Two versions of each vendor package are in the
mirror so that version pins and holds can be tested. Real .deb files (for example from
``apt-get download``) can be added to either repository with ``--deb``.

This file uses only the standard library plus ``dpkg-deb`` and ``gpg`` (both on every Debian
node), so a test copies it onto the node and runs it there::

    python3 mirror.py build --root /srv/mirror [--suite trixie] [--deb docker=/tmp/x.deb]
    python3 mirror.py serve --root /srv/mirror --port 8080

``build`` prints the manifest (also written to ``<root>/mirror.json``): the key's fingerprint
and, per repository, its path, key path and the packages in it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

STANDIN_MARKER_DIR = "usr/share/clusterforge-standin"
STANDIN_LABEL = "clusterforge test stand-in"
KEY_UID = "clusterforge lab mirror (throw-away test key) <lab-mirror@clusterforge.invalid>"

DOCKER = "docker"
NVIDIA = "libnvidia-container"
CUDA = "cuda"
LUSTRE = "lustre"
KUBERNETES = "kubernetes"
SLURM = "slurm"
DOCA = "doca"
# NVIDIA's CUDA repository names architectures its own way, and its DOCA repository another.
CUDA_ARCH = {"amd64": "x86_64", "arm64": "sbsa"}
DOCA_ARCH = {"amd64": "x86_64", "arm64": "arm64-sbsa"}


@dataclass(frozen=True)
class StandIn:
    repo: str
    name: str
    version: str
    depends: str = ""
    # Further files the stand-in installs, (path relative to /, content): what a role test needs
    # of the vendor's package besides its name and version (a systemd unit).
    files: tuple[tuple[str, str], ...] = ()


def _docker_standins(suite: str) -> list[StandIn]:
    out = []
    for engine in ("28.5.1", "28.5.2"):
        version = f"5:{engine}-1~debian.13~{suite}"
        out.append(StandIn(DOCKER, "docker-ce-cli", version))
        out.append(StandIn(DOCKER, "docker-ce", version, "docker-ce-cli, containerd.io (>= 1.7.27)"))
    out += [StandIn(DOCKER, "containerd.io", f"{v}-1~debian.13~{suite}") for v in ("1.7.28", "1.7.29")]
    return out


def _nvidia_standins() -> list[StandIn]:
    out = []
    for version in ("1.17.8-1", "1.17.9-1"):
        out += [
            StandIn(NVIDIA, "libnvidia-container1", version),
            StandIn(NVIDIA, "libnvidia-container-tools", version, f"libnvidia-container1 (>= {version})"),
            StandIn(NVIDIA, "nvidia-container-toolkit-base", version),
            StandIn(
                NVIDIA,
                "nvidia-container-toolkit",
                version,
                f"nvidia-container-toolkit-base (= {version}), libnvidia-container-tools (>= {version}),"
                " libnvidia-container-tools (<< 2.0.0)",
            ),
        ]
    return out


def _idle_unit(name: str, description: str) -> tuple[str, str]:
    """A stand-in's systemd unit under the vendor's unit name: it starts, stays up and runs nothing."""
    return (
        f"usr/lib/systemd/system/{name}.service",
        "[Unit]\n"
        f"Description={description} ({STANDIN_LABEL}, runs nothing)\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        "ExecStart=/bin/sleep infinity\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n",
    )


# The Fabric Manager stand-in's unit, under NVIDIA's unit name: the role enables it, and starts it
# only where NVSwitch devices are present. It runs nothing of NVIDIA's.
FABRICMANAGER_UNIT = _idle_unit("nvidia-fabricmanager", "NVIDIA fabric manager service")


# The IMEX stand-in (NVIDIA's nvidia-imex-<branch>): its unit under NVIDIA's name, which the nvidia_imex
# role enables and starts only where the driver is loaded, and a config.cfg with a few of the keys the
# IMEX guide documents at their documented defaults, which the role merges its settings into. It runs
# nothing of NVIDIA's.
IMEX_UNIT = _idle_unit("nvidia-imex", "NVIDIA IMEX service")
IMEX_CONFIG = (
    "etc/nvidia-imex/config.cfg",
    f"# {STANDIN_LABEL}: not NVIDIA's file, a few keys of the IMEX guide at their defaults\n"
    "DAEMONIZE=1\n"
    "BIND_INTERFACE_IP=\n"
    "SERVER_PORT=50000\n"
    "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n",
)


def _cuda_standins() -> list[StandIn]:
    out = []
    for version in ("550.127.08-1", "550.163.01-1"):
        out += [
            StandIn(CUDA, "nvidia-driver-cuda", version),
            StandIn(CUDA, "nvidia-fabricmanager-550", version, files=(FABRICMANAGER_UNIT,)),
            StandIn(CUDA, "nvidia-imex-550", version, files=(IMEX_UNIT, IMEX_CONFIG)),
            StandIn(CUDA, "cuda-drivers-550", version, f"nvidia-driver-cuda (= {version})"),
        ]
    return out


def _gds_standins() -> list[StandIn]:
    """GPUDirect Storage's kernel driver as NVIDIA's CUDA repository names it: nvidia-fs, which depends on
    its DKMS source nvidia-fs-dkms at the same version (the nvidia_peermem role's nvidia_peermem_gds path).
    No module is in them."""
    out = []
    for version in ("2.19.7-1", "2.20.5-1"):
        out += [
            StandIn(CUDA, "nvidia-fs-dkms", version),
            StandIn(CUDA, "nvidia-fs", version, f"nvidia-fs-dkms (= {version})"),
        ]
    return out


def _cudnn_standins() -> list[StandIn]:
    """cuDNN 9 for CUDA 12 as NVIDIA's CUDA repository names it (the cudnn role's repository path)."""
    out = []
    for version in ("9.10.2.21-1", "9.11.0.98-1"):
        out += [
            StandIn(CUDA, "libcudnn9-cuda-12", version),
            StandIn(CUDA, "libcudnn9-headers-cuda-12", version),
            StandIn(
                CUDA,
                "libcudnn9-dev-cuda-12",
                version,
                f"libcudnn9-cuda-12 (= {version}), libcudnn9-headers-cuda-12 (= {version})",
            ),
        ]
    return out


# DCGM's host engine unit, under the name NVIDIA's datacenter-gpu-manager package gives it (the real
# one runs nv-hostengine): the dcgm role starts it on GPU nodes only. It runs nothing of NVIDIA's.
DCGM_UNIT = _idle_unit("nvidia-dcgm", "NVIDIA DCGM service")


def _dcgm_standins() -> list[StandIn]:
    """DCGM 3 as NVIDIA's CUDA repository names and versions it (epoch 1: datacenter-gpu-manager=1:3.3.5)."""
    return [StandIn(CUDA, "datacenter-gpu-manager", version, files=(DCGM_UNIT,)) for version in ("1:3.3.5", "1:3.3.6")]


def _cuda_toolkit_standins() -> list[StandIn]:
    """The CUDA toolkit metapackages of two releases, two updates each, for side-by-side installs."""
    out = []
    for release, updates in (("12-4", ("12.4.0-1", "12.4.1-1")), ("12-6", ("12.6.2-1", "12.6.3-1"))):
        out += [StandIn(CUDA, f"cuda-toolkit-{release}", version) for version in updates]
    return out


# The lnet.service stand-in of the Lustre client utilities, under Lustre's unit name: the role
# enables and starts it; it runs nothing of Lustre's (the real one loads LNet and imports
# /etc/lnet.conf with lnetctl).
LNET_UNIT = (
    "usr/lib/systemd/system/lnet.service",
    "[Unit]\n"
    f"Description=lnet management ({STANDIN_LABEL}, runs nothing)\n"
    "\n"
    "[Service]\n"
    "Type=oneshot\n"
    "RemainAfterExit=yes\n"
    "ExecStart=/bin/true\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n",
)


def _lustre_standins() -> list[StandIn]:
    """The Lustre client's Debian packages, two versions each (the lustre_client role's repository path)."""
    out = []
    for version in ("2.15.6-1", "2.15.7-1"):
        out += [
            StandIn(LUSTRE, "lustre-client-modules-dkms", version),
            StandIn(LUSTRE, "lustre-client-utils", version, files=(LNET_UNIT,)),
        ]
    return out


# The kubelet stand-in's unit, under the Kubernetes packages' unit name: the kubernetes role enables
# it. It runs nothing of Kubernetes' (the real kubelet restarts in a loop until kubeadm configures it).
KUBELET_UNIT = _idle_unit("kubelet", "kubelet")


def _kubernetes_standins() -> list[StandIn]:
    """kubeadm, kubelet and kubectl as the Kubernetes project's pkgs.k8s.io v1.33 repository names
    and versions them (the kubernetes role's repository path). No Kubernetes binary is in them."""
    out = []
    for version in ("1.33.5-1.1", "1.33.6-1.1"):
        out += [
            StandIn(KUBERNETES, "kubelet", version, files=(KUBELET_UNIT,)),
            StandIn(KUBERNETES, "kubectl", version),
            StandIn(KUBERNETES, "kubeadm", version, "kubelet (>= 1.33.0), kubectl (>= 1.33.0)"),
        ]
    return out


def _doca_standins() -> list[StandIn]:
    """DOCA-OFED's profile metapackage and its kernel part, two builds each (the rdma role's doca path).
    The metapackage depends on its kernel packages' exact version, as the profile ties them."""
    out = []
    for doca, ofed in (("3.2.1-034000", "25.10.OFED.25.10.1.7.1.1"), ("3.2.1-044000", "25.10.OFED.25.10.1.7.2.1")):
        out += [
            StandIn(DOCA, "mlnx-ofed-kernel-dkms", ofed),
            StandIn(DOCA, "mlnx-ofed-kernel-utils", ofed),
            StandIn(DOCA, "doca-ofed", doca, f"mlnx-ofed-kernel-dkms (= {ofed}), mlnx-ofed-kernel-utils (= {ofed})"),
        ]
    return out


def default_standins(suite: str = "trixie") -> list[StandIn]:
    """Every stand-in package the mirror carries: two versions of each vendor package."""
    return (
        _docker_standins(suite)
        + _nvidia_standins()
        + _cuda_standins()
        + _cuda_toolkit_standins()
        + _gds_standins()
        + _cudnn_standins()
        + _dcgm_standins()
        + _lustre_standins()
        + _kubernetes_standins()
        + _doca_standins()
    )


@dataclass
class Repo:
    """One repository of the mirror: where it lives under the root and how apt reads it."""

    name: str
    path: str  # the repository's base URL path under the mirror root
    key_path: str  # where the vendor publishes its armored key, under the mirror root
    flat: bool
    suite: str = ""
    component: str = ""
    packages: list[dict[str, str]] = field(default_factory=list)

    def pool(self, root: Path) -> Path:
        return root / self.path / ("." if self.flat else f"pool/{self.component}")


def repos(suite: str, arch: str) -> dict[str, Repo]:
    return {
        DOCKER: Repo(DOCKER, "docker/linux/debian", "docker/linux/debian/gpg", False, suite, "stable"),
        NVIDIA: Repo(NVIDIA, f"libnvidia-container/stable/deb/{arch}", "libnvidia-container/gpgkey", True),
        CUDA: Repo(
            CUDA,
            f"compute/cuda/repos/debian12/{CUDA_ARCH.get(arch, arch)}",
            f"compute/cuda/repos/debian12/{CUDA_ARCH.get(arch, arch)}/3bf863cc.pub",
            True,
        ),
        LUSTRE: Repo(
            LUSTRE,
            "lustre/lustre-2.15.x/debian12/client",
            "lustre/lustre-2.15.x/debian12/client/lustre.asc",
            True,
        ),
        # pkgs.k8s.io's per-minor flat repository: https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /
        KUBERNETES: Repo(
            KUBERNETES,
            "kubernetes/core:/stable:/v1.33/deb",
            "kubernetes/core:/stable:/v1.33/deb/Release.key",
            True,
        ),
        # A site's own Slurm repository (Debian's layout, <suite> main): no stand-ins, it carries
        # the real .debs a test adds with --deb slurm=PATH (apt-get download of Debian's Slurm).
        SLURM: Repo(SLURM, "slurm/debian", "slurm/debian/slurm.asc", False, suite, "main"),
        # NVIDIA's flat DOCA repository, one per release, OS and architecture; the key sits at the base,
        # where NVIDIA's DOCA-Host guide fetches it. Debian 12's directory on the trixie lab node, as the
        # CUDA repository's.
        DOCA: Repo(
            DOCA,
            f"public/repo/doca/3.2.1/debian12/{DOCA_ARCH.get(arch, arch)}",
            "public/repo/doca/GPG-KEY-Mellanox.pub",
            True,
        ),
    }


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


def deb_filename(name: str, version: str, arch: str) -> str:
    """Debian's pool file name: the epoch is not part of it."""
    return f"{name}_{version.split(':', 1)[-1]}_{arch}.deb"


def build_standin(pkg: StandIn, arch: str, out_dir: Path) -> Path:
    """A .deb named and versioned like the vendor's that installs only a marker file."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        marker = tree / STANDIN_MARKER_DIR / pkg.name
        marker.parent.mkdir(parents=True)
        marker.write_text(
            f"{STANDIN_LABEL}: {pkg.name} {pkg.version}\n"
            "Not the vendor's software: it carries the vendor's name and version so that\n"
            "clusterforge's role tests can exercise repository, pin and hold handling offline.\n"
        )
        for path, content in pkg.files:
            extra = tree / path
            extra.parent.mkdir(parents=True, exist_ok=True)
            extra.write_text(content)
        control = {
            "Package": pkg.name,
            "Version": pkg.version,
            "Architecture": arch,
            "Maintainer": "clusterforge <lab-mirror@clusterforge.invalid>",
            "Section": "misc",
            "Priority": "optional",
        }
        if pkg.depends:
            control["Depends"] = pkg.depends
        lines = [f"{key}: {value}" for key, value in control.items()]
        lines += [
            f"Description: {STANDIN_LABEL} for {pkg.name} {pkg.version}",
            f" {STANDIN_LABEL}: installs only /{STANDIN_MARKER_DIR}/{pkg.name}"
            + "".join(f", /{path}" for path, _ in pkg.files)
            + ".",
        ]
        (tree / "DEBIAN").mkdir()
        (tree / "DEBIAN" / "control").write_text("\n".join(lines) + "\n")
        out = out_dir / deb_filename(pkg.name, pkg.version, arch)
        _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(out)])
    return out


def package_stanza(deb: Path, filename: str) -> str:
    """The deb's Packages entry: its control fields plus where it is and its checksums."""
    control = _run(["dpkg-deb", "--field", str(deb)]).stdout.rstrip("\n")
    data = deb.read_bytes()
    return (
        f"{control}\nFilename: {filename}\nSize: {len(data)}\n"
        f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"
    )


def write_packages(directory: Path, stanzas: list[str]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    text = "\n".join(stanzas).encode()
    plain = directory / "Packages"
    plain.write_bytes(text)
    packed = directory / "Packages.gz"
    packed.write_bytes(gzip.compress(text, mtime=0))
    return [plain, packed]


def release_text(fields: dict[str, str], base: Path, files: list[Path]) -> str:
    """A Release file: the fields, then size and checksums of each index relative to `base`."""
    lines = [f"{key}: {value}" for key, value in fields.items() if value]
    for algorithm, label in (("md5", "MD5Sum"), ("sha256", "SHA256")):
        lines.append(f"{label}:")
        for path in files:
            data = path.read_bytes()
            digest = hashlib.new(algorithm, data).hexdigest()
            lines.append(f" {digest} {len(data):>16} {path.relative_to(base).as_posix()}")
    return "\n".join(lines) + "\n"


def _gpg(gnupghome: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(["gpg", "--homedir", str(gnupghome), "--batch", "--no-tty", *args])


def generate_key(gnupghome: Path) -> str:
    """A new passphrase-less signing key in a fresh `gnupghome`; returns its fingerprint."""
    stop_agent(gnupghome)
    shutil.rmtree(gnupghome, ignore_errors=True)
    gnupghome.mkdir(parents=True)
    gnupghome.chmod(0o700)
    _gpg(
        gnupghome,
        "--passphrase",
        "",
        "--pinentry-mode",
        "loopback",
        "--quick-gen-key",
        KEY_UID,
        "ed25519",
        "sign",
        "30d",
    )
    colons = _gpg(gnupghome, "--with-colons", "--list-secret-keys", KEY_UID).stdout
    return next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))


def stop_agent(gnupghome: Path) -> None:
    """gpg starts an agent per home directory; leave none behind."""
    if gnupghome.is_dir():
        subprocess.run(
            ["gpgconf", "--homedir", str(gnupghome), "--kill", "gpg-agent"], check=False, capture_output=True
        )


def sign_release(gnupghome: Path, fingerprint: str, release: Path) -> None:
    """InRelease (clear-signed) and Release.gpg (detached), as apt reads either."""
    base = ["--yes", "--local-user", fingerprint, "--digest-algo", "SHA512"]
    _gpg(gnupghome, *base, "--clearsign", "--output", str(release.with_name("InRelease")), str(release))
    _gpg(gnupghome, *base, "--armor", "--detach-sign", "--output", str(release.with_name("Release.gpg")), str(release))


def build(
    root: Path,
    gnupghome: Path | None = None,
    suite: str = "trixie",
    arch: str | None = None,
    extra_debs: dict[str, list[Path]] | None = None,
    standins: list[StandIn] | None = None,
) -> dict:
    """Build (or rebuild) the whole mirror under `root`; returns the manifest."""
    arch = arch or _run(["dpkg", "--print-architecture"]).stdout.strip()
    gnupghome = gnupghome or root.parent / f"{root.name}-gnupg"
    root.mkdir(parents=True, exist_ok=True)
    layout = repos(suite, arch)
    for name in extra_debs or {}:
        if name not in layout:
            raise ValueError(f"unknown repository {name!r}: expected one of {', '.join(layout)}")
    fingerprint = generate_key(gnupghome)
    debs: dict[str, list[Path]] = {name: [] for name in layout}
    for repo in layout.values():
        shutil.rmtree(root / repo.path, ignore_errors=True)
        repo.pool(root).mkdir(parents=True, exist_ok=True)
    for pkg in default_standins(suite) if standins is None else standins:
        debs[pkg.repo].append(build_standin(pkg, arch, layout[pkg.repo].pool(root)))
    for name, paths in (extra_debs or {}).items():
        for path in paths:
            debs[name].append(Path(shutil.copy2(path, layout[name].pool(root))))

    armored = _gpg(gnupghome, "--armor", "--export", fingerprint).stdout
    date = formatdate(usegmt=True)
    for repo in layout.values():
        base = root / repo.path
        (root / repo.key_path).write_text(armored)
        stanzas = [package_stanza(deb, _pool_name(deb, base, repo.flat)) for deb in sorted(debs[repo.name])]
        repo.packages = [_fields(stanza) for stanza in stanzas]
        if repo.flat:
            indexes = write_packages(base, stanzas)
            fields = {"Origin": "clusterforge lab mirror", "Label": repo.name, "Date": date, "Architectures": arch}
            release = base / "Release"
            release.write_text(release_text(fields, base, indexes))
        else:
            dist = base / "dists" / repo.suite
            indexes = write_packages(dist / repo.component / f"binary-{arch}", stanzas)
            fields = {
                "Origin": "clusterforge lab mirror",
                "Label": repo.name,
                "Suite": repo.suite,
                "Codename": repo.suite,
                "Date": date,
                "Architectures": arch,
                "Components": repo.component,
            }
            release = dist / "Release"
            release.write_text(release_text(fields, dist, indexes))
        sign_release(gnupghome, fingerprint, release)

    manifest = {
        "fingerprint": fingerprint,
        "arch": arch,
        "suite": suite,
        "repos": {
            repo.name: {
                "path": repo.path,
                "key": repo.key_path,
                "flat": repo.flat,
                "suite": repo.suite,
                "component": repo.component,
                "packages": [{k: p[k] for k in ("Package", "Version", "Filename")} for p in repo.packages],
            }
            for repo in layout.values()
        },
    }
    stop_agent(gnupghome)
    (root / "mirror.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _pool_name(deb: Path, base: Path, flat: bool) -> str:
    relative = deb.relative_to(base).as_posix()
    return f"./{relative}" if flat else relative


def _fields(stanza: str) -> dict[str, str]:
    out = {}
    for line in stanza.splitlines():
        if line and not line.startswith(" ") and ":" in line:
            key, value = line.split(":", 1)
            out[key] = value.strip()
    return out


def serve(root: Path, port: int, bind: str) -> None:
    os.execvp(
        sys.executable, [sys.executable, "-m", "http.server", str(port), "--bind", bind, "--directory", str(root)]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build or serve the lab's signed apt mirror.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the mirror (a new throw-away key each time)")
    b.add_argument("--root", type=Path, required=True)
    b.add_argument("--gnupghome", type=Path, help="where the throw-away key lives (default: <root>-gnupg)")
    b.add_argument("--suite", default="trixie", help="Debian codename of Docker's suite (default trixie)")
    b.add_argument("--arch", help="package architecture (default: dpkg --print-architecture)")
    b.add_argument("--deb", action="append", default=[], metavar="REPO=PATH", help="add a real .deb to a repository")
    s = sub.add_parser("serve", help="serve the mirror over HTTP (python3 -m http.server)")
    s.add_argument("--root", type=Path, required=True)
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--bind", default="127.0.0.1")
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.root, args.port, args.bind)
        return 0
    extra: dict[str, list[Path]] = {}
    for spec in args.deb:
        name, _, path = spec.partition("=")
        extra.setdefault(name, []).append(Path(path))
    try:
        manifest = build(args.root, args.gnupghome, args.suite, args.arch, extra)
    except (ValueError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        print(f"mirror: {exc} {detail}".strip(), file=sys.stderr)
        return 1
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

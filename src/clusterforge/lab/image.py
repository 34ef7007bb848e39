"""Build the lab node image once: from the Dockerfile where a registry answers,
else with debootstrap from Debian's archive and `docker import`."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from clusterforge.errors import EnvironmentProblem, UsageError
from clusterforge.lab import debootstrap
from clusterforge.lab.spec import BUILDERS, NODE_COMMAND, image_tag

DEFAULT_MIRROR = "http://deb.debian.org/debian"
NETNS_UNIT = "clusterforge-lab-netns-sysctl.service"
SSH_HOST_KEYS_UNIT = "clusterforge-lab-ssh-host-keys.service"
# The image's own units and the target that wants each (their [Install] WantedBy=).
UNITS = {NETNS_UNIT: "sysinit.target", SSH_HOST_KEYS_UNIT: "multi-user.target"}
_CONTENT_LABEL = "org.clusterforge.lab.content"


def _image_files() -> Path:
    return Path(str(resources.files("clusterforge.lab") / "image"))


def packages() -> list[str]:
    lines = (_image_files() / "packages.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def content_digest(release: str) -> str:
    """Changes whenever anything that goes into the image changes, so a stale cache rebuilds."""
    digest = hashlib.sha256(release.encode())
    for path in sorted(_image_files().iterdir()):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_image(
    client: docker.DockerClient,
    release: str,
    builder: str = "auto",
    mirror: str | None = None,
    rebuild: bool = False,
    log=print,
    on_step: Callable[[debootstrap.Step], None] | None = None,
) -> str:
    """Return the tag of an up-to-date lab image for `release`, building it if needed.
    on_step: where debootstrap's steps go as it runs (default: its stages as lines to log)."""
    if builder not in BUILDERS:
        raise UsageError(f"unknown image builder {builder!r}: expected one of {', '.join(BUILDERS)}")
    tag = image_tag(release)
    wanted = content_digest(release)
    if not rebuild and _cached_digest(client, tag) == wanted:
        return tag
    if builder == "auto":
        builder = "dockerfile" if _base_image_available(client, release) else "debootstrap"
    log(f"building lab image {tag} with {builder} (once; later runs reuse it)")
    if builder == "dockerfile":
        _build_from_dockerfile(client, release, tag, wanted)
    else:
        _build_with_debootstrap(client, release, tag, wanted, mirror or _default_mirror(), log, on_step)
    return tag


def _default_mirror() -> str:
    return os.environ.get("CLUSTERFORGE_DEBIAN_MIRROR", DEFAULT_MIRROR)


def _cached_digest(client: docker.DockerClient, tag: str) -> str | None:
    try:
        image = client.images.get(tag)
    except ImageNotFound:
        return None
    return (image.labels or {}).get(_CONTENT_LABEL)


def _base_image_available(client: docker.DockerClient, release: str) -> bool:
    """True when debian:<release> is local or a registry hands it out."""
    try:
        client.images.get(f"debian:{release}")
        return True
    except ImageNotFound:
        pass
    try:
        client.images.pull("debian", tag=release)
        return True
    except DockerException:
        return False


def _build_from_dockerfile(client, release: str, tag: str, digest: str) -> None:
    try:
        client.images.build(
            path=str(_image_files()),
            tag=tag,
            buildargs={"DEBIAN_RELEASE": release},
            labels={_CONTENT_LABEL: digest},
            rm=True,
        )
    except (BuildError, APIError) as exc:
        raise EnvironmentProblem(f"building {tag} from the Dockerfile failed: {exc}") from None


def _build_with_debootstrap(client, release: str, tag: str, digest: str, mirror: str, log, on_step) -> None:
    if shutil.which("debootstrap") is None:
        raise EnvironmentProblem(
            "no registry answered and debootstrap is not installed: "
            "install it (`apt-get install debootstrap`) or make debian:"
            f"{release} available to Docker"
        )
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "no registry answered and the debootstrap fallback needs root: "
            f"run as root or make debian:{release} available to Docker"
        )
    with tempfile.TemporaryDirectory(prefix="clusterforge-rootfs-") as workdir:
        rootfs = Path(workdir) / "rootfs"
        command = [
            "debootstrap",
            # Its machine-readable steps on fd 3 (see clusterforge.lab.debootstrap), with totals.
            "--debian-installer",
            "--variant=minbase",
            f"--include={','.join(packages())}",
            release,
            str(rootfs),
            mirror,
        ]
        returncode, tail = run_debootstrap(command, on_step or debootstrap.StageLog(log))
        if returncode != 0:
            raise EnvironmentProblem(f"debootstrap of {release} from {mirror} failed (rc={returncode}):\n{tail}")
        _install_units(rootfs)
        _drop_ssh_host_keys(rootfs)
        _drop_apt_lists(rootfs)
        tarball = Path(workdir) / "rootfs.tar"
        log(f"packing {rootfs.name} and importing it as {tag}")
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        changes = [
            f'CMD ["{NODE_COMMAND}"]',
            "ENV container=docker",
            f'LABEL {_CONTENT_LABEL}="{digest}"',
        ]
        repository, _, image_version = tag.partition(":")
        client.api.import_image(src=str(tarball), repository=repository, tag=image_version, changes=changes)


def run_debootstrap(command: list[str], on_step: Callable[[debootstrap.Step], None]) -> tuple[int, str]:
    """Run debootstrap, handing each step to on_step as it comes; return its exit status and the
    last lines it wrote (for an error). Its fd 3 (the steps) and its log share one pipe."""
    wrapped = ["sh", "-c", 'exec "$@" 3>&1', "debootstrap", *command]
    reader = debootstrap.Reader()
    errors = []
    with subprocess.Popen(
        wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as process:
        for line in process.stdout:
            step = reader.feed(line)
            if step is not None:
                on_step(step)
                if step.kind == "E":
                    errors.append(f"E: {step.text}")
    return process.returncode, "\n".join([*reader.tail, *errors])


def _install_units(rootfs: Path) -> None:
    """What the Dockerfile's `systemctl enable` does, done on the unpacked tree."""
    units = rootfs / "etc" / "systemd" / "system"
    for unit, target in UNITS.items():
        shutil.copy(_image_files() / unit, units / unit)
        wants = units / f"{target}.wants"
        wants.mkdir(exist_ok=True)
        link = wants / unit
        if not link.is_symlink():
            link.symlink_to(f"/etc/systemd/system/{unit}")


def _drop_ssh_host_keys(rootfs: Path) -> None:
    """openssh-server's postinst made host keys in the image: every node would share them.
    Each node makes its own at first boot (SSH_HOST_KEYS_UNIT)."""
    for key in (rootfs / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()


def _drop_apt_lists(rootfs: Path) -> None:
    """apt lists are rebuilt by the roles; keep the image small. Ansible's apt module takes the
    lists directory's mtime as the last update (no update-success-stamp), so date it to the
    epoch: an image built minutes ago must not look freshly updated (cache_valid_time)."""
    lists = rootfs / "var" / "lib" / "apt" / "lists"
    for leftover in [
        *lists.glob("*_*"),
        *(rootfs / "var" / "cache" / "apt" / "archives").glob("*.deb"),
        rootfs / "var" / "lib" / "apt" / "periodic" / "update-success-stamp",
    ]:
        leftover.unlink(missing_ok=True)
    os.utime(lists, (0, 0))

"""Container jobs on the lab's real Slurm (Debian 13's Slurm 24.11): the slurm stage with
clusterforge_slurm_containers installs Enroot and builds Pyxis against the installed Slurm's headers,
and the real srun and slurmstepd load the plugin. Enroot and Pyxis are CLUSTERFORGE TEST STAND-INS
(src/clusterforge/lab/standins, the same build molecule/pyxis uses): NVIDIA's releases cannot be
fetched here. The stand-ins are built on head01 and put on every node, where the roles install them
from file:// URLs, checked against their sha256 as NVIDIA's would be.

A job of a user who is not root cannot start any task in the lab, with or without a container:
slurmstepd's task/affinity sets each task's CPU mask from the root-owned step daemon, which the
kernel allows on another user's process only with CAP_SYS_NICE, and the lab's containers do not have
it (their bounding set). The tests assert that reason; they do not skip (docs/lab.md)."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
import time

import pytest

from tests.integration.conftest import TEST_LAB, clusterforge
from tests.paths import PROJECT

pytestmark = pytest.mark.lab
STANDINS = PROJECT / "src" / "clusterforge" / "lab" / "standins"
ENROOT_VERSION, PYXIS_VERSION = "3.5.0", "0.20.0"
# Where build.sh writes the stand-ins on head01 and where every node finds them (file:// URLs).
ARTEFACTS = "/srv/clusterforge-standins"
PACKAGES = {
    "enroot": f"enroot/enroot_{ENROOT_VERSION}-1_amd64.deb",
    "enroot_caps": f"enroot/enroot+caps_{ENROOT_VERSION}-1_amd64.deb",
    "pyxis": f"pyxis/pyxis-{PYXIS_VERSION}.tar.gz",
}
# The image, imported once onto the lab's shared file system, so both compute nodes see it.
IMAGE = "/shared/clusterforge-pyxis-test/busybox.sqsh"
IMAGE_MARKER = "clusterforge-standin-image"  # /etc/clusterforge-image inside the image (build.sh)
USER, UID = "cfpyxis", "2901"
COMPUTE = ("node01", "node02")
# Bit 23 of a capability set: CAP_SYS_NICE (linux/capability.h).
CAP_SYS_NICE = 23
AFFINITY_REFUSED = "error: task_g_set_affinity: Operation not permitted"
# What the roles put in place, removed afterwards so the lab tests after this one find the lab's
# Slurm as the plain slurm stage leaves it (the slurm role writes no plugstack.conf).
INSTALLED = [
    "/etc/slurm/plugstack.conf",
    "/etc/slurm/plugstack.conf.d",
    "/usr/local/lib/slurm/spank_pyxis.so",
    "/usr/local/src/pyxis",
    ARTEFACTS,
]


def _exec(container, *argv: str, check: bool = True, user: str = "") -> tuple[int, str]:
    done = container.exec_run(list(argv), user=user, workdir="/")
    output = done.output.decode(errors="replace")
    assert not check or done.exit_code == 0, f"{argv} on {container.name} -> rc {done.exit_code}\n{output}"
    return done.exit_code, output


def _tar_directory(source) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(source, arcname=".")
    return buffer.getvalue()


def _until_idle(head, timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    while True:
        _, states = _exec(head, "sinfo", "--noheader", "--Node", "--format=%T")
        if set(states.split()) == {"idle"} or time.monotonic() > deadline:
            return states
        time.sleep(2)


def _restore(nodes) -> None:
    _exec(nodes["head01"], "scancel", f"--user={USER}", check=False)
    for node in nodes.values():
        _exec(node, "apt-mark", "unhold", "enroot", "enroot+caps", check=False)
        _exec(node, "dpkg", "--purge", "enroot+caps", "enroot", check=False)
        _exec(node, "rm", "-rf", *INSTALLED, check=False)
        _exec(node, "userdel", "--remove", USER, check=False)
    _exec(nodes["head01"], "rm", "-rf", IMAGE.rsplit("/", 1)[0], check=False)
    _exec(nodes["head01"], "scontrol", "reconfigure", check=False)


@pytest.fixture(scope="module")
def nodes(lab, docker_client):
    """The lab after the slurm stage with container jobs on (the stand-ins' URLs and sha256), the
    image imported, and a user who is not root on every node; put back as it was afterwards."""
    nodes = {name: docker_client.containers.get(f"clusterforge-{TEST_LAB}-{name}") for name in ("head01", *COMPUTE)}
    head = nodes["head01"]
    try:
        _exec(head, "mkdir", "-p", "/opt/clusterforge-standin")
        assert head.put_archive("/opt/clusterforge-standin", _tar_directory(STANDINS))
        # A lab of its own (this file alone) has no package lists yet.
        _exec(head, "apt-get", "update", "-q")
        _exec(head, "apt-get", "install", "-y", "-q", "busybox-static")
        _exec(head, "bash", "/opt/clusterforge-standin/build.sh", ENROOT_VERSION, PYXIS_VERSION, ARTEFACTS)
        _exec(head, "rm", "-rf", "/opt/clusterforge-standin")
        bits, _ = head.get_archive(ARTEFACTS)
        archive = b"".join(bits)
        for name in COMPUTE:
            assert nodes[name].put_archive("/srv", archive)
        extra = []
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for variable, path in PACKAGES.items():
                data = tar.extractfile(f"clusterforge-standins/{path}").read()
                extra += ["-e", f"{variable}_url=file://{ARTEFACTS}/{path}"]
                extra += ["-e", f"{variable}_sha256={hashlib.sha256(data).hexdigest()}"]
        clusterforge(
            "run", "slurm", "-i", str(lab["inventory"]), "-e", "clusterforge_slurm_containers=true", *extra,
            env=lab["env"],
        )  # fmt: skip
        for node in nodes.values():
            _exec(node, "useradd", "--uid", UID, "--create-home", "--shell", "/bin/bash", USER)
        node01 = nodes["node01"]
        _exec(node01, "mkdir", "-p", IMAGE.rsplit("/", 1)[0])
        _exec(node01, "enroot", "import", "-o", IMAGE, f"{ARTEFACTS}/images/busybox-rootfs.tar")
        _exec(node01, "chmod", "0644", IMAGE)
        assert set(_until_idle(head).split()) == {"idle"}
        yield nodes
    finally:
        _restore(nodes)


def test_srun_on_head01_lists_the_container_options_of_the_loaded_plugin(nodes):
    _, help_text = _exec(nodes["head01"], "srun", "--help")
    for option in ("--container-image", "--container-mounts", "--container-workdir", "--container-name"):
        assert option in help_text, option
    assert "[pyxis, clusterforge test stand-in]" in help_text


def test_plugstack_includes_pyxis_conf_on_every_node(nodes):
    for name, node in nodes.items():
        _, line = _exec(node, "grep", "-v", "^#", "/etc/slurm/plugstack.conf.d/pyxis.conf")
        assert line.split()[:2] == ["required", "/usr/local/lib/slurm/spank_pyxis.so"], name


def test_a_root_job_on_both_compute_nodes_runs_in_the_imported_image(nodes):
    """The plugin in each node's slurmstepd starts the task through the Enroot stand-in: the task
    sees the image's own /etc/clusterforge-image, which no node has, remapped to root."""
    for node in nodes.values():
        assert _exec(node, "test", "-e", "/etc/clusterforge-image", check=False)[0] != 0
    _, output = _exec(
        nodes["head01"], "srun", "--nodes=2", "--ntasks-per-node=1", "--time=2", f"--container-image={IMAGE}",
        "sh", "-c", "echo $(cat /etc/clusterforge-image) $(id -u) $SLURMD_NODENAME",
    )  # fmt: skip
    lines = sorted(line for line in output.splitlines() if not line.startswith("srun: job "))
    assert lines == [f"{IMAGE_MARKER} 0 node01", f"{IMAGE_MARKER} 0 node02"], output


def test_the_lab_nodes_lack_cap_sys_nice(nodes):
    """The reason the next test's jobs fail: no CAP_SYS_NICE in the bounding set of the node (systemd,
    slurmd and slurmstepd inherit it), so root may set the CPU affinity of its own processes only."""
    node = nodes["node01"]
    _, status = _exec(node, "grep", "^CapBnd:", "/proc/1/status")
    assert not int(status.split()[1], 16) >> CAP_SYS_NICE & 1, status
    # The user's own sleep (runuser, its parent, stays root's), waited for: runuser opens a PAM
    # session first, which can take seconds on a loaded machine.
    script = (
        f"runuser -u {USER} -- sleep 60 & "
        f"for i in $(seq 60); do p=$(pgrep -n -u {UID} -x sleep) && break; sleep 1; done; "
        'taskset -p -c 0 "$p"; echo rc=$?; kill "$p"'
    )
    _, output = _exec(node, "bash", "-c", script)
    # stdout and stderr come back merged: taskset's "taskset: " prefix (stderr) may land before its
    # stdout line, so the message is matched without it.
    assert re.search(r"failed to set pid \d+'s affinity: Operation not permitted", output), output
    assert "rc=1" in output.split(), output
    _, own = _exec(node, "bash", "-c", "sleep 20 & taskset -p -c 0 $!; echo rc=$?; kill $!")
    assert "rc=0" in own.split(), own


def test_a_job_of_a_user_who_is_not_root_fails_at_task_affinity_in_the_lab(nodes):
    """With or without a container image, slurmstepd (root, no CAP_SYS_NICE) cannot set the CPU mask
    of the user's task: the task never starts, the plugin is not reached. Not a defect of the slurm
    role's TaskPlugin: on a host with CAP_SYS_NICE (any real node) task/affinity binds the task."""
    head = nodes["head01"]
    for image in ([], [f"--container-image={IMAGE}"]):
        rc, output = _exec(
            head, "srun", "--nodes=2", "--ntasks-per-node=1", "--time=2", *image, "cat", "/etc/clusterforge-image",
            check=False, user=USER,
        )  # fmt: skip
        assert rc != 0, output
        assert f"slurmstepd-node01: {AFFINITY_REFUSED}" in output or f"slurmstepd-node02: {AFFINITY_REFUSED}" in output
        assert "launch failed: Slurmd could not execve job" in output, output
        assert IMAGE_MARKER not in output, output
        _until_idle(head)


def test_the_user_who_is_not_root_runs_the_image_through_enroot_on_the_node(nodes):
    """Outside slurmstepd, the container part works for that user: the Enroot stand-in makes an
    unprivileged user namespace (the lab allows them) and runs the image as the user's own uid."""
    node = nodes["node01"]
    _exec(node, "enroot", "create", "--name", "cfpyxis-test", IMAGE, user=USER)
    try:
        command = "echo $(cat /etc/clusterforge-image) $(id -u)"
        _, output = _exec(node, "enroot", "start", "cfpyxis-test", "sh", "-c", command, user=USER)
        assert output.split() == [IMAGE_MARKER, UID], output
    finally:
        _exec(node, "enroot", "remove", "--force", "cfpyxis-test", check=False, user=USER)

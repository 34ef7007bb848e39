"""Enroot and Pyxis on the real Slurm of the lab node (molecule/pyxis/molecule.yml). Both are
CLUSTERFORGE TEST STAND-INS (src/clusterforge/lab/standins/enroot and pyxis), not NVIDIA's: the
packages and the plugin are installed and built by the roles as NVIDIA's would be; srun and slurmd
are Debian's real Slurm 24.11; the containers are real user and mount namespaces."""

from __future__ import annotations

import re
import shlex

import pytest

IMAGE_TARBALL = "/srv/files/images/busybox-rootfs.tar"  # prepare.yml: standins/build.sh
IMAGE_MARKER = "clusterforge-standin-image"  # /etc/clusterforge-image inside the image
SHARED_MARKER = "mounted-from-the-node"  # /srv/shared/marker on the node
USERNS_PROBE = "unshare --user --map-root-user --mount true"
CAP_SYS_NICE = 23  # its bit in a capability set (linux/capability.h)


@pytest.fixture(scope="module")
def image(host):
    """The test image, imported from the local tarball by the stand-in's `enroot import` (mksquashfs
    with the configured ENROOT_SQUASH_OPTIONS), readable by every user."""
    path = "/srv/images/busybox.sqsh"
    host.run(f"rm -f {path}")
    host.check_output(f"enroot import -o {path} {IMAGE_TARBALL}")
    host.check_output(f"chmod 0644 {path}")
    return path


@pytest.fixture
def idle(host, until):
    state = until(lambda: host.check_output("sinfo --noheader --Node --format=%T").strip(), lambda s: s == "idle")
    assert state == "idle"


def srun(host, user: str, args: str):
    command = f"srun --nodes=1 --ntasks=1 {args}"
    return host.run(command if user == "root" else f"runuser -u {user} -- {command}")


def test_the_enroot_standin_packages_are_installed_at_the_pinned_version_and_held(host):
    for name in ("enroot", "enroot+caps"):
        package = host.package(name)
        assert package.is_installed and package.version == "3.5.0-1", name
        assert "clusterforge test stand-in" in host.check_output(
            f"dpkg-query -W -f='${{Description}}' {shlex.quote(name)}"
        )
    assert set(host.check_output("apt-mark showhold").split()) >= {"enroot", "enroot+caps"}


def test_enroot_conf_puts_per_user_paths_off_the_missing_nvme_tier_and_the_scenario_squash_options(host, inputs):
    conf = dict(
        line.split(None, 1)
        for line in host.file("/etc/enroot/enroot.conf").content_string.splitlines()
        if line[:1].isalpha()
    )
    assert conf["ENROOT_RUNTIME_PATH"] == "/run/enroot/user-$(id -u)"
    # No NVMe tier is mounted in the lab: the node's disk.
    assert conf["ENROOT_DATA_PATH"] == "/var/lib/enroot/data/user-$(id -u)"
    assert conf["ENROOT_CACHE_PATH"] == "/var/lib/enroot/cache/group-$(id -g)"
    assert conf["ENROOT_SQUASH_OPTIONS"] == inputs["enroot_squash_options"]
    for path in ("/run/enroot", "/var/lib/enroot/data", "/var/lib/enroot/cache"):
        assert host.file(path).mode == 0o1777, path


def test_the_registry_credentials_are_0600_and_hold_the_scenario_entry(host, inputs):
    credentials = host.file("/etc/enroot/.credentials")
    assert credentials.mode == 0o600 and credentials.user == "root"
    (entry,) = inputs["enroot_credentials"]
    assert credentials.content_string.split() == [
        "machine",
        entry["machine"],
        "login",
        entry["login"],
        "password",
        entry["password"],
    ]


def test_the_gpu_hook_is_linked_on_a_gpu_group_node_and_the_mellanox_hook_is_not(host):
    gpu = host.file("/etc/enroot/hooks.d/98-nvidia.sh")
    assert gpu.is_symlink and gpu.linked_to == "/usr/share/enroot/hooks.d/98-nvidia.sh"
    assert not host.file("/etc/enroot/hooks.d/99-mellanox.sh").exists


def test_the_image_is_squashed_with_the_scenario_squash_options(host, image, inputs):
    compression = inputs["enroot_squash_options"].split()[1]  # "-comp xz ..."
    assert f"Compression {compression}" in host.check_output(f"unsquashfs -s {image}")


def test_the_pyxis_standin_is_built_against_the_installed_slurm_headers(host):
    slurmd = host.package("slurmd").version
    assert host.package("libslurm-dev").version == slurmd
    stamp = host.file("/usr/local/src/pyxis/0.20.0/clusterforge-build.env").content_string
    assert f"SLURM_VERSION={slurmd}" in stamp
    assert host.file("/usr/local/lib/slurm/spank_pyxis.so").exists
    assert "slurm_spank_task_init" in host.check_output("nm -D /usr/local/lib/slurm/spank_pyxis.so")


def test_plugstack_includes_pyxis_conf_with_the_scenario_options(host, inputs):
    assert (
        "include /etc/slurm/plugstack.conf.d/*.conf"
        in host.file("/etc/slurm/plugstack.conf").content_string.splitlines()
    )
    (line,) = [
        line
        for line in host.file("/etc/slurm/plugstack.conf.d/pyxis.conf").content_string.splitlines()
        if line[:1] != "#"
    ]
    assert line.split() == [
        "required", "/usr/local/lib/slurm/spank_pyxis.so", f"runtime_path={inputs['pyxis_runtime_path']}",
        "container_scope=job", "remap_root=1", "execute_entrypoint=0", "sbatch_support=1",
    ]  # fmt: skip


def test_srun_help_lists_the_container_options_of_the_loaded_pyxis_standin(host):
    help_text = host.check_output("srun --help")
    for option in ("--container-image", "--container-mounts", "--container-workdir", "--container-name"):
        assert option in help_text, option
    assert "[pyxis, clusterforge test stand-in]" in help_text


def test_srun_container_image_runs_the_task_inside_the_image_through_the_enroot_standin(host, idle, image):
    """Where the node lets root make a user namespace (the probe), the task runs in the image, sees
    the node's directory through --container-mounts and starts in --container-workdir; where it does
    not, srun fails with the stand-in's message naming the missing privilege."""
    result = srun(
        host, "root",
        f"--container-image={image} --container-mounts=/srv/shared:/mnt/shared:ro --container-workdir=/mnt/shared "
        "sh -c 'cat /etc/clusterforge-image marker; pwd; id -u'",
    )  # fmt: skip
    if host.run(USERNS_PROBE).rc == 0:
        assert result.rc == 0, result.stderr
        assert result.stdout.split() == [IMAGE_MARKER, SHARED_MARKER, "/mnt/shared", "0"]  # remap_root=1
        assert not host.file("/etc/clusterforge-image").exists  # the image's file, not the node's
    else:
        assert result.rc != 0
        assert "cannot start" in result.stderr and "user namespace" in result.stderr, result.stderr


def test_srun_container_image_as_a_user_who_is_not_root(host, idle, image):
    """Where the node has CAP_SYS_NICE the task runs in the image as that user, remapped to root.
    The lab's containers do not (Docker's default capabilities): slurmstepd (root) may not set the
    CPU mask of another user's task (task/affinity), so the task never starts, with or without an
    image, before the plugin runs (docs/lab.md). That reason is asserted, not skipped."""
    result = srun(host, "alice", f"--container-image={image} sh -c 'cat /etc/clusterforge-image; id -u'")
    bounding = int(host.check_output("awk '/^CapBnd:/ {print $2}' /proc/1/status"), 16)
    if not bounding >> CAP_SYS_NICE & 1:
        assert result.rc != 0
        assert "error: task_g_set_affinity: Operation not permitted" in result.stderr, result.stderr
    else:
        assert result.rc == 0, result.stderr
        assert result.stdout.split() == [IMAGE_MARKER, "0"]


def test_a_user_who_is_not_root_runs_the_image_in_an_unprivileged_user_namespace(host, image):
    """The Enroot stand-in as alice, as Pyxis runs it: where the node lets a user who is not root make
    a user namespace, the container runs as alice (uid 1000) or, with --root, as root inside;
    where it does not, enroot start names the missing privilege."""

    def enroot(args: str):
        return host.run(f"cd / && runuser -u alice -- enroot {args}")

    enroot("remove --force alice-test")
    assert enroot(f"create --name alice-test {image}").rc == 0
    try:
        as_user = enroot("start --mount /srv/shared:/mnt/shared:ro alice-test sh -c 'cat /mnt/shared/marker; id -u'")
        as_root = enroot("start --root alice-test id -u")
        if host.run(f"runuser -u alice -- {USERNS_PROBE}").rc == 0:
            assert as_user.rc == 0, as_user.stderr
            assert as_user.stdout.split() == [SHARED_MARKER, host.check_output("id -u alice")]
            assert as_root.stdout.split() == ["0"], as_root.stderr
        else:
            for result in (as_user, as_root):
                assert result.rc != 0 and "user namespace" in result.stderr, result.stderr
    finally:
        enroot("remove --force alice-test")


def test_the_step_container_is_removed_when_the_step_ends(host, idle, image, until):
    """A step's own container is pyxis_<job>.<step>; named ones (pyxis_<job>_<name>) are kept for the
    job's next steps (the stand-in does not remove them when the job ends: see its README). The stand-in
    removes it in slurm_spank_exit, which slurmstepd runs after it has sent srun the tasks' exit: srun
    can return while the container is still there (seen on the lab node: `enroot list` right after
    srun showed pyxis_<job>.0 in 7 of 8 steps, and none 0.5 s later), so the test waits for the step's
    end."""
    result = srun(host, "root", f"--container-image={image} sh -c 'echo $SLURM_JOB_ID.$SLURM_STEP_ID'")
    assert result.rc == 0, result.stderr
    step_container = f"pyxis_{result.stdout.strip()}"
    left = until(lambda: host.check_output("enroot list").split(), lambda names: step_container not in names)
    assert step_container not in left
    assert not [n for n in left if re.fullmatch(r"pyxis_[0-9]+\.[0-9]+", n)]


def test_a_named_container_keeps_what_a_step_wrote_for_the_next_step_of_the_job(host, idle, image):
    script = (
        f"srun --container-image={image} --container-name=keep sh -c 'echo kept > /etc/step1' && "
        "srun --container-name=keep cat /etc/step1"
    )
    result = host.run(f"salloc --nodes=1 sh -c {shlex.quote(script)}")
    assert result.rc == 0, result.stderr
    assert result.stdout.split()[-1] == "kept"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--container-workdir=relative", "--container-workdir=relative: expected an absolute path"),
        ("--container-mounts=/srv/shared", "--container-mounts=/srv/shared: expected SRC:DST"),
        ("--container-image=/srv/images/busybox.tar", "a path must name a squashfs file"),
    ],
)
def test_srun_refuses_a_malformed_container_option_naming_it(host, idle, image, option, message):
    result = srun(host, "root", f"--container-image={image} {option} true")
    assert result.rc != 0
    assert message in result.stderr


def test_no_slurm_daemon_was_restarted_after_pyxis_was_configured(host):
    """systemd started slurmd and slurmctld before pyxis.conf was written and never restarted them:
    the role applies it with `scontrol reconfigure` (in Slurm 24.11 the daemon hands over to a new
    process of the same unit, running jobs carry on). verify.yml shows a job surviving it."""
    written = int(host.check_output("stat -c %Y /etc/slurm/plugstack.conf.d/pyxis.conf"))
    for unit in ("slurmd", "slurmctld"):
        entered = host.check_output(f"systemctl show {unit} --property=ActiveEnterTimestamp --value")
        assert int(host.check_output(f"date -d '{entered}' +%s")) <= written, unit
        assert host.check_output(f"systemctl show {unit} --property=NRestarts --value") == "0", unit

"""Real Slurm across the containers (molecule/slurm/molecule.yml; the GPUs are FAKE device nodes made by
prepare.yml): one MUNGE key everywhere, the compute nodes idle and running jobs across both, the topology
from the topology file, the inputs' GPUs handed to steps, and the batch job in the accounting database."""

from __future__ import annotations

import re

import pytest

CONTROLLER = "slurm-ctl01"
COMPUTES = ["slurm-node01", "slurm-node02"]  # the platforms in the slurm_compute group


@pytest.fixture
def ctl(node):
    return node(CONTROLLER)[0]


@pytest.fixture
def cluster_idle(ctl, until):
    """The compute nodes idle (slurmd registers a few seconds after it starts)."""

    def nodes():
        return sorted(ctl.check_output("sinfo --noheader --Node --partition=batch --format='%N|%T'").splitlines())

    assert until(nodes, lambda seen: seen == [f"{name}|idle" for name in COMPUTES]) == [
        f"{name}|idle" for name in COMPUTES
    ]


def test_every_node_holds_the_same_munge_key_0400_owned_by_munge(node):
    keys = [node(name)[0].file("/etc/munge/munge.key") for name in [CONTROLLER, *COMPUTES]]
    assert len({key.sha256sum for key in keys}) == 1
    assert {key.mode for key in keys} == {0o400}
    assert {key.user for key in keys} == {"munge"}


def test_a_credential_made_on_a_compute_node_decodes_on_the_controller(node, ctl):
    credential = node(COMPUTES[1])[0].check_output("munge -n")
    assert ctl.run(f"echo '{credential}' | unmunge").rc == 0


def test_a_step_runs_on_both_compute_nodes(ctl, cluster_idle):
    assert sorted(ctl.check_output("srun --nodes=2 --time=1 hostname").splitlines()) == COMPUTES


def test_a_two_node_batch_job_completes_and_is_accounted(ctl, node, cluster_idle, until):
    job = ctl.check_output(
        "sbatch --parsable --nodes=2 --time=1 --output=/tmp/molecule-slurm-job-%j.out --wrap 'srun hostname | sort'"
    )
    state = until(
        lambda: ctl.check_output(f"scontrol show job {job} --oneliner"),
        lambda shown: "JobState=COMPLETED" in shown or "JobState=FAILED" in shown,
    )
    assert "JobState=COMPLETED" in state
    batch_host = re.search(r"BatchHost=(\S+)", state).group(1)
    assert node(batch_host)[0].file(f"/tmp/molecule-slurm-job-{job}.out").content_string.split() == COMPUTES
    accounted = until(
        lambda: ctl.check_output(
            f"sacct --noheader --parsable2 --allocations --jobs={job} --format=JobID,State,NNodes"
        ),
        lambda line: line == f"{job}|COMPLETED|2",
    )
    assert accounted == f"{job}|COMPLETED|2"


def test_the_topology_has_the_unit_with_slurm_nodes_under_top(ctl):
    topology = ctl.check_output("scontrol show topology")
    assert re.search(r"SwitchName=su1 .*Nodes=slurm-node\[01-02\]", topology)
    assert re.search(r"SwitchName=top .*Switches=su1", topology)
    assert "su2" not in topology  # su2 has no Slurm node yet


@pytest.mark.parametrize("gres", ["gpu:{model}:{count}", "gpu:{count}"])
def test_a_step_gets_the_node_s_gpus_typed_or_not(ctl, node, cluster_idle, gres):
    inputs = node(COMPUTES[0])[1]
    count = inputs["clusterforge_expected_gpus"]
    assert inputs["clusterforge_expected_gpu_model"] == "fake-gpu"
    request = gres.format(model="fake_gpu", count=count)  # the gres type Slurm knows the model by
    visible = ctl.check_output(f"srun --nodes=1 --time=1 --gres={request} printenv CUDA_VISIBLE_DEVICES")
    assert visible == ",".join(str(n) for n in range(count))


# --- accounts, users and QoS (roles/slurm_accounts; verify_accounts.yml changes and removes them) ---


def _sacctmgr(ctl, *args: str) -> list[list[str]]:
    return [
        line.split("|") for line in ctl.check_output("sacctmgr --noheader --parsable2 " + " ".join(args)).splitlines()
    ]


def _cluster(ctl) -> str:
    return re.search(r"(?m)^ClusterName\s*=\s*(\S+)", ctl.check_output("scontrol show config")).group(1)


def test_the_declared_qos_are_in_the_database_with_their_limits(ctl, node):
    inputs = node(CONTROLLER)[1]
    shown = {
        row[0]: row[1:] for row in _sacctmgr(ctl, "show qos format=Name,Priority,Preempt,PreemptMode,MaxTRESPerUser")
    }
    for qos in inputs["slurm_accounts_qos"]:
        priority, preempt, mode, per_user = shown[qos["name"]]
        assert int(priority) == qos["priority"]
        assert preempt.split(",") == qos.get("preempt", [""])
        assert mode == qos.get("preempt_mode", "cluster")
        assert per_user == ",".join(f"{k}={v}" for k, v in qos.get("max_tres_per_user", {}).items())


def test_the_declared_accounts_and_users_are_associations_of_the_cluster(ctl, node):
    inputs = node(CONTROLLER)[1]
    rows = _sacctmgr(
        ctl, f"show assoc where cluster={_cluster(ctl)} format=Account,User,ParentName,Share,GrpTRES,MaxTRES"
    )
    accounts = {account: rest for account, user, *rest in rows if user == ""}
    for account in inputs["slurm_accounts_accounts"]:
        parent, share, grp, max_per_job = accounts[account["name"]]
        assert parent == account.get("parent", "root")
        assert int(share) == account["fairshare"]
        assert grp == ",".join(f"{k}={v}" for k, v in account.get("grp_tres", {}).items())
        assert max_per_job == ",".join(f"{k}={v}" for k, v in account.get("max_tres_per_job", {}).items())
    users = sorted((user, account) for account, user, *_ in rows if user not in ("", "root"))
    declared = sorted(
        (user["name"], account) for user in inputs["slurm_accounts_users"] for account in user["accounts"]
    )
    assert users == declared
    defaults = dict(_sacctmgr(ctl, "show user format=User,DefaultAccount"))
    for user in inputs["slurm_accounts_users"]:
        assert defaults[user["name"]] == user["accounts"][0]


def test_slurm_conf_enforces_the_limits_and_preempts_by_qos(ctl):
    config = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition("=") for line in ctl.check_output("scontrol show config").splitlines())
    )
    assert config["AccountingStorageEnforce"] == "associations,limits,qos"
    assert "gres/gpu" in config["AccountingStorageTRES"].split(",")
    assert config["PreemptType"] == "preempt/qos"
    assert config["PreemptMode"] == "REQUEUE"
    assert config["PriorityType"] == "priority/multifactor"


# --- MPI with PMIx (the mpi role on slurm_compute, and the slurm role's MpiDefault) -------------------
# Debian 13's packages: OpenMPI 5.0.7 built against PMIx 5.0.7, the libpmix2t64 Slurm's plugin uses.
MPI_PACKAGES = ["openmpi-bin", "openmpi-common", "libopenmpi40", "libpmix2t64"]


@pytest.mark.parametrize("name", COMPUTES)
def test_openmpi_and_pmix_are_installed_and_held_on_each_compute_node(node, name):
    host = node(name)[0]
    for package in MPI_PACKAGES:
        assert host.package(package).is_installed, package
        assert host.package(package).version.startswith("5.0.7"), package
    assert set(MPI_PACKAGES) <= set(host.check_output("apt-mark showhold").split())
    # The scenario leaves the build packages out (mpi_development false).
    assert host.package("libopenmpi-dev").is_installed == node(name)[1]["mpi_development"]


def test_the_controller_gets_no_mpi(ctl):
    assert not ctl.package("openmpi-bin").is_installed


@pytest.mark.parametrize("name", [CONTROLLER, *COMPUTES])
def test_slurm_has_its_pmix_plugin_and_names_it_the_default(node, name):
    host = node(name)[0]
    # Shipped by slurm-wlm-basic-plugins (mpi_pmix.so -> mpi_pmix_v5.so), which loads libpmix at run time.
    plugin = host.file("/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so")
    assert plugin.exists
    assert "MpiDefault=pmix" in host.file("/etc/slurm/slurm.conf").content_string.splitlines()


def test_srun_lists_pmix_and_slurmctld_reports_it_as_the_default(ctl, cluster_idle):
    assert "pmix" in ctl.check_output("srun --mpi=list").split()
    assert re.search(r"^MpiDefault\s+= pmix$", ctl.check_output("scontrol show config"), flags=re.MULTILINE)

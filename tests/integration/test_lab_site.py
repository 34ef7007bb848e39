"""site.yml on a real lab: converges with no failure, and a re-run changes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import TEST_LAB, clusterforge
from tests.paths import PROJECT

pytestmark = pytest.mark.lab
BIN = Path(sys.executable).parent
WEBHOOK_TOKEN = "cf-test-secret-7f3a9c1e"
WEBHOOK = f"http://alerts.lab.clusterforge.test/hook/{WEBHOOK_TOKEN}"


def _summary(stdout: str) -> dict[str, int]:
    """The counts of the closing line: hosts, failed, unreachable, changed tasks."""
    pairs = re.findall(r"(hosts|failed|unreachable|changed tasks): (\d+)", stdout)
    return {key.split()[0]: int(value) for key, value in pairs}


def test_lab_status_lists_running_nodes_with_systemd(lab):
    done = clusterforge("lab", "status", "--name", TEST_LAB, env=lab["env"])
    assert "head01" in done.stdout and "node01" in done.stdout
    assert done.stdout.count("running") >= 4  # container state and systemd state per node


def test_every_node_mounts_the_lab_s_one_shared_volume(lab, docker_client):
    """/shared is one file system across the nodes: what head01 writes there, node02 reads."""
    head = docker_client.containers.get(f"clusterforge-{TEST_LAB}-head01")
    node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node02")
    marker = f"/shared/lab-site-test-{time.monotonic_ns()}"
    assert head.exec_run(["sh", "-c", f"echo from-head01 > {marker}"]).exit_code == 0
    try:
        assert node.exec_run(["cat", marker]).output.decode().strip() == "from-head01"
    finally:
        head.exec_run(["rm", "-f", marker])
    volume = docker_client.volumes.get(f"clusterforge-{TEST_LAB}-shared")
    assert volume.attrs["Labels"]["org.clusterforge.lab"] == TEST_LAB


def test_lab_inventory_comes_from_its_topology_file(lab, docker_client):
    done = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(lab["inventory"]), "--list"],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT,
    )
    inventory = json.loads(done.stdout)
    assert inventory["compute"]["hosts"] == ["node01", "node02"]
    node = inventory["_meta"]["hostvars"]["node01"]
    # SSH to the node's address on the lab network (host_vars next to the topology), as the lab's sudoer.
    container = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node01")
    network = container.attrs["NetworkSettings"]["Networks"][f"clusterforge-{TEST_LAB}"]
    assert node["ansible_connection"] == "ssh"
    assert node["ansible_host"] == network["IPAddress"]
    assert node["ansible_user"] == "clusterforge"
    assert node["clusterforge_monitoring_address"] == f"clusterforge-{TEST_LAB}-node01"


def _newest_run_messages(lab_state: Path) -> str:
    """Every msg the newest run's tasks returned, from its ansible-runner job events."""
    newest = max((lab_state / "runs").iterdir(), key=lambda path: path.stat().st_mtime)
    events = [json.loads(path.read_text()) for path in newest.glob("artifacts/*/job_events/*.json")]
    return "\n".join(str(e.get("event_data", {}).get("res", {}).get("msg", "")) for e in events)


def _newest_run_checks(lab_state: Path) -> list[tuple[str, str, str, str]]:
    """Every judged check of the newest run (host, check, status, message), from the results its
    node modules returned (loops included), in its ansible-runner job events."""
    newest = max((lab_state / "runs").iterdir(), key=lambda path: path.stat().st_mtime)
    found = []

    def walk(host: str, value) -> None:
        if isinstance(value, dict):
            if {"check", "status", "message"} <= set(value):
                found.append((host, value["check"], value["status"], value["message"]))
            for item in value.values():
                walk(host, item)
        elif isinstance(value, list):
            for item in value:
                walk(host, item)

    for path in newest.glob("artifacts/*/job_events/*.json"):
        event = json.loads(path.read_text())
        if event.get("event") == "runner_on_ok":
            walk(event["event_data"].get("host", ""), event["event_data"].get("res", {}))
    return found


def _prometheus_query(head, query: str) -> list[dict]:
    """The result of an instant query, asked of Prometheus's HTTP API on the head node."""
    script = (
        "import json, sys, urllib.parse, urllib.request; "
        "url = 'http://localhost:9090/api/v1/query?query=' + urllib.parse.quote(sys.argv[1]); "
        "print(json.dumps(json.load(urllib.request.urlopen(url, timeout=10))['data']['result']))"
    )
    done = head.exec_run(["python3", "-c", script, query])
    assert done.exit_code == 0, done.output.decode()
    return json.loads(done.output)


def _wait_for_series(head, query: str, count: int, timeout_s: float = 180) -> list[dict]:
    """The query's result once it has `count` series (scrapes run every 15 s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = _prometheus_query(head, query)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(3)


def test_site_converges_then_is_idempotent(lab, lab_state, docker_client, tmp_path):
    # Alertmanager's receivers hold secrets (a webhook's token here): no run output may show them.
    # Given in a vars file, as a site keeps them (in a vault), so the command line does not hold the token.
    receivers_file = tmp_path / "receivers.yml"
    receivers_file.write_text(
        json.dumps({"alertmanager_receivers": [{"name": "default", "webhook_configs": [{"url": WEBHOOK}]}]})
    )
    receivers = ["-e", f"@{receivers_file}"]
    first = clusterforge("run", "-i", str(lab["inventory"]), *receivers, env=lab["env"], check=False)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr
    assert _summary(first.stdout)["failed"] == 0
    # The gpu stage's small lab set: the real driver userspace and CUDA runtime, held, and no module
    # without a GPU.
    messages = _newest_run_messages(lab_state)
    assert "skipped: nvidia kernel module: no GPU hardware" in messages
    # The storage stage: the lab's containers have no NVMe drives and no Lustre to mount.
    assert "skipped: local NVMe hot tier: no NVMe data drives found" in messages
    assert "skipped: Lustre client: no lustre_client_mounts configured" in messages
    # The slurm stage (the default orchestrator): slurmctld on head01, slurmd on both compute nodes.
    assert "skipped: Slurm cgroup constraints (cores, memory, devices)" in messages
    head = docker_client.containers.get(f"clusterforge-{TEST_LAB}-head01")
    sinfo = _wait_for_output(head, ["sinfo", "--noheader", "--Node", "--format=%N %T"], "node01 idle\nnode02 idle")
    assert sinfo == "node01 idle\nnode02 idle", sinfo
    srun = head.exec_run(["srun", "--nodes=2", "--time=1", "hostname"])
    assert srun.exit_code == 0, srun.output.decode(errors="replace")
    assert sorted(srun.output.decode().split()) == ["node01", "node02"]
    # The monitoring stage: no GPU, so no dcgm-exporter on the compute node.
    assert "skipped: dcgm-exporter: no GPU hardware (/proc/driver/nvidia/gpus lists no GPU)" in messages
    # The fabric stage on the model's InfiniBand fabric: what each role did and why it skipped the rest.
    for said in FABRIC_SKIPS:
        assert said in messages, said
    # The validate stage's InfiniBand checks against the model's port (mlx5_0 at 100 Gb/s): each ran on
    # every node and said "skipped: no hardware", none passed or failed; the cabling check likewise
    # on head01, the first host on the fabric. No GPU: no GPUDirect run.
    checks = _newest_run_checks(lab_state)
    fabric_checks = {
        (host, check): (status, message)
        for host, check, status, message in checks
        if check.startswith(("ib.", "cabling."))
    }
    assert fabric_checks == {
        **{(host, "ib.present"): ("skipped", "skipped: no hardware") for host in ("head01", "node01", "node02")},
        **{
            (host, "ib.write_bw.mlx5_0"): ("skipped", "skipped: no hardware") for host in ("head01", "node01", "node02")
        },
        ("head01", "cabling.links"): ("skipped", "skipped: no hardware"),
    }, fabric_checks

    second = clusterforge("run", "-i", str(lab["inventory"]), *receivers, env=lab["env"], check=False)
    assert second.returncode == 0, second.stdout[-4000:]
    assert _summary(second.stdout) == {"hosts": 3, "failed": 0, "unreachable": 0, "changed": 0}

    node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node01")
    live = node.exec_run(["sysctl", "-n", "net.ipv4.tcp_rmem"]).output.decode().split()
    assert live == ["4096", "87380", "2147483647"]
    held = node.exec_run(["apt-mark", "showhold"]).output.decode().split()
    assert {"nvidia-smi", "libcuda1", "libnvidia-ml1", "libcudart12"} <= set(held)
    # No unit left failed (nvidia-persistenced cannot start without a GPU; the role turns it off).
    failed = node.exec_run(["systemctl", "list-units", "--state=failed", "--no-legend", "--plain"]).output.decode()
    assert failed.strip() == "", failed

    _assert_fabric_stage_state(docker_client)

    # Prometheus on head01 scrapes the node exporter of every lab node, each target labelled with
    # the topology (the node label; the package's first start scraped localhost:9100 unlabelled).
    up = _wait_for_series(head, 'up{job="node",node=~".+"} == 1', 3)
    labels = {series["metric"]["node"]: series["metric"] for series in up}
    assert labels == {
        "head01": {
            "__name__": "up",
            "job": "node",
            "instance": f"clusterforge-{TEST_LAB}-head01:9100",
            "node": "head01",
            "role": "head",
            "node_type": "lab_node",
            "leaf": "ib_svc_leaf1",  # the model's InfiniBand leaf
        },
        **{
            node: {
                "__name__": "up",
                "job": "node",
                "instance": f"clusterforge-{TEST_LAB}-{node}:9100",
                "node": node,
                "role": "compute",
                "node_type": "lab_node",
                "leaf": "ib_svc_leaf1",
            }
            for node in ("node01", "node02")
        },
    }
    # The model's port is expected (the node exporter's clusterforge_expected_ib_rate_gbps) and no node
    # shows it: InfinibandPortDown's condition holds on every node, as it should for a missing port.
    missing = _wait_for_series(
        head,
        'clusterforge_expected_ib_rate_gbps{link_layer="infiniband"} unless on (node, device) node_infiniband_state_id',
        3,
    )
    assert sorted((series["metric"]["node"], series["metric"]["device"]) for series in missing) == [
        (node, "mlx5_0") for node in ("head01", "node01", "node02")
    ]

    # The validation's verdicts, written to each node's textfile directory, reach Prometheus: the lab
    # nodes have no GPU and no HCA device (the model's port is absent), so their checks are skipped
    # ("skipped: no hardware") and no host failed.
    verdicts = _wait_for_series(head, "clusterforge_validation_host_ok", 3)
    assert {(series["metric"]["node"], series["value"][1]) for series in verdicts} == {
        ("head01", "1"),
        ("node01", "1"),
        ("node02", "1"),
    }
    checks = _prometheus_query(head, 'clusterforge_validation_check_ok{node="node01"}')
    assert checks and {series["metric"]["status"] for series in checks} <= {"pass", "warn", "skipped"}

    # The receiver's token reached Alertmanager's configuration, and no output or artifact of either run.
    config = head.exec_run(["cat", "/etc/prometheus/alertmanager.yml"]).output.decode()
    assert WEBHOOK_TOKEN in config
    assert WEBHOOK_TOKEN not in first.stdout + first.stderr + second.stdout + second.stderr
    leaked = [
        str(p) for p in (lab_state / "runs").rglob("*") if p.is_file() and WEBHOOK_TOKEN.encode() in p.read_bytes()
    ]
    assert leaked == []


# The lab's topology cables every node to an InfiniBand fabric (one port, ib0, on mlx5_0) that the
# containers have no device for: the fabric stage installs and renders, and says why it does no more.
FABRIC_SKIPS = (
    # rdma: Debian's packages install, and no verbs device is there to use.
    "skipped: no hardware: no RDMA device (/sys/class/infiniband lists none)",
    # opensm: head01 is the subnet manager host; configured and enabled, not started without a port.
    "skipped: no hardware: opensm: no InfiniBand port (/sys/class/infiniband_mad/abi_version is absent): "
    "opensm.service is configured and enabled, not started",
    "skipped: opensm: not a subnet manager host of any InfiniBand fabric in the topology",
    # ipoib: each node's file is written for ib0, which is absent.
    *(f"skipped: no hardware: ipoib: ib0 is absent: 172.31.251.{address}/24 is written" for address in (10, 11, 12)),
    "skipped: nvidia-peermem: not a GPU node (not in the gpu group)",
    "skipped: roce_qos: no netdev on a RoCE fabric in the topology for node01",
)
# Each node's IPoIB address on the model's one rail: the subnet's offset (10) plus its place in the topology.
IPOIB_HOSTS = {"head01": 10, "node01": 11, "node02": 12}
RDMA_PACKAGES = ("rdma-core", "ibverbs-utils", "infiniband-diags", "perftest")


def _output(container, *argv: str) -> tuple[int, str]:
    done = container.exec_run(list(argv))
    return done.exit_code, done.output.decode(errors="replace")


def _assert_fabric_stage_state(docker_client) -> None:
    """What the fabric stage left on the nodes: the RDMA stack installed and held everywhere, OpenSM
    configured on head01 and not running, each node's IPoIB file, and eth0 (the lab's connection)
    untouched by networkd."""
    head = docker_client.containers.get(f"clusterforge-{TEST_LAB}-head01")
    for name in ("head01", "node01", "node02"):
        node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-{name}")
        status = _output(node, "dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n", *RDMA_PACKAGES)[1]
        assert sorted(status.split("\n")[:-1]) == sorted(f"{p} installed" for p in RDMA_PACKAGES), (name, status)
        assert set(RDMA_PACKAGES) <= set(_output(node, "apt-mark", "showhold")[1].split()), name
        # The packages' tools run (perftest prints its version and exits 1); the kernel has no RDMA device.
        assert re.fullmatch(r"Version: \d+\.\d+", _output(node, "ib_write_bw", "--version")[1].strip())
        rc, listed = _output(node, "ibstat", "-l")
        assert rc == 0 and "mlx5" not in listed, listed
        rc, network = _output(node, "cat", "/etc/systemd/network/60-clusterforge-ipoib-ib0.network")
        assert rc == 0 and "Name=ib0" in network and f"Address=172.31.251.{IPOIB_HOSTS[name]}/24" in network, network
        # networkd runs for ib0 only: eth0, which carries the SSH connection, stays unmanaged, and
        # networkd's wait-online (enabled with it) is left off: it would fail waiting for ib0.
        assert _output(node, "systemctl", "is-enabled", "systemd-networkd-wait-online.service")[1].strip() == "disabled"
        assert _output(node, "networkctl", "list", "eth0", "--no-legend")[1].split()[4:5] == ["unmanaged"]
    config = _output(head, "cat", "/etc/opensm/opensm.conf")[1]
    assert {"sm_priority 15", "routing_engine ftree"} <= set(config.splitlines()), config
    assert not [line for line in config.splitlines() if line.startswith("guid ")]  # every port: no GUID
    assert 'PORTS="ALL"' in _output(head, "cat", "/etc/default/opensm")[1]
    assert "opensm" in _output(head, "apt-mark", "showhold")[1].split()
    assert _output(head, "systemctl", "is-enabled", "opensm.service")[1].strip() == "enabled"
    assert _output(head, "systemctl", "is-active", "opensm.service")[1].strip() == "inactive"
    # Only the subnet manager host gets OpenSM.
    node = docker_client.containers.get(f"clusterforge-{TEST_LAB}-node01")
    assert _output(node, "dpkg-query", "-W", "-f", "${db:Status-Status}", "opensm")[1] != "installed"


def _wait_for_output(container, command: list[str], expected: str, timeout: float = 180) -> str:
    """The command's output once it is `expected` (sorted lines), or the last one after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        output = "\n".join(sorted(container.exec_run(command).output.decode(errors="replace").split("\n"))).strip()
        if output == expected or time.monotonic() > deadline:
            return output
        time.sleep(2)


def test_check_mode_on_a_converged_lab_changes_nothing(lab):
    clusterforge("run", "base", "-i", str(lab["inventory"]), env=lab["env"])
    done = clusterforge("run", "base", "--check", "-i", str(lab["inventory"]), env=lab["env"])
    assert _summary(done.stdout)["changed"] == 0


def test_each_run_keeps_its_artifacts(lab, lab_state):
    clusterforge("run", "preflight", "-i", str(lab["inventory"]), env=lab["env"])
    newest = max((lab_state / "runs").iterdir(), key=lambda path: path.stat().st_mtime)
    statuses = [path.read_text() for path in (newest / "artifacts").glob("*/status")]
    assert statuses == ["successful"]

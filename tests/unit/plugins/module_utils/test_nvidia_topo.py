from __future__ import annotations

import pytest
from ansible.module_utils import gpu_judge, xid
from ansible.module_utils.nvidia_topo import TopoParseError, parse_topo_matrix

from .samples import load, names

TOPO = {
    "a10-4gpu-pcie-no-nvlink-sys.txt": {
        "gpus": 4,
        "nics": {"NIC0": "mlx5_0", "NIC1": "mlx5_1"},
        "nvlinks": 0,
        "cpu": "0-127",
        "numa": "0",
        "gpu0_nic0": "SYS",
    },
    "a100-8gpu-17nic-pxb-pix-bond.txt": {
        "gpus": 8,
        "nics": {f"NIC{i}": f"mlx5_{i + 2}" for i in range(16)} | {"NIC16": "mlx5_bond_0"},
        "nvlinks": 12,
        "cpu": "0-103",
        "numa": "0",
        "gpu0_nic0": "PXB",
    },
    "a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt": {
        "gpus": 8,
        "nics": {f"NIC{i}": f"mlx5_{i}" for i in range(10)},
        "nvlinks": 12,
        "cpu": "48-63,176-191",
        "numa": "3",
        "gpu0_nic0": "PXB",
    },
    "pcie-2x-gtx1080ti-phb-consumer.txt": {
        "gpus": 2,
        "nics": {},
        "nvlinks": 0,
        "cpu": "0-11",
        "numa": None,
        "gpu0_nic0": None,
    },
}


def test_table_covers_every_fixture():
    assert set(TOPO) == names("nvidia-smi_topo")


@pytest.mark.parametrize("name", sorted(TOPO))
def test_topo_matrix(name: str):
    want = TOPO[name]
    topo = parse_topo_matrix(load("nvidia-smi_topo", name))
    assert topo.gpus == tuple(f"GPU{i}" for i in range(want["gpus"]))
    assert topo.nic_names == want["nics"]
    assert set(topo.nics) == set(want["nics"])
    for gpu in topo.gpus:
        assert set(topo.nvlink_peers(gpu).values()) == {want["nvlinks"]}
        assert topo.matrix[gpu][gpu] == "X"
    assert topo.cpu_affinity["GPU0"] == want["cpu"]
    assert topo.numa_affinity["GPU0"] == want["numa"]
    if want["gpu0_nic0"]:
        assert topo.matrix["GPU0"]["NIC0"] == want["gpu0_nic0"]


def test_dgx_numa_layout():
    topo = parse_topo_matrix(load("nvidia-smi_topo", "a100-sxm-40g-8gpu-10nic-dgx-style-tabs.txt"))
    assert [topo.numa_affinity[g] for g in topo.gpus] == ["3", "3", "1", "1", "7", "7", "5", "5"]
    # Each GPU pair shares two NICs behind the same PCIe switch.
    assert [n for n in topo.nics if topo.matrix["GPU2"][n] == "PXB"] == ["NIC2", "NIC3"]


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no matrix header"),
        ("        GPU0    GPU1\nGPU0     X      NV4\n", "no row for GPU1"),
        ("        GPU0    GPU1\nGPU0     X      NV4\nGPU1    NV4     NV4\n", "not X on the diagonal"),
        ("        GPU0    GPU1\nGPU0     X      FOO\n", "does not match"),
    ],
)
def test_malformed_topo(text: str, match: str):
    with pytest.raises(TopoParseError, match=match):
        parse_topo_matrix(text)


# --- kernel log Xid ---------------------------------------------------------------------------------

XID = {
    "h100-xid79-fallen-off-bus-sxid20034-gpud.txt": {
        # The driver's own "GPU has fallen off the bus." line follows the Xid 79 line.
        "events": [("Xid", 79, "0000:91:00"), ("lost", None, "0000:91:00.0")] + [("SXid", 20034, None)] * 8,
        "fatal_sxid": 4,
        "first_stamp": "6781741.548779",
    },
    "xid13-xid109-dmesg-ctime-gpud.txt": {
        "events": [("Xid", 13, "0000:cb:00")] * 3 + [("Xid", 109, "0000:cb:00")],
        "fatal_sxid": 0,
        "first_stamp": "Fri Aug 30 11:43:09 2024",
    },
    # No Xid line in these three: the driver lost the GPU (or never started it) and said so in words.
    "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt": {
        "events": [("lost", None, "0000:b3:00.0")],  # one message over three lines
        "fatal_sxid": 0,
        "first_stamp": "1843.308145",
    },
    "gpu-at-has-fallen-off-the-bus-old-driver-bumblebee-554.txt": {
        "events": [("lost", None, "0000:01:00.0")] * 2,
        "fatal_sxid": 0,
        "first_stamp": "49.261458",
    },
    "two-gpus-rminitadapter-failed-ibm-cloud-gpu-operator-649.txt": {
        "events": [("lost", None, bus) for bus in ("0000:04:01.0", "0000:04:02.0", "0000:04:02.0", "0000:04:01.0")]
        + [("lost", None, "0000:04:01.0")],
        "fatal_sxid": 0,
        "first_stamp": "1097.650222",
    },
}


def test_xid_table_covers_every_fixture():
    assert set(XID) == names("kernel_log_xid")


@pytest.mark.parametrize("name", sorted(XID))
def test_kernel_log_xid(name: str):
    want = XID[name]
    events = xid.parse_kernel_log(load("kernel_log_xid", name))
    got = [(e.kind, e.code, e.pci if e.kind != "SXid" else None) for e in events]
    assert got == want["events"]
    assert sum(1 for e in events if e.kind == "SXid" and e.fatal) == want["fatal_sxid"]
    assert events[0].timestamp == want["first_stamp"]


@pytest.mark.parametrize(
    "line,code,pci",
    [
        # MIG instance inside the id; journalctl prefix instead of a [stamp]; no "PCI:" prefix.
        ("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel", 94, "0000:01:00"),
        (
            "Jan 15 03:00:00 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
            79,
            "0000:3b:00",
        ),
        ("[  12.3] NVRM: Xid (0000:03:00): 14, Channel 00000001", 14, "0000:03:00"),
    ],
)
def test_xid_line_shapes(line: str, code: int, pci: str):
    (event,) = xid.parse_kernel_log(line)
    assert (event.code, event.pci) == (code, pci)


# The verdict on each real log whose lost GPUs came without an Xid, and the GPUs its message names.
LOST = {
    "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt": "1 events: GPU 0000:b3:00.0 fell off the bus",
    "gpu-at-has-fallen-off-the-bus-old-driver-bumblebee-554.txt": "2 events: GPU 0000:01:00.0 fell off the bus",
    "two-gpus-rminitadapter-failed-ibm-cloud-gpu-operator-649.txt": (
        "5 events: GPU 0000:04:01.0 failed to initialise (RmInitAdapter), "
        "GPU 0000:04:02.0 failed to initialise (RmInitAdapter)"
    ),
}


@pytest.mark.parametrize("name", sorted(LOST))
def test_a_gpu_lost_without_an_xid_fails_naming_the_gpu(name: str):
    check = gpu_judge.judge_xid(xid.parse_kernel_log(load("kernel_log_xid", name)))
    assert (check.status, check.message) == ("fail", LOST[name])


def test_the_probe_message_needs_its_own_fallen_off_line():
    """The probe's first line alone names a GPU but says nothing about it: no event, and a
    "fallen off the bus" more than two lines later belongs to no GPU of the probe."""
    text = load("kernel_log_xid", "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt")
    first, second, third, *rest = text.splitlines()
    assert xid.parse_kernel_log(first) == ()
    assert xid.parse_kernel_log("\n".join([first, second, *rest[:2], third])) == ()


def test_the_probe_message_with_a_prefix_on_every_line():
    """Constructed from the real NVSentinel #155 lines: syslog and journalctl put the host prefix
    before each of the message's three lines instead of indenting the second and third."""
    text = load("kernel_log_xid", "l40-fallen-off-bus-multiline-no-xid-570-nvsentinel-155.txt")
    lines = [line.strip().split("] ", 1)[-1] for line in text.splitlines()]
    prefixed = "".join(f"Jan  3 07:39:45 gpu-1 kernel: {line}\n" for line in lines)
    (event,) = xid.parse_kernel_log(prefixed)
    assert (event.kind, event.pci, event.detail, event.line) == ("lost", "0000:b3:00.0", "fell off the bus", 1)


def test_log_without_xid_is_empty():
    assert (
        xid.parse_kernel_log("[    0.000000] Linux version 6.1.0\nNVRM: loading NVIDIA UNIX x86_64 Kernel Module\n")
        == ()
    )

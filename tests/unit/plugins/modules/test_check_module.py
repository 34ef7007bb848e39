"""The plumbing the check modules share: PCI probes, replay lookup, the result payload."""

from __future__ import annotations

from types import SimpleNamespace

from ansible.module_utils import check_module as plumbing
from ansible.module_utils.verdicts import result, skipped

from .conftest import GPU_PCI, HCA_PCI, PLAIN_PCI, pci_tree


def test_pci_probes(tmp_path):
    root = pci_tree(tmp_path / "pci", {**GPU_PCI, **HCA_PCI, **PLAIN_PCI, "0000:05:00.0": ("0x10de", "0x068000")})
    assert plumbing.nvidia_gpus_on_pci(str(root)) == sorted(GPU_PCI)  # the NVSwitch bridge is not a GPU
    assert plumbing.mellanox_hcas_on_pci(str(root)) == sorted(HCA_PCI)
    assert plumbing.nvidia_gpus_on_pci(str(tmp_path / "absent")) == []


def test_replay_lookup_order(tmp_path):
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "c.txt").write_text("c")
    (tmp_path / "tree").mkdir()
    tools = plumbing.Tools(
        None, {"x": ("a.txt", "b.txt"), "t": ("tree",)}, str(tmp_path), {"y": str(tmp_path / "c.txt")}
    )
    assert tools.replaying
    assert tools.recording("x") == str(tmp_path / "b.txt")
    assert tools.recording("y") == str(tmp_path / "c.txt")  # replay: {key: path} needs no replay_dir name
    assert tools.recording("z") is None
    assert tools.recorded_dir("t") == str(tmp_path / "tree")
    outcome = tools.run("x", ["prog", "--flag"])
    assert (outcome.rc, outcome.stdout, outcome.source) == (0, "b", str(tmp_path / "b.txt"))
    assert tools.run("z", ["prog"]) is None
    assert tools.notes == ["replay: no recording of 'z'"]


def test_live_run_resolves_the_program_first():
    calls = []
    module = SimpleNamespace(
        get_bin_path=lambda name, required=False, opt_dirs=None: "/opt/bin/tool" if name == "tool" else None,
        run_command=lambda argv: calls.append(argv) or (0, "out", ""),
    )
    tools = plumbing.Tools(module, {})
    assert not tools.replaying
    assert tools.run("tool", ["tool", "-v"]) == plumbing.Outcome(0, "out", "", ["/opt/bin/tool", "-v"], "live")
    assert tools.run("other", ["other"]) is None
    assert calls == [["/opt/bin/tool", "-v"]]


def test_live_runs_are_bounded_by_timeout_when_it_exists():
    calls = []
    module = SimpleNamespace(
        get_bin_path=lambda name, required=False, opt_dirs=None: f"/usr/bin/{name}",
        run_command=lambda argv: calls.append(argv) or (124, "", ""),
    )
    outcome = plumbing.Tools(module, {}, timeout=30).run("nvidia-smi -q", ["nvidia-smi", "-q"])
    assert calls == [["/usr/bin/timeout", "--kill-after=10", "30", "/usr/bin/nvidia-smi", "-q"]]
    assert outcome.rc == 124 and outcome.stderr.startswith("nvidia-smi timed out after 30 s")


def test_payload_and_failure_message():
    results = [result("a.one", "pass", 1, 1, "ok"), result("a.two", "fail", 0, 1, "broken"), skipped("a.three", "why")]
    body = plumbing.payload(results)
    assert body["status"] == "fail"
    assert body["counts"] == {"pass": 1, "warn": 0, "fail": 1, "skipped": 1}
    assert body["checks"][1] == {"check": "a.two", "status": "fail", "measured": 0, "expected": 1, "message": "broken"}
    assert plumbing.failure_message("m", results) == "m: 1 of 3 checks failed: a.two: broken"
    assert plumbing.payload([skipped("x", "no")])["status"] == "skipped"

"""The burn-in's modules: ib_counters over fake sysfs trees and real perfquery captures replayed,
training_burnin with a stand-in interpreter that plays ddp_smoke.py (the real job needs torch,
absent here). DCGM's step is dcgm_check (test_dcgm_check.py)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from tests.unit.plugins.module_utils.samples import load


def counters_tree(root: Path, values: dict[str, int]) -> Path:
    """A fake /sys/class/infiniband with one InfiniBand port, mlx5_0/1."""
    port = root / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir(parents=True, exist_ok=True)
    (port / "link_layer").write_text("InfiniBand\n")
    for name, value in values.items():
        (port / "counters" / name).write_text(f"{value}\n")
    return root


# --- ib_counters ---------------------------------------------------------------------------------


def test_ib_counters_reads_then_fails_a_port_whose_symbol_errors_grew(node, run, tmp_path):
    tree = counters_tree(tmp_path / "ib", {"symbol_error": 2, "link_downed": 0, "port_rcv_errors": 0})
    first = run("ib_counters", {"sysfs_root": str(tree)})
    assert not first.failed and first.status("ib_counters.read") == "pass"
    assert first.result["counters"] == {"mlx5_0/1": {"symbol_error": 2, "link_downed": 0, "port_rcv_errors": 0}}

    same = run("ib_counters", {"sysfs_root": str(tree), "phase": "after", "before": first.result["counters"]})
    assert not same.failed and same.status("ib_counters.mlx5_0/1") == "pass"

    counters_tree(tree, {"symbol_error": 9})
    grown = run("ib_counters", {"sysfs_root": str(tree), "phase": "after", "before": first.result["counters"]})
    assert grown.failed
    assert "symbol_error 2 -> 9 (+7)" in grown.checks["ib_counters.mlx5_0/1"]["message"]


def test_ib_counters_without_infiniband_is_skipped_no_hardware(node, run, tmp_path):
    first = run("ib_counters", {"sysfs_root": str(tmp_path / "none")})
    assert first.checks["ib_counters.read"]["message"] == "skipped: no hardware"
    after = run("ib_counters", {"sysfs_root": str(tmp_path / "none"), "phase": "after", "before": {}})
    assert not after.failed and after.result["status"] == "skipped"


def test_ib_counters_replays_perfquery_readings_and_says_so(node, run, tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "perfquery-before.txt").write_text(load("perfquery", "hca-2port-extended-clean-osc.txt"))
    after = load("perfquery", "hca-1port-extended-link-downed-xmit-discards-osc.txt")
    (replay / "perfquery-after.txt").write_text(after)
    args = {"replay_dir": str(replay), "perfquery_device": "mlx5_0"}
    first = run("ib_counters", args)
    after = run("ib_counters", {**args, "phase": "after", "before": first.result["counters"]})
    assert after.failed and after.result["source"] == "replay"
    assert "link_downed 0 -> 1 (+1)" in after.checks["ib_counters.mlx5_0/1"]["message"]


# --- training_burnin -----------------------------------------------------------------------------

# A stand-in for the interpreter: `-c "import torch"` succeeds; running the job writes the rank's
# record as ddp_smoke.py does (--result-dir/rank-<RANK>.json) with the loss from FAKE_LOSS_FILE,
# whose lines are used one per run (so a test can make one run drift).
STAND_IN = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
if args[:1] == ["-c"]:
    sys.exit(0)
result_dir = args[args.index("--result-dir") + 1]
os.makedirs(result_dir, exist_ok=True)
rank = int(os.environ["RANK"])
if rank == 0:
    losses = open(os.environ["FAKE_LOSS_FILE"]).read().split()
    counter = os.environ["FAKE_LOSS_FILE"] + ".runs"
    runs = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, "w").write(str(runs + 1))
    loss = float(losses[min(runs, len(losses) - 1)])
else:  # the other ranks end with rank 0's loss, as DDP's all-reduced loss is the same on every rank
    first = os.path.join(result_dir, "rank-0.json")
    while not os.path.exists(first):
        time.sleep(0.01)
    loss = json.load(open(first))["final_loss"]
if loss < 0:
    sys.exit("stand-in: the job crashed")
partial = os.path.join(result_dir, "partial-" + str(rank))
with open(partial, "w") as out:
    json.dump({{"rank": rank, "final_loss": loss, "rc": 0}}, out)
os.replace(partial, os.path.join(result_dir, "rank-" + str(rank) + ".json"))
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch, node):
    python = tmp_path / "python"
    python.write_text(STAND_IN.format(python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "ddp_smoke.py"
    script.write_text("# the job: the stand-in interpreter plays it\n")
    losses = tmp_path / "losses"
    monkeypatch.setenv("FAKE_LOSS_FILE", str(losses))
    node.outputs["python -c import torch"] = (0, "", "")

    def runner(run, loss_lines: str, **extra):
        losses.write_text(loss_lines)
        args = {"python": str(python), "script": str(script), "seconds": 0, **extra}
        return run("training_burnin", args)

    return runner


def test_training_runs_repeat_for_the_set_time_with_one_loss(stand_in, run):
    done = stand_in(run, "0.125\n", seconds=1, ranks=2)
    assert not done.failed, done.result
    check = done.checks["training.burnin"]
    assert check["status"] == "pass"
    assert check["measured"]["runs"] >= 2 and check["measured"]["final_losses"] == ["0.125"]
    assert check["measured"]["seconds"] >= 1


def test_a_run_whose_loss_drifted_fails_naming_the_runs(stand_in, run):
    done = stand_in(run, "0.125 0.125 0.5\n", seconds=1)
    assert done.failed
    message = done.checks["training.burnin"]["message"]
    assert "different final losses" in message and "run 3" in message


def test_a_crashed_run_fails_and_stops_the_step(stand_in, run):
    done = stand_in(run, "0.125 -1\n", seconds=30)
    assert done.failed
    assert "run 2: exited 1: stand-in: the job crashed" in done.checks["training.burnin"]["message"]
    assert len(done.result["runs"]) == 2  # it did not go on for the 30 s


def test_training_without_torch_or_the_script_is_skipped(node, run, tmp_path):
    missing = run("training_burnin", {"script": str(tmp_path / "nope.py"), "python": "python3"})
    assert missing.result["status"] == "skipped" and "not found" in missing.checks["training.burnin"]["message"]
    script = tmp_path / "ddp_smoke.py"
    script.write_text("")
    node.outputs["python3 -c import torch"] = (1, "", "ModuleNotFoundError: No module named 'torch'")
    done = run("training_burnin", {"script": str(script), "python": "python3"})
    assert not done.failed
    assert done.checks["training.burnin"]["message"].startswith("skipped: torch not installed")

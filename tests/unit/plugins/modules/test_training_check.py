"""training_check: the acceptance job's steps through Slurm (salloc, three srun steps, cleanup),
with run_command mocked; the outputs are shaped as srun --label prints ddp_smoke.py's lines."""

from __future__ import annotations

import json

import pytest

from tests.paths import FIXTURES

LOSS = 0.041234567
SINFO = "sinfo --noheader --Node --nodes=node01,node02 --format=%N|%T|%o"
SALLOC = "salloc --no-shell"
SRUN = "srun --jobid=77"


def _line(rank: int, host: str, **record) -> str:
    base = {"rank": rank, "host": host, "final_loss": LOSS, "steps": 40, "seconds": 4.0, "resumed_from": None, "rc": 0}
    return f"{rank}: ddp_smoke: {json.dumps({**base, **record})}"


REFERENCE = "\n".join([_line(0, "node01"), _line(1, "node02")])
KILLED = "1: ddp_smoke: rank 1 on node02 kills itself before step 23\nsrun: error: node02: task 1: Killed\n"
RESUMED = "\n".join([_line(0, "node01", steps=20, resumed_from=20), _line(1, "node02", steps=20, resumed_from=20)])


@pytest.fixture
def slurm(node):
    node.programs |= {"sinfo", "salloc", "srun", "scancel"}
    node.outputs[SINFO] = (0, "node01|idle|172.31.250.11\nnode02|idle|172.31.250.12\n", "")
    node.outputs[SALLOC] = (0, "", "salloc: Granted job allocation 77\n")
    node.outputs["scancel 77"] = (0, "", "")
    return node


def _steps(node, *outputs):
    """The three srun steps answer in turn, then the cleanup step."""
    answers = iter([*outputs, (0, "", "")])
    original = node.output

    def output(argv):
        if any(arg.endswith("/srun") for arg in argv[:4]):
            return next(answers)
        return original(argv)

    node.output = output


def test_a_killed_rank_resumed_with_the_reference_loss_passes(run, slurm):
    _steps(slurm, (0, REFERENCE, ""), (137, KILLED, ""), (0, RESUMED, ""))
    done = run("training_check", {"nodes": ["node01", "node02"]})
    assert not done.failed, done.result
    check = done.checks["training.smoke"]
    assert check["status"] == "pass", check
    assert "rank 1 on node02 was killed at step 23" in check["message"]
    assert done.result["job"]["killed"] == {"rank": 1, "host": "node02", "at_step": 23}
    assert done.result["job"]["reference_loss"] == LOSS
    srun = [call for call in slurm.calls if call[0] == "/usr/bin/srun"]
    # One task per rank in the allocation, the rendezvous on the first node's NodeAddr, Debian's torch without libuv.
    assert srun[0][1:10] == [
        "--jobid=77",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--distribution=block",
        "--kill-on-bad-exit=1",
        "--label",
        "--export=ALL,MASTER_ADDR=172.31.250.11,MASTER_PORT=29500,USE_LIBUV=0",
        "/usr/bin/python3",
    ]
    assert "--kill-rank=1" in srun[1] and "--kill-at-step=23" in srun[1]
    assert "--kill-rank=1" not in srun[2]
    # The killed and the resumed step share one checkpoint directory of this job; the reference its own.
    dirs = [next(a for a in call if a.startswith("--checkpoint-dir=")) for call in srun[:3]]
    assert dirs == [
        "--checkpoint-dir=/scratch/checkpoints/clusterforge-acceptance/77/reference",
        "--checkpoint-dir=/scratch/checkpoints/clusterforge-acceptance/77/job",
        "--checkpoint-dir=/scratch/checkpoints/clusterforge-acceptance/77/job",
    ]
    assert srun[3][-4:] == ["rm", "-rf", "--", "/scratch/checkpoints/clusterforge-acceptance/77"]
    assert slurm.calls[-1] == ["/usr/bin/scancel", "77"]


SHARED = "/shared/checkpoints/clusterforge-acceptance"
PROBE_SEEN = "0: shared-check: node01 seen\n1: shared-check: node02 seen\n"
TORCHRUN = {"nodes": ["node01", "node02"], "launcher": "torchrun", "rendezvous": "file", "checkpoint_root": SHARED}
# torchrun restarted every rank (restart 1) after rank 1 killed itself; each resumed from step 20.
ELASTIC = KILLED + "\n".join(
    [_line(0, "node01", steps=20, resumed_from=20, restart=1), _line(1, "node02", steps=20, resumed_from=20, restart=1)]
)


def test_torchrun_restarts_the_ranks_after_the_kill_and_they_resume_from_the_shared_checkpoint(run, slurm):
    _steps(slurm, (0, "", ""), (0, PROBE_SEEN, ""), (0, REFERENCE, ""), (0, ELASTIC, ""))
    done = run("training_check", TORCHRUN)
    assert not done.failed, done.result
    assert done.checks["training.smoke"]["status"] == "pass", done.checks
    job = done.result["job"]
    assert job["phases"] == ["reference", "elastic"]
    assert job["killed"] == {"rank": 1, "host": "node02", "at_step": 23}
    assert {r["restart"] for r in job["ranks"]} == {1}
    srun = [call for call in slurm.calls if call[0] == "/usr/bin/srun"]
    # The first node writes a file in the job's directory; every node says whether it sees it.
    assert srun[0][1:5] == ["--jobid=77", "--nodes=1", "--ntasks=1", "--nodelist=node01"]
    assert srun[0][-2:] == [f"{SHARED}/77", f"{SHARED}/77/shared-check"]
    assert srun[1][-1] == f"{SHARED}/77/shared-check"
    # One torchrun per node with the CPUs of its ranks; the FileStore rendezvous without libuv.
    assert srun[2][1:12] == [
        "--jobid=77",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=1",
        "--distribution=block",
        "--kill-on-bad-exit=1",
        "--label",
        "--export=ALL,TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1,USE_LIBUV=0",
        "/usr/bin/python3",
        "-m",
    ]
    assert srun[2][12:20] == [
        "torch.distributed.run",
        "--nnodes=2",
        "--nproc_per_node=1",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint={SHARED}/77/rendezvous-reference",
        "--rdzv_id=clusterforge-77-reference",
        "--rdzv_conf=join_timeout=150,store_type=file",
        "--max_restarts=3",
    ]
    assert srun[2][20] == "/opt/clusterforge/examples/ddp_smoke.py" and "--kill-rank=1" not in srun[2]
    assert f"--rdzv_endpoint={SHARED}/77/rendezvous-elastic" in srun[3] and "--kill-rank=1" in srun[3]
    assert srun[4][-4:] == ["rm", "-rf", "--", f"{SHARED}/77"]
    assert slurm.calls[-1] == ["/usr/bin/scancel", "77"]


def test_torchrun_with_a_tcp_rendezvous_meets_on_the_first_node(run, slurm):
    _steps(slurm, (0, "", ""), (0, PROBE_SEEN, ""), (0, REFERENCE, ""), (0, ELASTIC, ""))
    done = run("training_check", {**TORCHRUN, "rendezvous": "tcp", "master_port": 29600})
    assert not done.failed, done.result
    torchrun = [call for call in slurm.calls if "torch.distributed.run" in call]
    assert "--export=ALL" in torchrun[0] and "--rdzv_endpoint=172.31.250.11:29600" in torchrun[0]
    assert "--rdzv_conf=join_timeout=150" in torchrun[0]


@pytest.mark.parametrize(
    ("probe", "store", "endpoint"),
    [
        ("libuv-check: no use_libuv was requested but PyTorch was build without libuv\n", "file", f"{SHARED}/77/"),
        ("libuv-check: yes\n", "tcp", "172.31.250.11:29500"),
    ],
)
def test_torchrun_s_rendezvous_follows_whether_the_nodes_torch_has_libuv(run, slurm, probe, store, endpoint):
    """auto (the default): the job's interpreter on the first node tries a libuv TCPStore first."""
    _steps(slurm, (0, "", ""), (0, PROBE_SEEN, ""), (0, probe, ""), (0, REFERENCE, ""), (0, ELASTIC, ""))
    done = run("training_check", {**TORCHRUN, "rendezvous": "auto"})
    assert not done.failed, done.result
    assert done.result["rendezvous"] == store
    srun = [call for call in slurm.calls if call[0] == "/usr/bin/srun"]
    assert srun[2][-3:-1] == ["/usr/bin/python3", "-c"] and "--nodelist=node01" in srun[2]
    assert any(arg.startswith(f"--rdzv_endpoint={endpoint}") for arg in srun[3])


def test_torchrun_where_torch_cannot_say_whether_it_has_libuv_fails_naming_the_node(run, slurm):
    no_torch = "ModuleNotFoundError: No module named 'torch'\n"
    _steps(slurm, (0, "", ""), (0, PROBE_SEEN, ""), (1, "", no_torch))
    done = run("training_check", {**TORCHRUN, "rendezvous": "auto"})
    assert done.failed
    assert done.checks["training.smoke"]["message"] == (
        "rendezvous auto: /usr/bin/python3 on node01 could not say whether its torch has libuv:"
        " ModuleNotFoundError: No module named 'torch'"
    )
    assert not any("torch.distributed.run" in call for call in slurm.calls)


def test_torchrun_on_a_checkpoint_root_a_node_does_not_see_fails_naming_it_before_any_job(run, slurm):
    _steps(slurm, (0, "", ""), (0, "0: shared-check: node01 seen\n1: shared-check: node02 missing\n", ""))
    done = run("training_check", TORCHRUN)
    assert done.failed
    check = done.checks["training.smoke"]
    assert check["measured"]["unshared"] == ["node02"]
    assert (
        f"checkpoint_root {SHARED} is not shared by every node: node02 do not see the file node01 wrote"
        in (check["message"])
    )
    assert not any("torch.distributed.run" in call for call in slurm.calls)
    assert slurm.calls[-1] == ["/usr/bin/scancel", "77"]


def test_torchrun_that_cannot_bring_the_ranks_back_fails_naming_the_rank(run, slurm):
    lost = KILLED + _line(0, "node01", rc=1, phase="training", error="Connection closed by peer", restart=0)
    _steps(slurm, (0, "", ""), (0, PROBE_SEEN, ""), (0, REFERENCE, ""), (1, lost, "torchrun: ChildFailedError"))
    done = run("training_check", TORCHRUN)
    assert done.failed
    message = done.checks["training.smoke"]["message"]
    assert "rank 0 on node01: exited 1 in the elastic run (training: Connection closed by peer)" in message
    assert "rank 1 on node02: never reported (did it join?)" in message


def test_a_loss_that_differs_after_the_resume_fails_naming_host_and_rank(run, slurm):
    resumed = "\n".join([_line(0, "node01", resumed_from=20), _line(1, "node02", resumed_from=20, final_loss=0.5)])
    _steps(slurm, (0, REFERENCE, ""), (137, KILLED, ""), (0, resumed, ""))
    done = run("training_check", {"nodes": ["node01", "node02"]})
    assert done.failed
    assert (
        "rank 1 on node02: final loss 0.5 differs from the uninterrupted run's"
        in done.checks["training.smoke"]["message"]
    )


def test_a_rank_that_never_joins_fails_naming_it_and_the_others_give_up(run, slurm):
    reference = "1: ddp_smoke: rank 1 on node02 stalls instead of joining\n" + _line(
        0, "node01", rc=1, phase="rendezvous", error="Timed out after 31 seconds waiting for clients"
    )
    _steps(slurm, (1, reference, "srun: error: node01: task 0: Exited with exit code 1\n"))
    done = run("training_check", {"nodes": ["node01", "node02"], "stall_rank": 1, "phase_timeout": 60})
    assert done.failed
    message = done.checks["training.smoke"]["message"]
    assert "rank 0 on node01: exited 1 in the reference run (rendezvous: Timed out after 31 seconds" in message
    assert "rank 1 on node02: never reported (did it join?)" in message
    srun = [call for call in slurm.calls if call[0] == "/usr/bin/srun"]
    # Nothing after a failed reference run but the cleanup; a rank waits half the step's limit.
    assert len(srun) == 2 and "--timeout=30" in srun[0] and "--stall-rank=1" in srun[0]
    assert slurm.calls[-1] == ["/usr/bin/scancel", "77"]


def test_a_step_past_its_time_limit_names_the_silent_ranks(run, slurm):
    slurm.programs.add("timeout")
    slurm.outputs.update({f"timeout --kill-after=10 60 /usr/bin/{key}": out for key, out in slurm.outputs.items()})
    _steps(slurm, (124, _line(0, "node01"), ""))
    done = run("training_check", {"nodes": ["node01", "node02"], "phase_timeout": 60})
    assert done.failed
    assert "rank 1 on node02: phase reference ran past its limit of 60 s" in done.checks["training.smoke"]["message"]
    srun = next(call for call in slurm.calls if call[3:4] == ["/usr/bin/srun"])
    assert srun[:4] == ["/usr/bin/timeout", "--kill-after=10", "60", "/usr/bin/srun"]


def test_nodes_slurm_cannot_use_are_left_out_and_said(run, slurm):
    slurm.outputs[SINFO] = (0, "node01|idle|10.0.0.1\nnode02|drained|10.0.0.2\n", "")
    done = run("training_check", {"nodes": ["node01", "node02"], "excluded": {"node03": "failed a node check"}})
    check = done.checks["training.smoke"]
    assert check["status"] == "skipped"
    assert check["message"] == "skipped: 1 rank(s) on the usable compute nodes (node01): a DDP job needs two"
    assert done.result["notes"] == ["node03: failed a node check", "node02: Slurm state drained"]
    assert not any(call[0].endswith("salloc") for call in slurm.calls)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"orchestrator": "kubernetes"},
            "skipped: the acceptance job runs through Slurm; the orchestrator is kubernetes"
            " (a Kubernetes PyTorchJob is rendered, not run)",
        ),
        (
            {"nodes": []},
            "skipped: no torch: no compute node has the acceptance job /opt/clusterforge/examples/ddp_smoke.py"
            " (the training stage's pytorch role installs it)",
        ),
    ],
)
def test_without_slurm_or_torch_the_check_says_skipped_and_runs_nothing(run, node, args, message):
    done = run("training_check", args)
    assert not done.failed
    assert done.checks["training.smoke"] == {
        "check": "training.smoke",
        "status": "skipped",
        "measured": None,
        "expected": None,
        "message": message,
    }
    assert node.calls == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"checkpoint_root": "/var"}, "checkpoint_root '/var': expected a directory of its own"),
        ({"checkpoint_root": "/srv/data"}, "checkpoint_root '/srv/data': expected a directory of its own"),
        ({"kill_at_step": 20}, "kill_at_step 20: expected a step after the first checkpoint"),
        ({"kill_at_step": 3}, "kill_at_step 3: expected a step after the first checkpoint"),
        ({"launcher": "torchrun", "max_restarts": 0}, "max_restarts 0: expected at least 1 with launcher torchrun"),
    ],
)
def test_bad_options_are_refused_naming_the_option(run, slurm, args, message):
    done = run("training_check", {"nodes": ["node01", "node02"], **args})
    assert done.failed and message in done.result["msg"], done.result
    assert slurm.calls == []


def test_recorded_outputs_are_judged_and_labelled_replayed(run, node, tmp_path):
    (tmp_path / "training-reference.txt").write_text(REFERENCE)
    (tmp_path / "training-killed.txt").write_text(KILLED)
    (tmp_path / "training-resumed.txt").write_text(RESUMED)
    done = run("training_check", {"replay_dir": str(tmp_path)})
    assert done.result["source"] == "replay"
    assert done.checks["training.smoke"]["status"] == "pass"
    assert node.calls == []


def test_recorded_torchrun_outputs_are_judged_and_labelled_replayed(run, node, tmp_path):
    """Real outputs of the lab's torchrun launcher (tests/fixtures/torchrun): the elastic step's
    records after torchrun's restart pass against the reference run's loss."""
    source = FIXTURES / "torchrun"
    (tmp_path / "training-reference.txt").write_text((source / "reference-file-rendezvous.txt").read_text())
    (tmp_path / "training-elastic.txt").write_text((source / "elastic-file-rendezvous-rank1-killed.txt").read_text())
    done = run("training_check", {"replay_dir": str(tmp_path)})
    assert done.result["source"] == "replay"
    check = done.checks["training.smoke"]
    assert check["status"] == "pass", check
    assert "after rank 1 on node02 was killed at step 23" in check["message"]
    assert node.calls == []


def test_a_recording_that_is_not_the_job_s_output_fails_naming_the_file(run, node, tmp_path):
    (tmp_path / "training-reference.txt").write_text((FIXTURES / "squeue" / "empty-queue.txt").read_text())
    done = run("training_check", {"replay_dir": str(tmp_path)})
    check = done.checks["training.smoke"]
    assert check["status"] == "fail"
    assert "training-reference.txt" in check["message"] and "not an output of the acceptance job" in check["message"]

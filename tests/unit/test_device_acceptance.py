"""tools/device-acceptance.sh without a GPU: the dry run lists what a GPU machine would run and
writes nothing; a real run says "skipped: no hardware". With a FAKE nvidia-smi and a FAKE
all_reduce_perf (shell scripts written here, printing a real nvidia-smi -q fixture; labelled as
fakes), the run path saves each output with its .source and records missing tools as skipped."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from tests.paths import FIXTURES, PROJECT

SCRIPT = PROJECT / "tools" / "device-acceptance.sh"
# Nothing from /usr/local (this machine's nvcc), /opt or a venv: only the base system's tools.
BASE_PATH = "/usr/bin:/bin"


def _run(tmp_path, *args, path=BASE_PATH, **env):
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"PATH": path, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), **env},
    )


QUERY = sorted((FIXTURES / "nvidia-smi_query").glob("*.txt"))[0]


@pytest.fixture
def fake_bin(tmp_path):
    """A directory with a FAKE nvidia-smi (two GPUs, a real -q output from tests/fixtures); a test
    adds the other fake tools it needs with _fake_tool."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    _fake_tool(
        fake,
        "nvidia-smi",
        "#!/bin/sh\n# FAKE nvidia-smi for this test: two GPUs, a real -q output from tests/fixtures.\n"
        'case "$*" in\n'
        '  *--query-gpu=index*) printf "0\\n1\\n" ;;\n'
        '  *--query-gpu=name,driver_version*) echo "NVIDIA H100 80GB HBM3, 550.163.01" ;;\n'
        f'  "-q") cat "{QUERY}" ;;\n'
        '  *) echo "fake nvidia-smi: $*" ;;\n'
        "esac\n",
    )
    return fake


def _fake_tool(fake, name: str, script: str) -> None:
    (fake / name).write_text(script)
    (fake / name).chmod(0o755)


def test_the_dry_run_without_a_gpu_lists_every_step_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    done = _run(tmp_path, "--dry-run", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "dry run on a machine without a GPU (nvidia-smi not found): the steps a GPU machine would run,"
        " with 8 GPUs assumed"
    )
    host = socket.gethostname().split(".")[0]
    assert f"would run: nvidia-smi -q > {out}/nvidia-smi_query/{host}.txt" in lines
    assert f"would run: nvidia-smi -q -x > {out}/nvidia-smi_xml/{host}.xml" in lines
    assert f"would run: nvidia-smi topo -m > {out}/nvidia-smi_topo/{host}.txt" in lines
    assert any(line.startswith("skipped: cuda_probe: ") or "cuda_probe" in line for line in lines)
    assert "skipped: nccl_all_reduce_perf: all_reduce_perf not found (set NCCL_TESTS_BIN)" in lines
    assert any(line.startswith("skipped: training_smoke: torchrun not found") for line in lines)
    assert not out.exists()


def test_a_real_run_without_a_gpu_says_no_hardware_and_runs_nothing(tmp_path):
    out = tmp_path / "out"
    done = _run(tmp_path, "--out", str(out))
    assert (done.returncode, done.stdout) == (0, "skipped: no hardware (nvidia-smi not found); nothing was run\n")
    assert not out.exists()


def test_a_bad_argument_is_refused():
    done = subprocess.run([str(SCRIPT), "--bogus"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "unknown argument --bogus (expected --dry-run or --out DIR)" in done.stderr


def test_with_fake_tools_each_output_is_saved_with_its_source(tmp_path, fake_bin):
    fake, query = fake_bin, QUERY
    _fake_tool(fake, "all_reduce_perf", '#!/bin/sh\necho "FAKE all_reduce_perf $*"\nexit 3\n')
    out = tmp_path / "out"
    done = _run(tmp_path, "--out", str(out), path=f"{fake}:{BASE_PATH}", NVCC=str(tmp_path / "no-nvcc"))
    assert done.returncode == 0, done.stderr
    host = socket.gethostname().split(".")[0]
    assert (out / "nvidia-smi_query" / f"{host}.txt").read_text() == query.read_text()
    source = (out / "nvidia-smi_query" / f"{host}.source").read_text()
    assert f"on {host} (NVIDIA H100 80GB HBM3, 550.163.01; 2 GPUs)" in source
    assert f"Command: {fake}/nvidia-smi -q\nExit status: 0\n" in source
    nccl = out / "nccl_all_reduce_perf" / f"{host}-2gpu.txt"
    assert nccl.read_text() == "FAKE all_reduce_perf -b 8 -e 8G -f 2 -g 2\n"
    assert "Exit status: 3" in nccl.with_suffix(".source").read_text()
    summary = (out / "summary.txt").read_text().splitlines()
    assert f"failed (exit 3): nccl_all_reduce_perf -> {nccl}" in summary
    assert any(line.startswith("skipped: training_smoke: torchrun not found") for line in summary)
    if not os.path.exists("/usr/local/cuda/bin/nvcc"):
        assert any(line.startswith("skipped: cuda_probe: nvcc not found") for line in summary)


def test_the_training_job_runs_uninterrupted_then_with_a_rank_torchrun_restarts(tmp_path, fake_bin):
    fake = fake_bin
    _fake_tool(fake, "torchrun", '#!/bin/sh\necho "FAKE torchrun $*"\n')
    out = tmp_path / "out"
    done = _run(tmp_path, "--out", str(out), path=f"{fake}:{BASE_PATH}", NVCC=str(tmp_path / "no-nvcc"))
    assert done.returncode == 0, done.stderr
    host = socket.gethostname().split(".")[0]
    reference = (out / "training_smoke" / f"{host}-nccl-reference.txt").read_text()
    elastic = (out / "training_smoke" / f"{host}-nccl-elastic.txt").read_text()
    assert reference.startswith("FAKE torchrun --standalone --nproc_per_node=2 ")
    assert "--kill-rank" not in reference and "--max-restarts" not in reference
    assert "--nproc_per_node=2 --max-restarts=1 " in elastic
    assert elastic.rstrip().endswith("--kill-rank 1 --kill-at-step 23")

#!/usr/bin/python
# Copyright: clusterforge contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_bandwidth_check
short_description: Measure one HCA's RDMA write bandwidth with ib_write_bw and judge it against the link rate
description:
  - "Runs perftest's C(ib_write_bw) (or C(ib_read_bw), C(ib_send_bw)) on one HCA port, reporting in
    Gb/s, and judges the best average bandwidth against O(rate_gbps) x O(efficiency_floor) (0.9: real
    runs reach 92 to 98% of the link rate; 64b/66b encoding alone costs 3%)."
  - "Loopback (no O(server)): the module starts the server on this node, then runs the client
    against it, so the traffic crosses the HCA and PCIe but no cable. With O(server) it runs only
    the client; the caller starts C(ib_write_bw -d DEV --report_gbits) on that host first."
  - Changes nothing on the node; it runs in check mode too.
  - "No RDMA device is C(skipped: no hardware), no perftest C(skipped: ib_write_bw not found), an
    absent O(device) C(skipped: mlx5_3 not present) (ib_check judges presence). The module fails
    the host only when a check is C(fail)."
  - "A GPUDirect run (O(use_cuda)) is a check of its own, C(ib.write_bw_gpu.<device>) (read/send
    likewise), so a rail's host-memory and GPU-memory runs stand side by side in a report."
  - "Replay mode: with O(replay_dir) (file C(ib_write_bw.<device>.txt), else C(ib_write_bw.txt); with
    O(use_cuda) C(ib_write_bw_gpu.<device>.txt), else C(ib_write_bw_gpu.txt)) or O(replay) (key
    C(ib_write_bw), with O(use_cuda) C(ib_write_bw_gpu)) a recorded client output is judged; without
    one the node has no hardware."
extends_documentation_fragment:
  - node_check
options:
  device:
    description: The HCA (C(-d)), for example C(mlx5_0).
    type: str
    required: true
  port:
    description: The HCA port (C(-i)).
    type: int
    default: 1
  test:
    description: The perftest verb.
    type: str
    choices: [write, read, send]
    default: write
  server:
    description: Host running the perftest server; omitted, the module runs a loopback on this node.
    type: str
  gid_index:
    description: GID index (C(-x)), needed on RoCE ports.
    type: int
  size:
    description: Message size in bytes (C(-s)).
    type: int
    default: 65536
  qps:
    description: Queue pairs (C(-q)).
    type: int
    default: 1
  duration:
    description: Seconds to run (C(-D)).
    type: int
    default: 5
  extra_args:
    description: More perftest arguments, appended as they are.
    type: list
    elements: str
    default: []
  use_cuda:
    description:
      - "GPUDirect RDMA: the CUDA device whose memory holds the buffers (C(--use_cuda=N)); on both
        ends for a two-host run. The rail's own GPU is the one its HCA serves (the topology's
        C(hca_gpus))."
      - Set, the judge expects GPU memory unless O(memory) says otherwise, and the checks are
        named C(ib.<test>_bw_gpu.<device>).
    type: int
  use_cuda_dmabuf:
    description: >-
      Register the GPU buffers through dma-buf (C(--use_cuda_dmabuf)) instead of nvidia-peermem;
      needs O(use_cuda).
    type: bool
    default: false
  memory:
    description:
      - "Where the buffers must have been: C(gpu) (the run's output shows perftest's CUDA set-up)
        or C(host). A C(gpu) expectation on a host-memory run is a fail: it measured no GPUDirect."
      - Unset, C(gpu) when O(use_cuda) is set, else not judged.
    type: str
    choices: [gpu, host]
  rate_gbps:
    description: The port's link rate in Gb/s (400 NDR, 200 HDR, 100 EDR).
    type: float
  efficiency_floor:
    description:
      - Share of O(rate_gbps) the average bandwidth must reach.
      - Unset, the judge's C(ib_judge.PERFTEST_EFFICIENCY_FLOOR) (0.9) applies.
    type: float
  server_delay:
    description: Seconds between starting the loopback server and the client.
    type: float
    default: 1.0
  sysfs_root:
    description: The RDMA sysfs tree probed for the device.
    type: path
    default: /sys/class/infiniband
  replay_dir:
    description: Read the recorded client output from this directory on the node.
    type: path
  replay:
    description: "Recorded output, C({ib_write_bw: path})."
    type: dict
    default: {}
seealso:
  - module: ib_check
"""

EXAMPLES = r"""
- name: Loopback RDMA write bandwidth of every NDR rail
  ib_bandwidth_check:
    device: "{{ item.key }}"
    rate_gbps: "{{ item.value }}"
  loop: "{{ clusterforge_expected_hca_rates | dict2items }}"
"""

RETURN = r"""
status:
  description: Overall verdict; C(skipped) when every check was skipped.
  returned: always
  type: str
checks:
  description: >-
    C(ib.write_bw.<device>) and C(ib.write_bw_warnings.<device>) (read/send likewise; with
    O(use_cuda) C(ib.write_bw_gpu.<device>), C(ib.write_bw_gpu_memory.<device>) and
    C(ib.write_bw_gpu_warnings.<device>)), each with check, status, measured, expected, message.
  returned: always
  type: list
  elements: dict
  sample:
    - check: ib.write_bw.mlx5_0
      status: pass
      measured: 368.48
      expected: 360.0
      message: 368.5 Gb/s = 92% of 400 Gb/s (floor 90%)
counts:
  description: Checks per status.
  returned: always
  type: dict
bandwidth_gbps:
  description: Best average bandwidth measured.
  returned: when perftest output was read
  type: float
command:
  description: The client argv (live runs).
  returned: when the client ran
  type: list
  elements: str
source:
  description: C(live) or C(replay).
  returned: always
  type: str
use_cuda:
  description: The CUDA device whose memory held the buffers (O(use_cuda)); null for a host-memory run.
  returned: always
  type: int
"""

import os
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.check_module import C_LOCALE, Tools, check_module, first_line, run_check_module
from ansible.module_utils.ib_judge import best_bandwidth, judge_perftest
from ansible.module_utils.perftest import parse_perftest
from ansible.module_utils.verdicts import FAIL, NO_HARDWARE, ParseError, ToolFailed, failed_run, result, skipped

# Options that are ib_judge.PERFTEST_KEYS, by the key they give.
EXPECTATION_OPTIONS = {"rate_gbps": "rate_gbps", "efficiency_floor": "efficiency_floor", "memory": "memory"}


def build_module():
    return check_module(
        AnsibleModule,
        dict(
            device=dict(type="str", required=True),
            port=dict(type="int", default=1),
            test=dict(type="str", default="write", choices=["write", "read", "send"]),
            server=dict(type="str"),
            gid_index=dict(type="int"),
            size=dict(type="int", default=65536),
            qps=dict(type="int", default=1),
            duration=dict(type="int", default=5),
            extra_args=dict(type="list", elements="str", default=[]),
            use_cuda=dict(type="int"),
            use_cuda_dmabuf=dict(type="bool", default=False),
            memory=dict(type="str", choices=["gpu", "host"]),
            rate_gbps=dict(type="float"),
            efficiency_floor=dict(type="float"),
            server_delay=dict(type="float", default=1.0),
            sysfs_root=dict(type="path", default="/sys/class/infiniband"),
        ),
    )


def perftest_argv(program: str, params: dict) -> list:
    argv = [program, "-d", params["device"], "-i", str(params["port"]), "--report_gbits"]
    argv += ["-s", str(params["size"]), "-q", str(params["qps"]), "-D", str(params["duration"])]
    if params["gid_index"] is not None:
        argv += ["-x", str(params["gid_index"])]
    if params.get("use_cuda") is not None:
        argv.append(f"--use_cuda={params['use_cuda']}")
        if params.get("use_cuda_dmabuf"):
            argv.append("--use_cuda_dmabuf")
    return argv + list(params["extra_args"])


def expectation(params: dict) -> dict:
    """The ib_judge.PERFTEST_KEYS expectation of the options: memory is gpu when use_cuda is set."""
    expected = {key: params[option] for option, key in EXPECTATION_OPTIONS.items()}
    if expected["memory"] is None and params.get("use_cuda") is not None:
        expected["memory"] = "gpu"
    return {key: value for key, value in expected.items() if value is not None}


def _renamed(results: list, device: str) -> list:
    return [result(f"{r.check}.{device}", r.status, r.measured, r.expected, r.message) for r in results]


def _loopback(module, argv: list) -> tuple:
    """Start the server here, run the client against it, stop the server."""
    env = dict(os.environ, **C_LOCALE)
    # run_command waits for its command, and the client needs the server running: Popen for the server.
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        time.sleep(module.params["server_delay"])
        return module.run_command([*argv, "localhost"])
    finally:
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.terminate()
            server.wait(timeout=5)


def run_checks(module) -> tuple:
    params = module.params
    if params["use_cuda_dmabuf"] and params["use_cuda"] is None:
        module.fail_json(msg="use_cuda_dmabuf needs use_cuda: the CUDA device whose memory holds the buffers")
    device = params["device"]
    binary = f"ib_{params['test']}_bw"
    # A GPUDirect run is its own check and recording, beside the same rail's host-memory run.
    suffix = "_gpu" if params["use_cuda"] is not None else ""
    key = binary + suffix
    files = {key: (f"{key}.{device}.txt", f"{key}.txt")}
    tools = Tools(module, files, params["replay_dir"], params["replay"])
    extra = {
        "source": "replay" if tools.replaying else "live",
        "notes": tools.notes,
        "device": device,
        "use_cuda": params["use_cuda"],
    }
    name = f"ib.{params['test']}_bw{suffix}"
    check = f"{name}.{device}"
    if tools.replaying:
        outcome = tools.run(key, [binary])
        if outcome is None:
            return [skipped(check, NO_HARDWARE, params["rate_gbps"])], extra
        rc, stdout, stderr = outcome.rc, outcome.stdout, outcome.stderr
    else:
        try:
            present = os.listdir(params["sysfs_root"])
        except OSError:
            present = []
        if not present:
            return [skipped(check, NO_HARDWARE, params["rate_gbps"])], extra
        if device not in present:
            return [skipped(check, f"skipped: {device} not present", params["rate_gbps"])], extra
        program = tools.find(binary)
        if program is None:
            return [skipped(check, f"skipped: {binary} not found", params["rate_gbps"])], extra
        argv = perftest_argv(program, params)
        if params["server"]:
            extra["command"] = [*argv, params["server"]]
            rc, stdout, stderr = module.run_command(extra["command"])
        else:
            extra["command"] = [*argv, "localhost"]
            rc, stdout, stderr = _loopback(module, argv)
    exited = None
    if rc != 0:
        extra.update(rc=rc, stdout=stdout[-20000:], stderr=stderr[-20000:])
        exited = result(check, FAIL, rc, 0, f"{binary} exited {rc}: {first_line(stderr, stdout)}")
    try:
        # perftest prints why it failed ("Couldn't connect to ...") on stderr.
        runs = parse_perftest(stdout if rc == 0 else f"{stdout}\n{stderr}", source=binary)
    except ToolFailed as exc:
        return [failed_run(check, exc, rc)], extra
    except ParseError as exc:
        return [exited or result(check, FAIL, None, f"{binary} result table", str(exc))], extra
    if exited:
        return [exited], extra
    results = judge_perftest(runs, expectation(params), check=name)
    extra["bandwidth_gbps"] = round(best_bandwidth(runs), 2)
    return _renamed(results, device), extra


def main():
    run_check_module(build_module(), "ib_bandwidth_check", run_checks)


if __name__ == "__main__":
    main()

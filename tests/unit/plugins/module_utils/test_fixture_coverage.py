"""Every captured output parses, raises its parser's ParseError or, for a run that stopped early,
ToolFailed, whole or cut short; another command's output is always a ParseError.

The per-parser test modules assert concrete values per file; this module makes sure no file in
tests/fixtures is left out of those tables and that no input crashes a parser
with anything but a ParseError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils import (
    dcgmi,
    gpudirect_host,
    ib_counter_judge,
    ibnetdiscover,
    ibstat,
    ibv_devinfo,
    imex_node,
    lspci,
    mlxconfig,
    nccl_tests,
    nvidia_fabric,
    nvidia_smi,
    nvidia_topo,
    perftest,
    roce_dcb,
    roce_qos,
    sacctmgr,
    training_job,
    xid,
)
from ansible.module_utils.verdicts import ParseError, ToolFailed

from .samples import FIXTURES, fixture_files, read

PARSERS = {
    "dcgmi_diag": dcgmi.parse_dcgmi_diag,
    "ib_write_bw": perftest.parse_perftest,
    "ibnetdiscover_iblinkinfo": ibnetdiscover.parse_ibnetdiscover_ports,
    "ibstat": ibstat.parse_ibstat,
    "ibv_devinfo": ibv_devinfo.parse_ibv_devinfo,
    "mlxconfig_q": mlxconfig.parse_mlxconfig,
    "lspci_vvv": lspci.parse_lspci,
    "lsmod": gpudirect_host.parse_lsmod,
    "mlnx_qos": roce_qos.parse_mlnx_qos,
    "dcb_pfc": roce_dcb.parse_pfc,
    "dcb_app": roce_dcb.parse_app_dscp,
    "kernel_log_peermem": gpudirect_host.parse_peermem_log,
    "nccl_all_reduce_perf": nccl_tests.parse_nccl_tests,
    "nvidia-smi_query": nvidia_smi.parse_query,
    "nvidia-smi_compute_apps": imex_node.parse_compute_apps,
    "proc_devices": imex_node.parse_proc_devices,
    "nvidia-smi_fabric": nvidia_fabric.parse_fabric,
    "nvidia-smi_topo": nvidia_topo.parse_topo_matrix,
    "nvidia-smi_xml": nvidia_smi.parse_query_xml,
    "kernel_log_xid": xid.parse_kernel_log,
    "sacctmgr": sacctmgr.parse_any_table,
    "squeue": sacctmgr.parse_squeue,
    "perfquery": ib_counter_judge.parse_perfquery,
    "torchrun": training_job.parse_step_output,
}

# parse_query reads both formats of `nvidia-smi -q` (text and -x XML): the same command.
SAME_COMMAND = {"nvidia-smi_query": {"nvidia-smi_xml"}, "nvidia-smi_fabric": {"nvidia-smi_query"}}
# One program's failure line reads the same in each of its subcommands (nvidia-smi's "NVIDIA-SMI has
# failed ..."): there ToolFailed is right, but a parse result never is.
SAME_PROGRAM = {
    "nvidia-smi_topo": {"nvidia-smi_query", "nvidia-smi_xml"},
    "nvidia-smi_query": {"nvidia-smi_topo"},
    "nvidia-smi_xml": {"nvidia-smi_topo"},
    "nvidia-smi_compute_apps": {"nvidia-smi_query", "nvidia-smi_topo", "nvidia-smi_xml"},
    # Both run under srun, whose failure lines ("srun: error: node01: task 0: Exited ...") are the same.
    "nccl_all_reduce_perf": {"torchrun"},
}
# A kernel log may hold any line, so another command's output is a log without events.
FINDS_NOTHING_IN_OTHER_TEXT = {"kernel_log_xid", "kernel_log_peermem"}

# Fixture folders no parser reads: Molecule's logs of failed scenarios, read by tests/run_all.sh's
# summary of why a scenario failed (tests/unit/test_run_all.py); sacctmgr's refusals, which the
# slurm_accounts module tells apart by slurmdbd's message (tests/unit/plugins/modules/test_slurm_accounts.py).
NOT_PARSED = {"molecule_log", "sacctmgr_refusal"}

ALL = [(kind, path) for kind in sorted(PARSERS) for path in fixture_files(kind)]
SOURCED = ALL + [(kind, path) for kind in sorted(NOT_PARSED) for path in fixture_files(kind)]


def test_every_fixture_kind_has_a_parser():
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir()} - NOT_PARSED
    assert kinds <= set(PARSERS), f"fixture folders without a parser: {sorted(kinds - set(PARSERS))}"


def test_fixtures_are_found():
    assert len(ALL) >= 38


@pytest.mark.parametrize("kind,path", SOURCED, ids=[p.name for _, p in SOURCED])
def test_every_fixture_has_a_source(kind: str, path: Path):
    source = path.with_suffix(".source")
    assert source.is_file(), f"{path.name} has no .source file"
    text = source.read_text()
    assert "repository:" in text and "url:" in text


@pytest.mark.parametrize("kind,path", ALL, ids=[p.name for _, p in ALL])
def test_whole_and_truncated_outputs_parse_or_raise(kind: str, path: Path):
    text = read(path)
    parse = PARSERS[kind]
    # The whole file, then prefixes cut at ten points (a command killed mid-output).
    for cut in [len(text), *range(0, len(text), max(1, len(text) // 10))]:
        try:
            parse(text[:cut])
        except (ParseError, ToolFailed) as exc:
            assert str(exc), "a ParseError or ToolFailed must say what is wrong"


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_other_commands_outputs_raise_parse_error_not_crash(kind: str):
    """Feeding a parser the wrong command's output (a module ran the wrong tool) is a ParseError,
    never a result made of whatever lines happened to match."""
    parse = PARSERS[kind]
    accepted = []
    for other, path in ALL:
        if other == kind or other in SAME_COMMAND.get(kind, ()):
            continue
        try:
            result = parse(read(path))
        except ParseError as exc:
            assert str(exc), "a ParseError must say what is wrong"
        except ToolFailed as exc:
            if other not in SAME_PROGRAM.get(kind, ()):
                accepted.append(f"{other}/{path.name}: taken for a failed run: {exc}")
        else:
            if kind in FINDS_NOTHING_IN_OTHER_TEXT and not result:
                continue
            accepted.append(f"{other}/{path.name}: {result!r:.120}")
    assert not accepted, f"{kind} parser accepted other commands' outputs:\n" + "\n".join(accepted)

"""os_tuning's CPU governor step (tasks/cpu_governor.yml), its decisions evaluated by Ansible's own
templating on a probe's output shaped as the role reads it: skip without cpufreq, refuse a governor the
kernel does not offer, set it only when some CPU differs, and the boot unit it installs. Setting a
governor for real needs cpufreq, which no container (the lab, Molecule) and no machine here has."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT
from tests.unit.roles.harness import render

ROLE = PROJECT / "roles" / "os_tuning"
TASKS = yaml.safe_load((ROLE / "tasks" / "cpu_governor.yml").read_text())
BLOCK = {task["name"]: task for task in TASKS[2]["block"]}
POLICIES = ["/sys/devices/system/cpu/cpufreq/policy0", "/sys/devices/system/cpu/cpufreq/policy1"]


def _probe(*current: str, offered: str = "performance powersave") -> dict:
    """`find` of the policies and `cat` of each one's available governors, then each one's governor."""
    return {
        "__os_tuning_cpufreq_policies": {"matched": len(POLICIES), "files": [{"path": path} for path in POLICIES]},
        "__os_tuning_governors": {"stdout_lines": [offered] * len(POLICIES) + list(current)},
    }


def _true(condition: str, **variables) -> bool:
    return render("{{ (%s) | bool }}" % condition, **variables)  # noqa: UP031 jinja braces


def test_without_cpufreq_the_step_is_skipped_and_said_so():
    skipped, block = TASKS[1], TASKS[2]
    no_cpufreq = {"__os_tuning_cpufreq_policies": {"matched": 0, "files": []}, "__os_tuning_in_container": True}
    assert _true(skipped["when"], **no_cpufreq)
    assert not _true(block["when"], **no_cpufreq)
    message = render(skipped["ansible.builtin.set_fact"]["__os_tuning_governor_skipped"], **no_cpufreq)
    assert message.startswith("skipped: CPU governor: the kernel exposes no cpufreq policy here")
    assert "a container has no cpufreq of its own" in message


def test_the_probe_reads_every_policy_s_offered_and_current_governor():
    argv = render(
        BLOCK["Read the governors each policy offers and uses"]["ansible.builtin.command"]["argv"], **_probe()
    )
    assert argv == [
        "cat",
        *(f"{p}/scaling_available_governors" for p in POLICIES),
        *(f"{p}/scaling_governor" for p in POLICIES),
    ]


@pytest.mark.parametrize(("offered", "accepted"), [("performance powersave", True), ("schedutil powersave", False)])
def test_a_governor_the_kernel_does_not_offer_is_refused(offered, accepted):
    check = BLOCK["Fail when the governor is not offered"]
    variables = _probe("powersave", "powersave", offered=offered) | {"os_tuning_cpu_governor": "performance"}
    variables["__os_tuning_offered"] = render(check["vars"]["__os_tuning_offered"], **variables)
    assert _true(check["ansible.builtin.assert"]["that"], **variables) is accepted


@pytest.mark.parametrize(
    ("current", "applies"),
    [(("performance", "performance"), False), (("powersave", "performance"), True), (("powersave", "powersave"), True)],
)
def test_the_governor_is_set_only_when_some_cpu_differs(current, applies):
    task = BLOCK["Apply the governor now"]
    variables = _probe(*current) | {"os_tuning_cpu_governor": "performance"}
    variables["__os_tuning_current"] = render(task["vars"]["__os_tuning_current"], **variables)
    assert _true(task["when"], **variables) is applies
    assert render(task["ansible.builtin.command"]["argv"], **variables) == [
        "cpupower",
        "frequency-set",
        "--governor",
        "performance",
    ]


def test_the_boot_unit_sets_the_governor():
    template = (ROLE / "templates" / "clusterforge-cpu-governor.service.j2").read_text()
    unit = render(template, os_tuning_cpu_governor="performance", ansible_managed="Ansible managed")
    assert "ExecStart=/usr/bin/cpupower frequency-set --governor performance" in unit.splitlines()
    assert "WantedBy=multi-user.target" in unit.splitlines()

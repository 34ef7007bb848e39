"""lustre_client's per-OS packages and repositories, LNet networks, rendered lnet.conf, modprobe
options and mount units, and its guards, evaluated by Ansible's own templating."""

from __future__ import annotations

import configparser
import shutil
import subprocess

import pytest
import yaml
from ansible.plugins.loader import filter_loader

from tests.paths import PROJECT, SUPERPOD
from tests.unit.roles.harness import OS_FACTS, render, vars_file

ROLE = PROJECT / "roles" / "lustre_client"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
CLIENT_TASKS = yaml.safe_load((ROLE / "tasks" / "client.yml").read_text())
TEMPLATES = ROLE / "templates"
MANAGED = "Ansible managed"
filter_loader.add_directory(str(PROJECT / "plugins" / "filter"))


def _variables(facts: dict, **overrides) -> dict:
    """The role's defaults, vars/main.yml and the OS's vars file as a play on that OS sees them."""
    os_vars = yaml.safe_load(vars_file(ROLE, facts).read_text())
    return {
        **DEFAULTS,
        **ROLE_VARS,
        **os_vars,
        "ansible_facts": {**facts, "default_ipv4": {"interface": "eth0"}},
        "inventory_hostname": "node01",
        "ansible_managed": MANAGED,
        **overrides,
    }


def _value(name: str, facts: dict, **overrides):
    variables = _variables(facts, **overrides)
    return render(variables[name], **variables)


def _template(name: str, facts: dict, **overrides) -> str:
    variables = _variables(facts, **overrides)
    return render((TEMPLATES / name).read_text(), **variables)


@pytest.mark.parametrize(
    ("os", "packages", "repo"),
    [
        ("debian13", {"lustre-client-modules-dkms": "2.15.7-1", "lustre-client-utils": "2.15.7-1"}, ""),
        ("debian12", {"lustre-client-modules-dkms": "2.15.7-1", "lustre-client-utils": "2.15.7-1"}, ""),
        (
            "ubuntu2204",
            {"lustre-client-modules-dkms": "2.15.7-1", "lustre-client-utils": "2.15.7-1"},
            "https://downloads.whamcloud.com/public/lustre/lustre-2.15.7/ubuntu2204/client/",
        ),
        (
            "ubuntu2404",
            {"lustre-client-modules-dkms": "2.15.7-1", "lustre-client-utils": "2.15.7-1"},
            "https://downloads.whamcloud.com/public/lustre/lustre-2.15.7/ubuntu2404/client/",
        ),
        (
            "rhel9",
            {"kmod-lustre-client": "2.15.7-1.el9", "lustre-client": "2.15.7-1.el9"},
            "https://downloads.whamcloud.com/public/lustre/lustre-2.15.7/el9/client/",
        ),
        (
            "rocky9",
            {"kmod-lustre-client": "2.15.7-1.el9", "lustre-client": "2.15.7-1.el9"},
            "https://downloads.whamcloud.com/public/lustre/lustre-2.15.7/el9/client/",
        ),
    ],
)
def test_packages_and_repository_per_os(os, packages, repo):
    assert _value("lustre_client_packages", OS_FACTS[os]) == packages
    assert _value("lustre_client_repo_url", OS_FACTS[os]) == repo


def test_the_other_variant_names_its_packages():
    kernel = OS_FACTS["ubuntu2204"]["kernel"]
    assert _value(
        "lustre_client_packages", OS_FACTS["ubuntu2204"], lustre_client_variant="kmod", lustre_client_kmod_kernel=kernel
    ) == {f"lustre-client-modules-{kernel}": "2.15.7-1", "lustre-client-utils": "2.15.7-1"}
    assert _value("lustre_client_packages", OS_FACTS["rhel9"], lustre_client_variant="dkms") == {
        "lustre-client-dkms": "2.15.7-1.el9",
        "lustre-client": "2.15.7-1.el9",
    }


def test_the_debian_path_goes_through_apt_vendor_repository_with_its_own_pin_file():
    tasks = yaml.safe_load((ROLE / "tasks" / "install-Debian.yml").read_text())
    included = tasks[0]["vars"]
    assert tasks[0]["ansible.builtin.include_role"]["name"] == "apt_vendor_repository"
    assert included["apt_vendor_repository_preferences_name"] == "clusterforge-lustre-client"
    assert included["apt_vendor_repository_suites"] == ["/"]
    rhel = yaml.safe_load((ROLE / "tasks" / "install-RedHat.yml").read_text())[0]
    assert rhel["ansible.builtin.include_role"]["name"] == "dnf_vendor_repository"
    assert set(rhel["vars"]) == {
        "dnf_vendor_repository_caller",
        "dnf_vendor_repository_fingerprint_variable",
        "dnf_vendor_repository_label",
        "dnf_vendor_repository_name",
        "dnf_vendor_repository_url",
        "dnf_vendor_repository_key_url",
        "dnf_vendor_repository_key_fingerprint",
        "dnf_vendor_repository_packages",
        "dnf_vendor_repository_versionlock",
        "dnf_vendor_repository_module_stream",
    }


def test_lnet_falls_back_to_tcp0_on_the_default_interface_without_a_topology():
    assert _value("lustre_client_lnet_networks", OS_FACTS["debian13"]) == [{"net": "tcp0", "interfaces": ["eth0"]}]


def test_lnet_uses_o2ib0_on_the_storage_fabrics_infiniband_netdevs_from_the_topology():
    facts = OS_FACTS["ubuntu2204"]
    on_rails = _value(
        "lustre_client_lnet_networks",
        facts,
        clusterforge_topology_file=str(SUPERPOD),
        inventory_hostname="dgx001",
        lustre_client_storage_fabric="compute",
    )
    assert on_rails == [
        {
            "net": "o2ib0",
            "interfaces": [
                "ibp24s0",
                "ibp64s0",
                "ibp79s0",
                "ibp94s0",
                "ibp154s0",
                "ibp192s0",
                "ibp206s0",
                "ibp220s0",
            ],
        }
    ]
    # The example has no storage fabric: the default ("storage") finds no HCA there, so tcp0.
    no_storage = _value(
        "lustre_client_lnet_networks", facts, clusterforge_topology_file=str(SUPERPOD), inventory_hostname="dgx001"
    )
    assert no_storage == [{"net": "tcp0", "interfaces": ["eth0"]}]


def test_rendered_lnet_conf_is_what_lnetctl_import_reads():
    networks = [{"net": "o2ib0", "interfaces": ["ib0", "ib1"]}, {"net": "tcp0", "interfaces": ["eth0"]}]
    text = _template("lnet.conf.j2", OS_FACTS["debian13"], lustre_client_lnet_networks=networks)
    assert text.startswith(f"# {MANAGED}\n")
    assert yaml.safe_load(text) == {
        "net": [
            {"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "ib0"}}, {"interfaces": {0: "ib1"}}]},
            {"net type": "tcp0", "local NI(s)": [{"interfaces": {0: "eth0"}}]},
        ]
    }
    default = _template("lnet.conf.j2", OS_FACTS["debian13"])
    assert yaml.safe_load(default) == {"net": [{"net type": "tcp0", "local NI(s)": [{"interfaces": {0: "eth0"}}]}]}


def test_rendered_modprobe_options_name_each_network_and_its_interfaces():
    networks = [{"net": "o2ib0", "interfaces": ["ib0", "ib1"]}, {"net": "tcp0", "interfaces": ["eth0"]}]
    text = _template("lnet-modprobe.conf.j2", OS_FACTS["debian13"], lustre_client_lnet_networks=networks)
    assert text.splitlines()[-1] == 'options lnet networks="o2ib0(ib0,ib1),tcp0(eth0)"'


MOUNTS = [
    {"fsname": "scratch", "mgs_nids": ["10.10.0.1@o2ib0", "10.10.0.2@o2ib0"], "mount_point": "/lustre/scratch-1/"},
    {"fsname": "home", "mgs_nids": ["mgs@tcp"], "mount_point": "/home", "options": ["_netdev", "ro", "x-systemd.a=b"]},
]


def test_mount_table_derives_source_unit_name_and_kernel_options():
    table = _value("__lustre_client_mount_table", OS_FACTS["debian13"], lustre_client_mounts=MOUNTS)
    assert table[0] == {
        "fsname": "scratch",
        "mgs_nids": ["10.10.0.1@o2ib0", "10.10.0.2@o2ib0"],
        "mount_point": "/lustre/scratch-1",
        "source": "10.10.0.1@o2ib0:10.10.0.2@o2ib0:/scratch",
        "options": ["_netdev", "flock", "noatime"],
        "kernel_options": ["flock", "noatime"],
        "unit": "lustre-scratch\\x2d1.mount",
    }
    assert table[1]["kernel_options"] == ["ro"]
    assert table[1]["unit"] == "home.mount"
    if shutil.which("systemd-escape"):
        for entry in table:
            escaped = subprocess.run(
                ["systemd-escape", "--path", "--suffix=mount", entry["mount_point"]],
                capture_output=True,
                text=True,
                check=True,
            )
            assert escaped.stdout.strip() == entry["unit"]


def test_rendered_mount_unit():
    table = _value("__lustre_client_mount_table", OS_FACTS["debian13"], lustre_client_mounts=MOUNTS)
    text = _template("lustre.mount.j2", OS_FACTS["debian13"], item=table[0])
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str
    unit.read_string(text)
    assert dict(unit["Mount"]) == {
        "What": "10.10.0.1@o2ib0:10.10.0.2@o2ib0:/scratch",
        "Where": "/lustre/scratch-1",
        "Type": "lustre",
        "Options": "_netdev,flock,noatime",
    }
    assert unit["Unit"]["Requires"] == "lnet.service"
    assert unit["Unit"]["After"] == "network-online.target lnet.service"
    assert unit["Install"]["WantedBy"] == "remote-fs.target"


def test_stripe_table_applies_the_defaults():
    dirs = ["/lustre/scratch-1/datasets/", {"path": "/home/ckpt", "count": 4, "size": "4M", "mode": "1777"}]
    assert _value("__lustre_client_stripe_table", OS_FACTS["debian13"], lustre_client_stripe_dirs=dirs) == [
        {"path": "/lustre/scratch-1/datasets", "count": 8, "size": "1M", "mode": "0755"},
        {"path": "/home/ckpt", "count": 4, "size": "4M", "mode": "1777"},
    ]


def _mount_ok(item: dict) -> bool:
    checks = next(t for t in CLIENT_TASKS if t["name"] == "Validate each mount")["ansible.builtin.assert"]["that"]
    return all(render("{{ " + check + " }}", item=item) for check in checks)


@pytest.mark.parametrize(
    ("item", "ok"),
    [
        (MOUNTS[0], True),
        (MOUNTS[1], True),
        ({**MOUNTS[0], "mgs_nids": "10.10.0.1@o2ib0"}, False),
        ({**MOUNTS[0], "mgs_nids": ["10.10.0.1"]}, False),
        ({**MOUNTS[0], "mgs_nids": ["10.10.0.1@gni"]}, False),
        ({**MOUNTS[0], "fsname": "too_long_name"}, False),
        ({**MOUNTS[0], "mount_point": "relative/path"}, False),
        ({**MOUNTS[0], "options": "flock"}, False),
        ({"fsname": "x", "mgs_nids": ["a@tcp"]}, False),
    ],
)
def test_mount_entries_are_validated(item, ok):
    assert _mount_ok(item) is ok


def test_no_mounts_installs_nothing_and_says_so():
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    client = next(t for t in main if t.get("ansible.builtin.include_tasks") == "client.yml")
    assert client["when"] == "lustre_client_mounts | length > 0"
    report = next(t for t in main if t["name"] == "Start the report of what is not applied")
    value = report["ansible.builtin.set_fact"]["__lustre_client_report"]
    assert render(value, lustre_client_mounts=[]) == ["skipped: Lustre client: no lustre_client_mounts configured"]
    assert render(value, lustre_client_mounts=MOUNTS) == []
    # Nothing before the include installs or writes anything.
    assert [next(k for k in t if k.startswith("ansible.builtin.")) for t in main] == [
        "ansible.builtin.assert",
        "ansible.builtin.set_fact",
        "ansible.builtin.include_tasks",
        "ansible.builtin.debug",
    ]


def test_an_mgs_that_does_not_answer_is_refused_naming_its_nids_and_mount_point():
    tasks = yaml.safe_load((ROLE / "tasks" / "mounts.yml").read_text())
    refuse = next(t for t in tasks if t["name"] == "Refuse to mount a file system whose MGS does not answer")
    variables = {
        **refuse["vars"],
        "lustre_client_mgs_timeout": 5,
        "ansible_check_mode": False,
        "__lustre_client_mgs": {
            "results": [
                {"item": "10.0.0.1@tcp", "rc": 124},
                {"item": "10.10.0.1@o2ib0", "rc": 1},
                {"item": "10.0.0.2@tcp", "rc": 0},
            ]
        },
        "__lustre_client_pending": [
            {"fsname": "home", "mgs_nids": ["10.0.0.1@tcp", "10.10.0.1@o2ib0"], "mount_point": "/home"},
            {"fsname": "work", "mgs_nids": ["10.0.0.1@tcp", "10.0.0.2@tcp"], "mount_point": "/work"},
        ],
    }
    assert [m["fsname"] for m in render(variables["__lustre_client_silent"], **variables)] == ["home"]
    assert render(refuse["ansible.builtin.assert"]["fail_msg"], **variables) == (
        "lustre_client: the MGS of home does not answer at 10.0.0.1@tcp, 10.10.0.1@o2ib0 (10.0.0.1@tcp: no TCP"
        " connection to port 988; 10.10.0.1@o2ib0: lctl ping failed, within 5 s): not mounting /home"
    )


def test_a_check_run_without_lctl_yet_does_not_refuse_o2ib_nids():
    tasks = yaml.safe_load((ROLE / "tasks" / "mounts.yml").read_text())
    refuse = next(t for t in tasks if t["name"] == "Refuse to mount a file system whose MGS does not answer")
    variables = {
        **refuse["vars"],
        "__lustre_client_mgs": {"results": [{"item": "10.10.0.1@o2ib0", "rc": 127}]},
        "__lustre_client_pending": [{"fsname": "home", "mgs_nids": ["10.10.0.1@o2ib0"], "mount_point": "/home"}],
    }
    assert render(variables["__lustre_client_silent"], ansible_check_mode=True, **variables) == []
    assert len(render(variables["__lustre_client_silent"], ansible_check_mode=False, **variables)) == 1

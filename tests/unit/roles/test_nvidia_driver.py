"""nvidia_driver: which vars/<OS>.yml a host reads, and the package names and repository URLs
the role's public defaults resolve to on each supported release, source and module flavour."""

from __future__ import annotations

import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from jinja2 import StrictUndefined
from jinja2.nativetypes import NativeEnvironment

from tests.paths import PROJECT, load_plugin
from tests.unit.roles.harness import OS_FACTS as FACTS
from tests.unit.roles.harness import vars_file

ROLE = PROJECT / "roles" / "nvidia_driver"
ENV = NativeEnvironment(undefined=StrictUndefined)
_trusted = load_plugin("plugins/inventory/topology.py")._trusted


def _vars_file(facts: dict):
    return vars_file(ROLE, facts)


def _load(path):
    return yaml.safe_load(path.read_text()) or {}


def _render(value, context):
    """Render templates in value; context (a lazy mapping) is the templates' variables as is."""
    if isinstance(value, str) and "{{" in value:
        whole = re.fullmatch(r"\s*\{\{(.*)\}\}\s*", value, flags=re.DOTALL)
        if whole and "{{" not in whole.group(1):
            # One expression keeps its type, as in Ansible ("550" stays a string).
            template = ENV.compile_expression(whole.group(1), undefined_to_none=False)._template
            ctx = template.new_context(context, shared=True)
            for _ in template.root_render_func(ctx):
                pass
            return ctx.vars["result"]
        template = ENV.from_string(value)
        return ENV.concat(template.root_render_func(template.new_context(context, shared=True)))
    if isinstance(value, list):
        return [_render(v, context) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, context) for k, v in value.items()}
    return value


class _Vars(dict):
    """Role variables resolved when first read, as Ansible does."""

    def __init__(self, raw: dict) -> None:
        super().__init__()
        self.raw = raw

    def __contains__(self, name) -> bool:
        return name in self.raw

    def __missing__(self, name):
        if name not in self.raw:
            raise KeyError(name)
        self[name] = _render(self.raw[name], self)
        return self[name]


def resolve(host: str, **overrides) -> _Vars:
    """Extra vars over role defaults over vars/<OS>.yml and vars/main.yml."""
    facts = FACTS[host]
    raw = {**_load(ROLE / "vars" / "main.yml"), **_load(_vars_file(facts)), **_load(ROLE / "defaults" / "main.yml")}
    raw.update(overrides, ansible_facts=facts)
    return _Vars(raw)


def test_every_supported_release_has_its_vars_file_and_nothing_else_is_supported():
    supported = _load(ROLE / "vars" / "main.yml")["__nvidia_driver_supported"]
    assert supported == {"Debian": ["12", "13"], "Ubuntu": ["22", "24"], "RedHat": ["9"], "Rocky": ["9"]}
    picked = {host: _vars_file(facts).name for host, facts in FACTS.items()}
    assert picked == {
        "debian13": "Debian-13.yml",
        "debian12": "Debian-12.yml",
        "ubuntu2204": "Ubuntu.yml",
        "ubuntu2404": "Ubuntu.yml",
        "rhel9": "RedHat.yml",
        "rocky9": "RedHat.yml",
    }


def test_every_os_file_defines_the_same_names():
    names = {p.name: set(_load(p)) for p in (ROLE / "vars").glob("*.yml") if p.name != "main.yml"}
    assert len({frozenset(n) for n in names.values()}) == 1, names


def test_debian_13_installs_the_550_driver_from_non_free():
    v = resolve("debian13")
    assert v["nvidia_driver_branch"] == "550"
    assert v["nvidia_driver_version"] == "550.163.01-2"
    assert v["nvidia_driver_source"] == "distribution"
    assert {"nvidia-smi", "libcuda1", "libnvidia-ml1"} <= set(v["nvidia_driver_packages"])
    assert v["nvidia_driver_module_packages"] == ["nvidia-kernel-dkms", "nvidia-kernel-support", "firmware-nvidia-gsp"]
    assert v["nvidia_driver_other_packages"] == {"nvidia-persistenced": "550.163.01-1"}
    assert v["nvidia_driver_distribution_url"] == "http://deb.debian.org/debian"
    assert v["nvidia_driver_distribution_suites"] == ["trixie", "trixie-updates"]
    assert v["nvidia_driver_distribution_components"] == ["contrib", "non-free", "non-free-firmware"]
    assert v["nvidia_driver_distribution_keyring"] == "/usr/share/keyrings/debian-archive-keyring.gpg"
    assert v["nvidia_driver_module_name"] == "nvidia-current"


def test_debian_13_open_modules():
    v = resolve("debian13", nvidia_driver_kernel_module="open")
    assert v["nvidia_driver_module_packages"][0] == "nvidia-open-kernel-dkms"


def test_debian_12_ships_535_and_nvidia_s_debian12_repository():
    v = resolve("debian12")
    assert v["nvidia_driver_branch"] == "535"
    assert v["nvidia_driver_version"].startswith("535.")
    v = resolve("debian12", nvidia_driver_source="nvidia", nvidia_driver_branch="550")
    base = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    assert v["nvidia_driver_cuda_repo_url"] == base
    assert v["nvidia_driver_cuda_repo_key_url"] == base + "3bf863cc.pub"
    assert v["nvidia_driver_packages"] == ["cuda-drivers-550", "nvidia-driver-cuda"]
    assert v["nvidia_driver_module_packages"] == ["nvidia-kernel-dkms"]
    # NVIDIA's packages name the module nvidia; Debian's nvidia-current.
    assert v["nvidia_driver_module_name"] == "nvidia"
    assert resolve("debian12")["nvidia_driver_module_name"] == "nvidia-current"


@pytest.mark.parametrize(
    ("host", "tag", "release"), [("ubuntu2204", "ubuntu2204", "jammy"), ("ubuntu2404", "ubuntu2404", "noble")]
)
def test_ubuntu_server_packages_and_nvidia_repository(host, tag, release):
    v = resolve(host)
    assert v["nvidia_driver_packages"] == [
        "nvidia-headless-no-dkms-550-server",
        "nvidia-utils-550-server",
        "libnvidia-compute-550-server",
        "nvidia-compute-utils-550-server",
    ]
    assert v["nvidia_driver_module_packages"] == ["nvidia-dkms-550-server"]
    assert resolve(host, nvidia_driver_kernel_module="open")["nvidia_driver_module_packages"] == [
        "nvidia-dkms-550-server-open"
    ]
    assert v["nvidia_driver_distribution_suites"] == [release, f"{release}-updates", f"{release}-security"]
    assert v["nvidia_driver_distribution_keyring"] == "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
    n = resolve(host, nvidia_driver_source="nvidia", nvidia_driver_branch="570")
    assert (
        n["nvidia_driver_cuda_repo_url"].strip()
        == f"https://developer.download.nvidia.com/compute/cuda/repos/{tag}/x86_64/"
    )
    assert n["nvidia_driver_cuda_repo_key_url"].strip().endswith(f"/{tag}/x86_64/3bf863cc.pub")
    assert "nvidia-utils-570" in n["nvidia_driver_packages"]
    # Fabric Manager is the nvidia_fabricmanager role's, on NVSwitch node types only.
    assert not any("fabricmanager" in name for name in n["nvidia_driver_packages"])
    assert n["nvidia_driver_module_packages"] == ["nvidia-dkms-570"]


RHEL_REPO = "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
# NVIDIA's RPM key D42D0685, as github.com/NVIDIA/cuda-repo-management SIGNATURES.md prints it.
NVIDIA_RPM_KEY = "610C7B14E068A878070DA4E99CD0A493D42D0685"
RHEL_USERSPACE = [
    "nvidia-driver",
    "nvidia-driver-libs",
    "nvidia-driver-cuda",
    "nvidia-driver-cuda-libs",
    "nvidia-kmod-common",
    "nvidia-persistenced",
]
RHEL_TASKS = yaml.safe_load((ROLE / "tasks" / "install-RedHat.yml").read_text())
DNF_ROLE = PROJECT / "roles" / "dnf_vendor_repository"


def ansible(host: str, expression: str, **overrides):
    """expression as Ansible templates it on host (role vars, OS vars, defaults, overrides)."""
    facts = FACTS[host]
    raw = {**_load(ROLE / "vars" / "main.yml"), **_load(_vars_file(facts)), **_load(ROLE / "defaults" / "main.yml")}
    raw.update(overrides, ansible_facts=facts)
    return Templar(loader=DataLoader(), variables=_trusted(raw)).template(_trusted(expression))


def _rhel_task(name: str) -> dict:
    return next(task for task in RHEL_TASKS if task["name"] == name)


def _pinned(host: str, with_module: bool, **overrides) -> dict:
    expression = _rhel_task("Name the pinned packages")["ansible.builtin.set_fact"]["__nvidia_driver_pinned"]
    return ansible(host, expression, __nvidia_driver_with_module=with_module, **overrides)


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
def test_rhel_family_uses_nvidia_s_rhel9_repository(host):
    v = resolve(host)
    assert v["nvidia_driver_source"] == "nvidia"
    assert v["nvidia_driver_branch"] == "550"
    assert v["nvidia_driver_version"] == "550.163.01-1.el9"
    assert v["nvidia_driver_cuda_repo_url"].strip() == RHEL_REPO
    assert v["nvidia_driver_cuda_repo_key_url"].strip() == RHEL_REPO + "D42D0685.pub"
    assert v["nvidia_driver_cuda_repo_key_fingerprint"] == NVIDIA_RPM_KEY
    assert v["nvidia_driver_packages"] == RHEL_USERSPACE
    assert v["nvidia_driver_module_packages"] == ["kmod-nvidia-latest-dkms"]
    assert resolve(host, nvidia_driver_kernel_module="open")["nvidia_driver_module_packages"] == [
        "kmod-nvidia-open-dkms"
    ]
    assert ansible(host, "{{ __nvidia_driver_dnf_repo_name }}") == "cuda-rhel9-x86_64"
    assert ansible(host, "{{ nvidia_driver_other_packages }}") == {}


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
@pytest.mark.parametrize(
    ("flavour", "branch", "stream"),
    [
        ("proprietary", "550", "nvidia-driver:550-dkms"),
        ("open", "550", "nvidia-driver:550-open"),
        ("proprietary", "570", "nvidia-driver:570-dkms"),
        ("open", "570", "nvidia-driver:570-open"),
    ],
)
def test_rhel_module_stream_per_kernel_module_flavour(host, flavour, branch, stream):
    overrides = {"nvidia_driver_kernel_module": flavour, "nvidia_driver_branch": branch}
    assert ansible(host, "{{ __nvidia_driver_dnf_module_stream }}", **overrides) == stream
    include = _rhel_task("Add NVIDIA's CUDA repository and install the pinned, versionlocked driver packages")
    assert include["vars"]["dnf_vendor_repository_module_stream"] == "{{ __nvidia_driver_dnf_module_stream }}"


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
@pytest.mark.parametrize(
    ("flavour", "with_module", "module_package"),
    [
        ("proprietary", True, "kmod-nvidia-latest-dkms"),
        ("open", True, "kmod-nvidia-open-dkms"),
        ("proprietary", False, None),  # no GPU: no module package
    ],
)
def test_rhel_name_version_release_specs(host, flavour, with_module, module_package):
    pinned = _pinned(host, with_module, nvidia_driver_kernel_module=flavour)
    specs = Templar(loader=DataLoader(), variables=_trusted({"dnf_vendor_repository_packages": pinned})).template(
        _trusted(yaml.safe_load((DNF_ROLE / "vars" / "main.yml").read_text())["__dnf_vendor_repository_specs"])
    )
    expected = [f"{name}-550.163.01-1.el9" for name in RHEL_USERSPACE]
    expected += [f"{module_package}-550.163.01-1.el9"] if module_package else []
    assert specs == expected


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
def test_rhel_version_move_moves_every_package(host):
    pinned = _pinned(host, True, nvidia_driver_version="550.144.03-1.el9")
    assert set(pinned.values()) == {"550.144.03-1.el9"}


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
def test_rhel_pins_pass_dnf_vendor_repository_validation(host):
    """What nvidia_driver hands over is accepted by dnf_vendor_repository's own input check."""
    include = _rhel_task("Add NVIDIA's CUDA repository and install the pinned, versionlocked driver packages")
    handed = {k: ansible(host, v, __nvidia_driver_pinned=_pinned(host, True)) for k, v in include["vars"].items()}
    assert handed["dnf_vendor_repository_name"] == "cuda-rhel9-x86_64"
    assert handed["dnf_vendor_repository_url"].strip() == RHEL_REPO
    assert handed["dnf_vendor_repository_module_stream"] == "nvidia-driver:550-dkms"
    assert handed["dnf_vendor_repository_versionlock"] is True
    validate = next(
        t
        for t in yaml.safe_load((DNF_ROLE / "tasks" / "main.yml").read_text())
        if t["name"] == "Validate the role's inputs"
    )
    variables = {**yaml.safe_load((DNF_ROLE / "vars" / "main.yml").read_text()), **handed, **validate["vars"]}
    templar = Templar(loader=DataLoader(), variables=_trusted(variables))
    for condition in validate["ansible.builtin.assert"]["that"]:
        assert templar.template(_trusted("{{ " + condition + " }}")) is True, condition


@pytest.mark.parametrize("host", ["rhel9", "rocky9"])
def test_rhel_distribution_source_is_refused(host):
    refuse = _rhel_task("Refuse the distribution source on the RHEL family")["ansible.builtin.assert"]
    assert ansible(host, "{{ " + refuse["that"] + " }}", nvidia_driver_source="distribution") is False
    assert ansible(host, "{{ " + refuse["that"] + " }}") is True


@pytest.mark.parametrize(("host", "tool"), [("rhel9", "dracut"), ("debian13", "update-initramfs")])
def test_initramfs_tool_per_os_family(host, tool):
    assert ansible(host, "{{ __nvidia_driver_initramfs_argv[0] | basename }}") == tool


@pytest.mark.parametrize("host", sorted(FACTS))
def test_pinned_fingerprints_are_40_hex_digits_or_not_pinned_yet(host):
    v = resolve(host)
    for name in ("nvidia_driver_distribution_key_fingerprint", "nvidia_driver_cuda_repo_key_fingerprint"):
        assert re.fullmatch(r"([0-9A-F]{40})?", v[name]), (name, v[name])
    if FACTS[host]["os_family"] == "Debian":
        assert len(v["nvidia_driver_distribution_key_fingerprint"]) == 40
        assert v["nvidia_driver_cuda_repo_key_fingerprint"] in ("", "EB693B3035CD5710E231E123A4B469963BF863CC")
    else:
        assert v["nvidia_driver_cuda_repo_key_fingerprint"] == NVIDIA_RPM_KEY

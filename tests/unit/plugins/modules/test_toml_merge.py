"""toml_merge: settings merged into a TOML file users also edit (containerd's config.toml)."""

from __future__ import annotations

import tomllib

import pytest
from ansible.module_utils.testing import patch_module_args

from tests.unit.plugins.modules.conftest import load_module

toml_merge = load_module("toml_merge")

DEBIAN_CONFIG = """version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
"""

CRI = "io.containerd.grpc.v1.cri"
SETTINGS = {
    "plugins": {
        CRI: {
            "sandbox_image": "registry.k8s.io/pause:3.10",
            "registry": {"config_path": "/etc/containerd/certs.d"},
            "containerd": {
                "runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}}
            },
        }
    }
}


def test_merge_keeps_existing_tables_and_replaces_leaves():
    base = {"a": {"keep": 1, "set": 1, "list": [1, 2]}, "other": "x"}
    merged = toml_merge.merge(base, {"a": {"set": 2, "list": [3]}, "new": {"k": True}})
    assert merged == {"a": {"keep": 1, "set": 2, "list": [3]}, "other": "x", "new": {"k": True}}
    assert base["a"]["set"] == 1


def test_dumps_round_trips_through_tomllib():
    data = toml_merge.merge(tomllib.loads(DEBIAN_CONFIG), SETTINGS)
    data["arr"] = [{"name": "a", "x": [1, "two"]}, {"name": "b"}]
    data["empty"] = {}
    data["quoted key"] = 'va"lue'
    assert tomllib.loads(toml_merge.dumps(data)) == data


def test_dumps_writes_dotted_names_quoted():
    text = toml_merge.dumps({"plugins": {CRI: {"containerd": {"default_runtime_name": "runc"}}}})
    assert '[plugins."io.containerd.grpc.v1.cri".containerd]' in text
    assert 'default_runtime_name = "runc"' in text


def _run(monkeypatch, args: dict, check_mode: bool = False) -> dict:
    results = {}

    def exit_json(self, **kwargs):
        results.update(kwargs)
        raise SystemExit(0)

    def fail_json(self, **kwargs):
        results.update(kwargs, failed=True)
        raise SystemExit(1)

    monkeypatch.setattr(toml_merge.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(toml_merge.AnsibleModule, "fail_json", fail_json)
    with patch_module_args({**args, "_ansible_check_mode": check_mode}), pytest.raises(SystemExit):
        toml_merge.main()
    return results


def test_module_merges_into_the_debian_file_once(monkeypatch, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(DEBIAN_CONFIG)
    path.chmod(0o640)
    first = _run(monkeypatch, {"path": str(path), "settings": SETTINGS})
    assert first["changed"] is True
    written = tomllib.loads(path.read_text())
    assert written["plugins"][CRI]["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": "/etc/cni/net.d"}
    assert written["plugins"][CRI]["containerd"]["runtimes"]["runc"]["options"] == {"SystemdCgroup": True}
    assert written["plugins"]["io.containerd.internal.v1.opt"] == {"path": "/var/lib/containerd/opt"}
    assert path.stat().st_mode & 0o777 == 0o640
    second = _run(monkeypatch, {"path": str(path), "settings": SETTINGS})
    assert second["changed"] is False


def test_check_mode_writes_nothing_and_a_missing_file_is_created(monkeypatch, tmp_path):
    path = tmp_path / "new.toml"
    assert _run(monkeypatch, {"path": str(path), "settings": {"version": 2}}, check_mode=True)["changed"] is True
    assert not path.exists()
    _run(monkeypatch, {"path": str(path), "settings": {"version": 2}})
    assert path.read_text() == "version = 2\n"
    assert path.stat().st_mode & 0o777 == 0o644


def test_invalid_toml_is_refused_with_the_path(monkeypatch, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("version = = 2\n")
    result = _run(monkeypatch, {"path": str(path), "settings": {"version": 2}})
    assert result["failed"] and f"{path} is not valid TOML" in result["msg"]

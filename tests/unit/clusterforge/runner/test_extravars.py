"""-e values reach Ansible as ansible-playbook takes them, in private files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from clusterforge.errors import UsageError
from clusterforge.runner import extravars


def test_a_file_is_named_absolutely_and_not_read(tmp_path, monkeypatch):
    # Content Ansible reads (a date, a set) but a JSON round trip through clusterforge would not.
    (tmp_path / "vars.yml").write_text("when: 2024-01-02\nnames: !!set {a: null}\n")
    monkeypatch.chdir(tmp_path)
    assert extravars.check(["@vars.yml"]) == [f"@{tmp_path / 'vars.yml'}"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("@missing.yml", "-e @missing.yml: extra variables file not found"),
        ("./vars.yml", r"a file name needs '@' before it \(-e @./vars.yml\)"),
        ("novalue", "-e #2: a word without '='; expected KEY=VALUE pairs"),
        ("a=1 b", "-e #2: a word without '='"),
        ("a='unbalanced", "-e #2: unbalanced quotes"),
    ],
)
def test_what_ansible_playbook_would_refuse_is_named(tmp_path, monkeypatch, value, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=message) as refused:
        extravars.check(["ok=1", value])
    assert "unbalanced'" not in str(refused.value)  # the value itself may be a secret


def test_inline_values_go_in_private_files_in_order(tmp_path):
    given = tmp_path / "given" / "vars.yml"
    given.parent.mkdir()
    given.write_text("d: 4\n")
    private = tmp_path / "private"
    private.mkdir()
    values = extravars.check(["a=1 b='two words'", '{"c": [1, 2]}', f"@{given}"])
    args = extravars.write(values, {"rolling_update_serial": "10%"}, private)
    files = [Path(arg[1:]) for arg in args[1::2]]
    assert args[::2] == ["--extra-vars"] * 4
    assert files[2] == given
    assert json.loads(files[0].read_text()) == {"a": "1", "b": "two words"}
    assert yaml.safe_load(files[1].read_text()) == {"c": [1, 2]}
    assert json.loads(files[3].read_text()) == {"rolling_update_serial": "10%"}  # clusterforge's own last
    for path in (files[0], files[1], files[3]):
        assert path.parent == private and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_no_values_no_arguments(tmp_path):
    assert extravars.write([], {}, tmp_path) == []
    assert list(tmp_path.iterdir()) == []

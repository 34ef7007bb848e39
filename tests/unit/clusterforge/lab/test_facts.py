"""clusterforge.lab.facts: where the project's ansible.cfg caches facts, and forgetting the lab
hosts' cached facts without touching any other host's."""

from __future__ import annotations

from pathlib import Path

from clusterforge.lab import facts


def _project(tmp_path: Path, connection: str | None) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    line = f"fact_caching_connection = {connection}\n" if connection is not None else ""
    (project / "ansible.cfg").write_text(f"[defaults]\nfact_caching = jsonfile\n{line}")
    return project


def test_the_cache_directory_is_ansible_cfgs_unless_the_environment_names_another(tmp_path, monkeypatch):
    monkeypatch.delenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert facts.fact_cache_dir(_project(tmp_path, "~/.cache/cf/facts")) == tmp_path / "home/.cache/cf/facts"
    assert facts.fact_cache_dir(_project(tmp_path / "a", "cache/facts")) == tmp_path / "a/project/cache/facts"
    assert facts.fact_cache_dir(_project(tmp_path / "b", None)) is None
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", str(tmp_path / "elsewhere"))
    assert facts.fact_cache_dir(_project(tmp_path / "c", "cache/facts")) == tmp_path / "elsewhere"


def test_the_project_names_where_it_caches_facts(monkeypatch):
    monkeypatch.delenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", raising=False)
    from tests.paths import PROJECT

    assert facts.fact_cache_dir(PROJECT) == Path("~/.cache/clusterforge/facts").expanduser()


def test_only_the_named_hosts_facts_are_forgotten(tmp_path):
    cache = tmp_path / "facts"
    cache.mkdir()
    names = ["s1_head01", "s1_node01", "node02", "s1_node010", "s1_xnode01", "s1_other", "s12_node01"]
    for name in names:
        (cache / name).write_text("{}")
    removed = facts.forget(["head01", "node01", "node02"], cache)
    assert removed == ["node02", "s12_node01", "s1_head01", "s1_node01"]
    assert sorted(path.name for path in cache.iterdir()) == ["s1_node010", "s1_other", "s1_xnode01"]
    assert facts.forget(["head01"], cache) == []
    assert facts.forget(["head01"], tmp_path / "missing") == []
    assert facts.forget(["head01"], None) == []

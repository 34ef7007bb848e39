"""`-e` as ansible-playbook takes it (@FILE, KEY=VALUE ..., inline YAML or JSON), handed over
in files: extra variables may hold secrets, which must not show in `ps` or in the command line
that ansible-runner records (artifacts/<id>/command)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clusterforge.errors import UsageError

_VAULT_HEADER = b"$ANSIBLE_VAULT;"


def check(values: list[str]) -> list[str]:
    """The -e values ready for Ansible: files named absolutely (ansible-playbook runs from the
    project directory) and checked to exist; Ansible itself reads and judges their content."""
    checked = []
    for number, value in enumerate(values, start=1):
        if value.startswith("@"):
            path = Path(value[1:]).expanduser()
            if not path.is_file():
                raise UsageError(
                    f"-e {value}: extra variables file not found (expected @FILE naming a YAML or JSON file)"
                )
            _readable(path.resolve())
            checked.append(f"@{path.resolve()}")
        elif value.startswith(("/", ".")):
            raise UsageError(f"-e {value}: a file name needs '@' before it (-e @{value})")
        elif value.strip():
            _inline(value, f"-e #{number}")  # refused now, rather than by Ansible once the run started
            checked.append(value)
    return checked


def _readable(path: Path) -> None:
    """Read the file as ansible-playbook will, so a file it cannot read is named now. Read during
    the inventory's parsing, its error was reported as "failed to parse inventory source"."""
    with open(path, "rb") as file:
        if file.read(len(_VAULT_HEADER)) == _VAULT_HEADER:
            return  # vault-encrypted: only ansible-playbook, with the vault password, reads it
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader

    try:
        data = DataLoader().load_from_file(str(path))
    except AnsibleError as exc:
        said = (getattr(exc, "message", "") or str(exc)).strip().splitlines()
        raise UsageError(
            f"-e @{path}: Ansible cannot read this extra variables file: {said[0] if said else exc}"
        ) from None
    except RecursionError:
        raise UsageError(f"-e @{path}: nested too deeply for Ansible to read this extra variables file") from None
    if data is not None and not isinstance(data, dict):
        got = "a list" if isinstance(data, list) else "a single value"
        raise UsageError(f"-e @{path}: expected a mapping of variable names to values, got {got}")


def write(values: list[str], internal: dict, private_dir: Path, defaults: dict | None = None) -> list[str]:
    """--extra-vars arguments for ansible-playbook, in the order given (later ones win, as in
    ansible-playbook); `defaults` (clusterforge's choices the user may override with -e) come
    first, `internal` (clusterforge's own options) last. Inline values are written to files in
    private_dir, which the caller removes after the run."""
    args = []
    for number, value in enumerate([defaults or {}, *values, internal]):
        if isinstance(value, str) and value.startswith("@"):
            args += ["--extra-vars", value]
        elif value:
            path = private_dir / f"extra-vars-{number}.yml"
            text = json.dumps(value) if isinstance(value, dict) else _as_file_text(value)
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as file:
                file.write(text)
            args += ["--extra-vars", f"@{path}"]
    return args


def _as_file_text(value: str) -> str:
    """Inline YAML or JSON is already a file's content; KEY=VALUE pairs become JSON, as
    ansible-playbook parses them (values stay strings)."""
    if value.startswith(("{", "[")):
        return value
    return json.dumps(_inline(value, "-e"))


def _inline(value: str, label: str) -> dict | None:
    """KEY=VALUE pairs parsed as ansible-playbook parses them. Errors name the argument by its
    place, not its text: the value may be a secret."""
    if value.startswith(("{", "[")):
        return None  # YAML: Ansible's loader judges it, with its own error
    from ansible.errors import AnsibleError
    from ansible.parsing.splitter import parse_kv

    expected = (
        "expected KEY=VALUE pairs (quote values with spaces: KEY='a b'), inline YAML or JSON in braces "
        "as ansible-playbook reads them ('{key: value}', '{\"key\": [1, 2]}'), or @FILE"
    )
    try:
        pairs = parse_kv(value)
    except AnsibleError:
        raise UsageError(f"{label}: unbalanced quotes or Jinja2 braces; {expected}") from None
    if "_raw_params" in pairs or not pairs:
        raise UsageError(f"{label}: a word without '='; {expected}")
    return pairs

"""Where the project files (site.yml, roles/) and clusterforge's own state live."""

from __future__ import annotations

import os
from pathlib import Path

from clusterforge.errors import UsageError

_PROJECT_MARKERS = ("site.yml", "ansible.cfg", "roles")


def _is_project_dir(path: Path) -> bool:
    return all((path / marker).exists() for marker in _PROJECT_MARKERS)


def project_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The clusterforge project directory holding site.yml, ansible.cfg and roles/.

    Order: an explicit path, $CLUSTERFORGE_PROJECT_DIR, the current directory or
    one above it, then the checkout this package was installed from (editable install).
    """
    candidates: list[Path] = []
    chosen = explicit or os.environ.get("CLUSTERFORGE_PROJECT_DIR")
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not _is_project_dir(path):
            raise UsageError(
                f"{path} is not a clusterforge project directory: expected {', '.join(_PROJECT_MARKERS)} in it"
            )
        return path
    cwd = Path.cwd().resolve()
    candidates.extend([cwd, *cwd.parents])
    candidates.extend(Path(__file__).resolve().parents)
    for path in candidates:
        if _is_project_dir(path):
            return path
    raise UsageError(
        "cannot find the clusterforge project (site.yml, ansible.cfg, roles/): "
        "run from the checkout or set CLUSTERFORGE_PROJECT_DIR"
    )


def state_dir() -> Path:
    """Per-user state: lab inventories and run directories."""
    explicit = os.environ.get("CLUSTERFORGE_STATE_DIR")
    if explicit:
        base = Path(explicit).expanduser()
    else:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        base = Path(xdg) / "clusterforge"
    base.mkdir(parents=True, exist_ok=True)
    return base.resolve()


def home(path: str | Path | None) -> str:
    """The path with the home directory written as ~ (None as a dash): how the run summary and the
    validation report show every path."""
    if path is None:
        return "-"
    text = str(path)
    base = str(Path.home())
    if base not in ("", "/") and (text == base or text.startswith(base + "/")):
        return "~" + text[len(base) :]
    return text

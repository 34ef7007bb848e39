"""The README and docs/ pages: short README, every page linked, links that resolve, and the text
that states what the code does (exit codes, the test command) held to the code."""

from __future__ import annotations

import re
from pathlib import Path

from clusterforge import errors
from tests.paths import PROJECT

README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_is_short_and_links_every_docs_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    linked = {match for match in LINK.findall(text)}
    for page in PAGES:
        assert any(link.split("#")[0] == f"docs/{page.name}" for link in linked), f"README does not link {page.name}"


def test_the_pitch_names_everything_the_stages_install():
    pitch = README.read_text().split("```", 1)[0]
    for component in ("Slurm", "Kubernetes", "Prometheus", "Alertmanager", "node exporter", "dcgm-exporter", "driver"):
        assert component in pitch, component
    for component in ("CUDA", "cuDNN", "NCCL", "Fabric Manager", "Docker", "containerd", "Lustre", "NVMe"):
        assert component in pitch, component


def test_every_relative_link_and_anchor_resolves():
    for page in [README, *PAGES]:
        for target in LINK.findall(page.read_text()):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.exists(), f"{page.relative_to(PROJECT)}: link to {target} names no file"
            if anchor and resolved.suffix == ".md":
                assert anchor in _anchors(resolved), f"{page.relative_to(PROJECT)}: no heading #{anchor} in {path}"


def test_the_readme_test_command_is_what_ci_runs():
    """The second command of the README's first code block is .ci/run's, after the host setup."""
    block = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(block) == 2
    ci = (PROJECT / ".ci" / "run").read_text().splitlines()
    assert ci[-2] == "bash .ci/lab-host-setup.sh"
    assert block[1] == f"{ci[-2]} && {ci[-1]}"


def test_the_exit_code_table_is_the_codes_the_cli_returns():
    page = (DOCS / "runner-and-reports.md").read_text()
    table = page[page.index("Exit codes:") :]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    defined = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert documented == defined

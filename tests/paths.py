"""Where the tests find the project's files, wherever a test module sits in the tree."""

from __future__ import annotations

from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLES = PROJECT / "inventories" / "examples"
SUPERPOD = EXAMPLES / "h100-superpod.topology.yml"
LAB_TOPOLOGY = PROJECT / "inventories" / "lab" / "lab.topology.yml"
FIXTURES = PROJECT / "tests" / "fixtures"

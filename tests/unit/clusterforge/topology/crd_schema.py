"""A CustomResourceDefinition's schema as the API server applies it, for the rendered custom
resources' tests (no cluster here: the CRD files in tests/schemas/kubernetes_crds, each with a .source)."""

from __future__ import annotations

import jsonschema
import yaml

from tests.paths import SCHEMAS


def strict(schema: dict) -> dict:
    """The CRD's schema as the API server applies it with strict field validation (kubectl's default
    since 1.27): an object that lists its properties takes no others."""
    schema = dict(schema)
    if "properties" in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    for key in ("properties",):
        if key in schema:
            schema[key] = {name: strict(sub) for name, sub in schema[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            schema[key] = strict(schema[key])
    return schema


def crd(name: str) -> dict:
    return yaml.safe_load((SCHEMAS / "kubernetes_crds" / f"{name}.yaml").read_text())


def validator(definition: dict, version: str) -> jsonschema.Draft4Validator:
    served = next(v for v in definition["spec"]["versions"] if v["name"] == version)
    return jsonschema.Draft4Validator(strict(served["schema"]["openAPIV3Schema"]))

"""Parser for ``mlxconfig -d <dev> q`` (``mstconfig`` prints the same): a NIC's firmware settings.

One device block per NIC (``mlxconfig q`` without ``-d`` lists every one):

    Device #1:
    ----------

    Device type:        ConnectX5
    Name:               MCX555A-ECA_Ax_Bx
    Device:             /dev/mst/mt4119_pciconf0

    Configurations:                                          Next Boot
            LINK_TYPE_P1                                IB(1)
            ATS_ENABLED                                 False(0)

``mlxconfig -e q`` adds the columns Default and Current before Next Boot (and a ``*`` before a
setting that differs from its default). A value is a name with its number (``False(0)``,
``per_mkey(0)``, ``IB(1)``), a bare number, or ``Array[0..7]``. The firmware hides some settings
(MAX_ACC_OUT_READ while ADVANCED_PCI_SETTINGS is False), so a setting may be absent. mlxconfig's
own errors start with ``-E-`` ("-E- Failed to open the device"): ToolFailed. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible.module_utils.verdicts import ParseError, ToolFailed, raise_if_failed


class MlxconfigParseError(ParseError):
    pass


@dataclass(frozen=True)
class MlxconfigDevice:
    device: str  # the "Device:" line (a PCI address or /dev/mst path), else "device <n>"
    device_type: str  # "ConnectX5"; empty when not printed
    columns: tuple[str, ...]  # ("Next Boot",) or ("Default", "Current", "Next Boot")
    settings: dict[str, tuple[str, ...]]  # name -> one value per column

    def value(self, name: str) -> str | None:
        """The value in force: Current where printed (-e), else Next Boot (the only column)."""
        values = self.settings.get(name)
        if values is None:
            return None
        column = "Current" if "Current" in self.columns else self.columns[-1]
        return values[self.columns.index(column)]

    def next_boot(self, name: str) -> str | None:
        values = self.settings.get(name)
        return None if values is None else values[-1]


_DEVICE_BLOCK = re.compile(r"^\s*Device #\d+:\s*$")
_FIELD = re.compile(r"^\s*(?P<key>Device type|Name|Description|Device):\s*(?P<value>.*?)\s*$")
_CONFIGURATIONS = re.compile(r"^\s*Configurations:\s+(?P<columns>.+?)\s*$")
_SETTING = re.compile(r"^\s*\*?\s*(?P<name>[A-Z][A-Z0-9_]*(?:x86[A-Z0-9_]*)?(?:\[\d+\])?)\s+(?P<values>\S.*?)\s*$")
_ERROR = re.compile(r"^\s*-E-\s")
_COLUMNS = ("Default", "Current", "Next Boot", "New")


def parse_mlxconfig(text: str, source: str = "mlxconfig") -> tuple[MlxconfigDevice, ...]:
    devices: list[MlxconfigDevice] = []
    fields: dict[str, str] = {}
    columns: tuple[str, ...] | None = None
    settings: dict[str, tuple[str, ...]] = {}

    def close() -> None:
        if columns is not None:
            name = fields.get("Device") or f"device {len(devices) + 1}"
            devices.append(MlxconfigDevice(name, fields.get("Device type", ""), columns, dict(settings)))

    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if _DEVICE_BLOCK.match(line) or (columns is not None and _FIELD.match(line)):
            close()
            fields, columns, settings = {}, None, {}
            if _DEVICE_BLOCK.match(line):
                continue
        if match := _CONFIGURATIONS.match(line):
            found = tuple(c for c in _COLUMNS if c in match["columns"])
            if not found:
                raise MlxconfigParseError("no Default/Current/Next Boot column", source=source, line=number, text=line)
            columns = found
        elif match := _FIELD.match(line):
            fields[match["key"]] = match["value"]
        elif columns is not None and (match := _SETTING.match(line)):
            values = tuple(match["values"].split())
            if len(values) != len(columns):
                # A value with blanks in a one-column listing is one value.
                if len(columns) != 1:
                    raise MlxconfigParseError(
                        f"{len(values)} values for {len(columns)} columns", source=source, line=number, text=line
                    )
                values = (" ".join(values),)
            settings[match["name"]] = values
    close()
    if not devices:
        raise_if_failed(text, _ERROR, source, "mlxconfig failed")
        raise MlxconfigParseError("no Configurations: table", source=source)
    return tuple(devices)


def number_of(value: str) -> int | None:
    """The number of a value: 0 of "False(0)", 44 of "44"; None for "Array[0..7]"."""
    match = re.fullmatch(r"(?:.*\()?(-?\d+)\)?", value.strip())
    return int(match.group(1)) if match else None


def name_of(value: str) -> str:
    """The name of a value: "False" of "False(0)", the value itself otherwise."""
    return re.sub(r"\(-?\d+\)$", "", value.strip())


__all__ = ["MlxconfigDevice", "MlxconfigParseError", "ToolFailed", "name_of", "number_of", "parse_mlxconfig"]

#!/usr/bin/env python3
"""Writes a wheel named torch that is a clusterforge TEST STAND-IN, not PyTorch.

The pytorch scenario serves it from a local index inside the instance, because the real torch
wheels are gigabytes. It has what the role looks at after an install: torch.__version__,
torch.version.cuda (None: a CPU build), torch.cuda.is_available()/device_count() (False/0), and a
torchrun console script that says it is a stand-in. It requires six (a real wheel in the same
index), so the hash-pinned requirements hold a dependency closure, as a real one does.

The bytes are deterministic (fixed time stamps, no compression), so the scenario pins their
sha256: python3 torch_standin_wheel.py VERSION DIR prints it.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

STAMP = (2026, 12, 5, 0, 0, 0)


def _files(version: str) -> dict[str, str]:
    info = f"torch-{version}.dist-info"
    return {
        "torch/__init__.py": (
            '"""clusterforge test stand-in for PyTorch: no tensors, no training."""\n'
            f'__version__ = "{version}"\n'
            "STANDIN = True\n"
            "from torch import cuda, version  # noqa: E402\n"
        ),
        "torch/version.py": f'__version__ = "{version}"\ncuda = None\n',
        "torch/cuda.py": "def is_available():\n    return False\n\n\ndef device_count():\n    return 0\n",
        "torch/distributed/__init__.py": "",
        "torch/distributed/run.py": (
            "import sys\n\n\ndef main():\n"
            '    print("torchrun: clusterforge test stand-in for PyTorch, it launches nothing")\n'
            "    return 0\n\n\nif __name__ == '__main__':\n    sys.exit(main())\n"
        ),
        f"{info}/METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: torch\n"
            f"Version: {version}\n"
            "Summary: clusterforge test stand-in for PyTorch (not PyTorch)\n"
            "Requires-Dist: six==1.17.0\n"
        ),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: clusterforge\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\ntorchrun = torch.distributed.run:main\n",
    }


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write(version: str, directory: Path) -> Path:
    path = directory / f"torch-{version}-py3-none-any.whl"
    files = {name: text.encode() for name, text in _files(version).items()}
    record = f"torch-{version}.dist-info/RECORD"
    lines = [_record_line(name, data) for name, data in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as wheel:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, date_time=STAMP)
            entry.external_attr = 0o644 << 16
            wheel.writestr(entry, data)
    return path


if __name__ == "__main__":
    written = write(sys.argv[1], Path(sys.argv[2]))
    print(hashlib.sha256(written.read_bytes()).hexdigest())

"""Build NVIDIA's cuDNN archive layout from the real cuDNN wheel on PyPI, for the cudnn scenario.

NVIDIA publishes cuDNN for Linux as ``cudnn-linux-x86_64-<version>_cuda<major>-archive.tar.xz``
(``include/cudnn*.h``, ``lib/libcudnn*.so*`` with the ``.so`` and ``.so.<major>`` links, a
LICENSE). That archive needs a developer login; the same libraries are on PyPI as
``nvidia-cudnn-cu<major>``. This packs the wheel's headers and the two libraries
``cudnnGetVersion()`` needs (``libcudnn.so.<major>``, the loader, and ``libcudnn_graph``, which it
loads) into that layout; the other sub-libraries (about 1 GB unpacked, for the GPU work) are left
out. It also packs the CUDA runtime headers that ``cudnn.h`` includes (``cuda_runtime_api.h``
from ``nvidia-cuda-runtime-cu<major>``, ``crt/`` from ``nvidia-cuda-nvcc-cu<major>``).

    python3 cudnn_archive.py --version 9.10.2.21 --cuda-major 12 --out DIR \\
        --cudnn-wheel W.whl --cuda-wheel R.whl --cuda-wheel N.whl
"""

from __future__ import annotations

import argparse
import io
import tarfile
import zipfile
from pathlib import Path

# The sub-libraries packed besides the loader: cudnnGetVersion() is answered by libcudnn_graph.
LIBRARIES = ("libcudnn", "libcudnn_graph")


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, 0
    tar.addfile(info)


def cudnn_archive(wheel: Path, version: str, cuda_major: str, out: Path) -> Path:
    major, minor, patch = version.split(".")[:3]
    top = f"cudnn-linux-x86_64-{version}_cuda{cuda_major}-archive"
    path = out / f"{top}.tar.xz"
    with zipfile.ZipFile(wheel) as whl, tarfile.open(path, "w:xz") as tar:
        names = sorted(whl.namelist())
        headers = [n for n in names if n.startswith("nvidia/cudnn/include/") and n.endswith(".h")]
        if not headers:
            raise SystemExit(f"{wheel}: no nvidia/cudnn/include/*.h")
        for name in headers:
            _add_file(tar, f"{top}/include/{Path(name).name}", whl.read(name))
        for library in LIBRARIES:
            real = f"{library}.so.{major}.{minor}.{patch}"
            _add_file(tar, f"{top}/lib/{real}", whl.read(f"nvidia/cudnn/lib/{library}.so.{major}"), 0o755)
            _add_link(tar, f"{top}/lib/{library}.so.{major}", real)
            _add_link(tar, f"{top}/lib/{library}.so", f"{library}.so.{major}")
        licence = next((n for n in names if n.endswith("License.txt")), None)
        if licence:
            _add_file(tar, f"{top}/LICENSE", whl.read(licence))
    return path


def cuda_headers(wheels: list[Path], out: Path) -> Path:
    """include/ of the CUDA runtime and nvcc wheels, as the CUDA toolkit's include/ holds them."""
    path = out / "cuda-headers.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as whl:
                for name in sorted(whl.namelist()):
                    _, _, below = name.partition("/include/")
                    if name.startswith("nvidia/cuda_") and below.endswith((".h", ".hpp")):
                        _add_file(tar, f"include/{below}", whl.read(name))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--cuda-major", required=True)
    parser.add_argument("--cudnn-wheel", type=Path, required=True)
    parser.add_argument("--cuda-wheel", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(cudnn_archive(args.cudnn_wheel, args.version, args.cuda_major, args.out))
    print(cuda_headers(args.cuda_wheel, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

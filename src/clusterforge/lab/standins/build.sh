#!/bin/bash
# Builds every clusterforge test stand-in artefact of container jobs on Slurm (NOT NVIDIA's Enroot
# and Pyxis: GitHub is not reachable here) into OUT_DIR, laid out as the file server that serves them:
#   OUT_DIR/enroot/enroot_<version>-1_<arch>.deb, enroot+caps_<version>-1_<arch>.deb  (enroot/build-debs.sh)
#   OUT_DIR/pyxis/pyxis-<version>.tar.gz   the Pyxis stand-in's source, its top directory
#                                          pyxis-<version>/ as in GitHub's tag archives
#   OUT_DIR/images/busybox-rootfs.tar      a root file system to import as an image: busybox-static's
#                                          applets and /etc/clusterforge-image, plainly not the node's
# The one build both users call: molecule/pyxis/prepare.yml and the lab test
# (tests/integration/test_lab_pyxis.py). Runs on a Debian node with dpkg-deb, tar and busybox-static.
#   build.sh ENROOT_VERSION PYXIS_VERSION OUT_DIR
set -euo pipefail
enroot_version=$1 pyxis_version=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

bash "${here}/enroot/build-debs.sh" "${enroot_version}" 1 "${out}/enroot"

mkdir -p "${out}/pyxis"
tar --create --gzip --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
  --file="${out}/pyxis/pyxis-${pyxis_version}.tar.gz" --directory="${here}" \
  --transform="s,^pyxis,pyxis-${pyxis_version}," pyxis

rootfs=${work}/rootfs
install -d "${rootfs}/bin" "${rootfs}/etc" "${out}/images"
install -m 0755 /bin/busybox "${rootfs}/bin/busybox"
for applet in sh cat id pwd true ls; do ln -s busybox "${rootfs}/bin/${applet}"; done
echo clusterforge-standin-image >"${rootfs}/etc/clusterforge-image"
tar --create --file="${out}/images/busybox-rootfs.tar" --directory="${rootfs}" .

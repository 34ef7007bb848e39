#!/bin/bash
# Builds the clusterforge test stand-ins for NVIDIA's Enroot release packages, named as NVIDIA
# names them: enroot_<version>-<release>_<arch>.deb (the stand-in enroot script, the GPU and
# Mellanox hook files as do-nothing stand-ins) and enroot+caps_<version>-<release>_<arch>.deb
# (depends on enroot; sets no capabilities: the stand-in has no helpers that need them).
#   build-debs.sh VERSION RELEASE OUT_DIR
set -euo pipefail
version=$1 release=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)
label="clusterforge test stand-in"
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
mkdir -p "${out}"

control() { # name depends description
  mkdir -p "$1/DEBIAN"
  cat >"$1/DEBIAN/control" <<CONTROL
Package: $2
Version: ${version}-${release}
Architecture: ${arch}
Maintainer: clusterforge <clusterforge@localhost>
Depends: $3
Section: utils
Priority: optional
Description: ${label} for NVIDIA's $2 ${version}
 ${label}: not NVIDIA's package. $4
CONTROL
  mkdir -p "$1/usr/share/clusterforge-standin"
  echo "${label}: $2 ${version}-${release}" >"$1/usr/share/clusterforge-standin/$2"
}

pkg=${work}/enroot
control "${pkg}" enroot "bash, util-linux, squashfs-tools, tar" \
  "/usr/bin/enroot imports local tarballs, creates and starts containers with unshare and chroot."
install -d "${pkg}/usr/bin" "${pkg}/usr/share/enroot/hooks.d" "${pkg}/etc/enroot/hooks.d"
sed "s/@VERSION@/${version}/" "${here}/enroot" >"${pkg}/usr/bin/enroot"
chmod 0755 "${pkg}/usr/bin/enroot"
for hook in 98-nvidia.sh 99-mellanox.sh; do
  printf '#!/bin/sh\n# %s for Enroot'"'"'s %s hook: does nothing.\nexit 0\n' "${label}" "${hook}" \
    >"${pkg}/usr/share/enroot/hooks.d/${hook}"
  chmod 0755 "${pkg}/usr/share/enroot/hooks.d/${hook}"
done
dpkg-deb --root-owner-group --build "${pkg}" "${out}/enroot_${version}-${release}_${arch}.deb" >/dev/null

pkg=${work}/caps
control "${pkg}" "enroot+caps" "enroot (= ${version}-${release})" "It installs nothing but a marker file."
dpkg-deb --root-owner-group --build "${pkg}" "${out}/enroot+caps_${version}-${release}_${arch}.deb" >/dev/null

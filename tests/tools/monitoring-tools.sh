#!/usr/bin/env bash
# promtool and amtool for the rule tests (tests/unit/roles/test_monitoring_rules.py): the very
# versions the prometheus and alertmanager roles pin on Debian 13, taken from Debian's packages
# inside the lab node image (Debian 13; `clusterforge lab image` builds it) and unpacked, not
# installed: both are static Go binaries, so they run on the test machine as they are. No service
# is installed or started anywhere.
#   tests/tools/monitoring-tools.sh [DIR]   (default .clusterforge/tools/bin); about 10 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-.clusterforge/tools/bin}
image=${CLUSTERFORGE_LAB_IMAGE:-clusterforge/lab-node:trixie}
promtool_version=$(sed -n 's/^__prometheus_version: *//p' roles/prometheus/vars/Debian-13.yml)
alertmanager_version=$(sed -n 's/^__alertmanager_version: *//p' roles/alertmanager/vars/Debian-13.yml)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
docker run --rm --network bridge -v "$dest:/out" "$image" bash -euc "
  apt-get update -qq >/dev/null
  cd /tmp
  apt-get download -qq promtool=$promtool_version prometheus-alertmanager=$alertmanager_version >/dev/null
  for deb in *.deb; do dpkg-deb -x \"\$deb\" root; done
  install -m 0755 root/usr/bin/promtool root/usr/bin/amtool /out/
  chown $(id -u):$(id -g) /out/promtool /out/amtool
"
"$dest/promtool" --version | head -1
"$dest/amtool" --version 2>&1 | head -1

#!/usr/bin/env bash
# Screenshot a validation report (report.html from `clusterforge report`) in a real browser:
# Debian's headless Chromium, as a reader would see the page.
#
#   tools/report_screenshot.sh REPORT_HTML [OUT_PNG] [WIDTHxHEIGHT]
#
# Needs chromium (Debian: `apt-get install chromium`; .ci/lab-host-setup.sh installs it as root).
# tests/unit/clusterforge/validation/test_report_html.py runs it on a sample report. The page is
# self-contained (no scripts, no external assets), so --no-sandbox on a local file reaches nothing outside it.
set -euo pipefail
report=${1:?usage: $0 REPORT_HTML [OUT_PNG] [WIDTHxHEIGHT]}
out=${2:-${report%.html}.png}
size=${3:-1400x1600}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium not found: apt-get install chromium" >&2
  exit 3
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${size/x/,}" --screenshot="$(realpath -m "$out")" "file://$(realpath "$report")" 2>/dev/null
test -s "$out"
echo "$out"

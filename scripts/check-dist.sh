#!/usr/bin/env bash
# Check what `make dist` built: install the wheel, and then the sdist, each into a clean venv and
# run `acx` from it (entry point, package data such as the JSON Schemas, a real build + verify).
# Dependencies come from the project's .venv through a .pth line, so the check needs no network;
# the package itself must come from the artifact, never from the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
DIST=$(cd "${1:-dist}" && pwd)
DEPS=$("$REPO/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

check() {  # check NAME ARTIFACT
  local venv="$WORK/$1" out="$WORK/$1-run"
  python3 -m venv "$venv"
  local site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$DEPS" > "$site/zz-acxoci-deps.pth"
  "$venv/bin/pip" install -q --no-deps --no-index "$2"
  mkdir -p "$out" && cd "$out"
  local where
  where=$("$venv/bin/python" -c 'import acxoci.attest; print(acxoci.__file__, acxoci.attest.__file__)')
  case "$where" in
    "$venv"/*" $venv"/*) ;;
    *) echo "check-dist: $1 imports acxoci from outside its venv: $where" >&2; exit 1 ;;
  esac
  "$venv/bin/acx" --version
  # The schemas live once (top-level schemas/); the artifact must carry every one as package data.
  "$venv/bin/python" - "$REPO/schemas" <<'PY'
import sys
from importlib import resources
from pathlib import Path
src = {p.relative_to(sys.argv[1]).as_posix() for p in Path(sys.argv[1]).rglob("*.json")}
root = resources.files("acxoci") / "schemas"
shipped = {n for n in src if (root / n).is_file()}
missing = sorted(src - shipped)
if missing:
    sys.exit(f"check-dist: schemas missing from the package: {missing}")
PY
  "$venv/bin/acx" key generate -o me.pem >/dev/null
  "$venv/bin/acx" key trust me.pub.pem --publisher dev.example.dist --trust-registry trust.json \
    --not-before 2026-01-01T00:00:00Z >/dev/null
  "$venv/bin/acx" cartridge build "$REPO/examples/agent-package" -o agent.acx \
    --publisher dev.example.dist --key me.pem >/dev/null
  "$venv/bin/acx" cartridge verify agent.acx --trust-registry trust.json --require trusted >/dev/null
  "$venv/bin/acx" policy init -o policy.yaml --publisher dev.example.dist --trust-registry trust.json >/dev/null
  "$venv/bin/acx" policy check "$REPO/examples/agent-package/loop-context-policy.json" >/dev/null
  "$venv/bin/acx" --show-completion bash > completion.bash && grep -q _ACX_COMPLETE completion.bash
  cd "$REPO"
  echo "check-dist: $1 ($(basename "$2")) installs and runs"
}

shopt -s nullglob
wheels=("$DIST"/acxoci-*.whl)
sdists=("$DIST"/acxoci-*.tar.gz)
if [ "${#wheels[@]}" -ne 1 ] || [ "${#sdists[@]}" -ne 1 ]; then
  echo "check-dist: expected one wheel and one sdist in $DIST" >&2
  exit 1
fi
check wheel "${wheels[0]}"
# The sdist: unpack it, build a wheel from nothing but its contents, install and run that.
tar -xzf "${sdists[0]}" -C "$WORK"
"$REPO/.venv/bin/python" -m build -q --wheel --outdir "$WORK/from-sdist" "$WORK/$(basename "${sdists[0]}" .tar.gz)" >/dev/null
check sdist "$(echo "$WORK"/from-sdist/acxoci-*.whl)"

#!/usr/bin/env bash
# Run the whole suite. pytest's exit 5 (no tests collected) is a failure here, never a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pytest -q -p no:cacheprovider --timeout=300 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$rc"

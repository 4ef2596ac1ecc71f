#!/usr/bin/env bash
# make demo: the whole story on the embedded OCI-layout store (no server), or against a
# registry with `make demo REGISTRY=host:port`:
#   build → sign → trust → push → attest (cosign legacy + bundle) → level benchmark → issue and
#   attach a level credential with a status list → verify → install (and activate into a scratch
#   HOME) → revoke → installed verify reports it → installed sync deactivates it.
set -euo pipefail
cd "$(dirname "$0")/.."
ACX=${ACX:-.venv/bin/acx}
REGISTRY=${1:-${REGISTRY:-}}
D=${DEMO_DIR:-.demo}
rm -rf "$D"; mkdir -p "$D"

if [ -n "$REGISTRY" ]; then
  REPO="$REGISTRY/acxoci-demo/pr-reviewer"
  STATUS_REF="$REGISTRY/acxoci-demo/status:status"
  STATUS_ID="oci://$STATUS_REF"          # the list's id: where verifiers fetch it
  where="registry $REGISTRY"
else
  REPO="oci-layout:$D/store"
  STATUS_REF="oci-layout:$D/store:status"
  STATUS_ID="$STATUS_REF"
  where="the embedded OCI layout $D/store"
fi
REF="$REPO:1.0.0"
PUBLISHER=dev.acxoci.demo
ISSUER=did:web:verifier.acxoci.dev

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
acx() { echo "\$ acx $*"; "$ACX" "$@"; }

step "1. Keys: a publisher key, and the level verifier's key (Ed25519, generated now)"
acx -q key generate -o "$D/publisher.pem"
acx -q key generate -o "$D/verifier.pem"
acx key trust "$D/publisher.pub.pem" --publisher "$PUBLISHER" -r "$D/trust.json" --not-before 2026-01-01T00:00:00Z
acx key trust "$D/verifier.pub.pem" --publisher dev.acxoci.verifier -r "$D/issuers.json" --not-before 2026-01-01T00:00:00Z

step "2. Build and sign a cartridge from examples/agent-package (deterministic)"
acx cartridge build examples/agent-package -o "$D/pr-reviewer.acx" --publisher "$PUBLISHER" \
    --key "$D/publisher.pem" --created-at 2026-11-30T00:00:00Z
acx cartridge verify "$D/pr-reviewer.acx" --trust-registry "$D/trust.json" --require trusted

step "3. Push it to $where as an OCI 1.1 artifact"
acx push "$D/pr-reviewer.acx" "$REF"

step "4. Attest it: cosign legacy .att tag + sigstore bundle referrer + the cartridge's DSSE envelope"
acx attest "$REF" --key "$D/publisher.pem"
acx discover "$REF"

step "5. Level: an independent verifier runs the sealed held-out benchmark and issues a credential"
acx level bench-init -o "$D/bench" --demo
acx status-list create --id "$STATUS_ID" --issuer "$ISSUER" --issuer-key "$D/verifier.pem" -o "$D/status.json"
acx status-list publish "$D/status.json" "$STATUS_REF"
acx level issue "$REF" --bench "$D/bench/acx-bench-dag-de@2026.07.1.bench.json" --issuer "$ISSUER" \
    --issuer-key "$D/verifier.pem" --status-list "$D/status.json" --trust-registry "$D/trust.json" \
    --attempt-log "$D/attempts.jsonl" -o "$D/level.vc.json"

step "6. Verify what a consumer will see: attestations, then the level credential and its status"
acx verify "$REF" --trust-registry "$D/trust.json"
acx level verify "$REF" --issuers "$D/issuers.json" --trust-registry "$D/trust.json"

step "7. Install: pull, prove every check of the policy, negotiate the harness, install atomically"
cat > "$D/policy.yaml" <<YAML
schemaVersion: acx.verification-policy/1
publishers:
  - id: $PUBLISHER
    trustRegistries: [trust.json]
minimumTrust: trusted
attestations:
  formats: [legacy, bundle]
  predicateTypes: [https://acx.dev/attestation/cartridge/v1]
level:
  minimum: senior
  issuers: [$ISSUER]
  issuerRegistries: [issuers.json]
  allowDemo: true           # the demo benchmark and solver measure nothing; real policies leave this false
harness:
  requireHost: true
limits:
  budgetAboveHost: cap      # the host's resource-limits.yaml always wins
YAML
case "$D" in /*) SCRATCH_HOME="$D/home" ;; *) SCRATCH_HOME="$(pwd)/$D/home" ;; esac
mkdir -p "$SCRATCH_HOME"   # a scratch HOME: the demo never touches your real ~/.claude
echo "\$ HOME=$SCRATCH_HOME acx install $REF ... --activate claude"
XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" HOME="$SCRATCH_HOME" "$ACX" install "$REF" --policy "$D/policy.yaml" --host examples/host.json \
    --host-limits examples/resource-limits.yaml --store "$D/installed" --activate claude
acx installed list --store "$D/installed"

step "8. The installed agent is active in the scratch HOME: its skills, byte for byte the cartridge's ROM files"
find "$SCRATCH_HOME" -type f | sort
cmp "$SCRATCH_HOME/.claude/skills/review-checklist/SKILL.md" examples/agent-package/skills/review-checklist/SKILL.md
echo "skills/review-checklist/SKILL.md is identical to the signed ROM file"

step "9. The verifier revokes the credential (flip one bit, re-sign, republish the list)"
acx level revoke "$D/level.vc.json" --status-list "$D/status.json" --issuer-key "$D/verifier.pem" \
    --publish "$STATUS_REF"

step "10. The host judges what it installed again, now: the revocation is reported"
if XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" HOME="$SCRATCH_HOME" "$ACX" installed verify --store "$D/installed"; then
  echo "demo: expected installed verify to report the revocation" >&2
  exit 1
fi

step "11. The host's timer job: what no longer passes is deactivated"
XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" HOME="$SCRATCH_HOME" "$ACX" installed sync --store "$D/installed"
if [ -e "$SCRATCH_HOME/.claude/skills/review-checklist" ]; then
  echo "demo: expected installed sync to deactivate the revoked agent" >&2
  exit 1
fi
echo "the revoked agent's skills are gone from the scratch HOME"

step "Done: every step above ran against $where; artifacts are in $D/"

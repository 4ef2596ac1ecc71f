#!/usr/bin/env bash
# A real Sigstore deployment on loopback for tests and docs (docs/decisions/0035-loopback-sigstore-stack.md):
# Fulcio, Rekor v2 (POSIX storage) and the timestamp authority built by `make sigstore-stack`, plus two
# STAND-INS of ours: the OIDC issuers (GitHub Actions-shaped tokens) and a CT log that only signs SCTs.
#
#   sigstore-stack.sh up DIR      start everything on 127.0.0.1; write DIR/trust_config.json
#                                 (ClientTrustConfig), DIR/trusted_root.json, DIR/signing_config.json
#                                 and DIR/env (shell exports, see below)
#   sigstore-stack.sh token DIR [--github REPO REF WORKFLOW SHA] [--issuer second]
#                                 print a fresh identity token (default claims: SIGSTACK_IDENTITY's)
#   sigstore-stack.sh down DIR    stop what `up DIR` started (by the PIDs it recorded)
#
# DIR/env exports SIGSTACK_IDENTITY (the certificate identity of a default token), SIGSTACK_ISSUER
# (the main OIDC issuer), SIGSTACK_SECOND_OIDC_URL, SIGSTACK_FULCIO_URL, SIGSTACK_REKOR_URL,
# SIGSTACK_TSA_URL, SIGSTACK_CTLOG_URL, SIGSTACK_TRUST_CONFIG, SIGSTACK_TRUSTED_ROOT,
# SIGSTACK_SIGNING_CONFIG, and ACTIONS_ID_TOKEN_REQUEST_URL / ACTIONS_ID_TOKEN_REQUEST_TOKEN (a
# GitHub Actions runner's token endpoint; with GITHUB_ACTIONS=true a run is simulated).
# The timestamp server always binds its metrics port 2112 on every interface, so there is one
# stack per machine: `up` fails, naming the port, when one it needs is taken.
#   ACX_PEERS_DIR       where `make sigstore-stack` put the servers (default <repo>/.peers)
#   SIGSTACK_BASE_PORT  first of the 10 loopback ports used (default 29400, below the ephemeral range)
#   SIGSTACK_PYTHON     a Python with `cryptography` for the stand-ins (default <repo>/.venv/bin/python)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
usage() { echo "usage: sigstore-stack.sh up DIR | token DIR [--github REPO REF WORKFLOW SHA] [--issuer second] | down DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2; shift 2
PY=${SIGSTACK_PYTHON:-$repo/.venv/bin/python}
[ -x "$PY" ] || PY=python3

pyget() {  # url bearer-secret -> body on stdout (exit 1 on HTTP errors)
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        sys.stdout.write(r.read().decode())
except (urllib.error.URLError, OSError) as e:
    sys.exit(f"sigstore-stack: {sys.argv[1].split('?')[0]}: {e}")
PYEOF
}

case $cmd in
up)
  peers=${ACX_PEERS_DIR:-$repo/.peers}
  bin="$peers/sigstack/bin"
  for b in fulcio rekor-server-posix timestamp-server; do
    [ -x "$bin/$b" ] || { echo "sigstore-stack: $bin/$b is missing; run \`make sigstore-stack\`" >&2; exit 1; }
  done
  base=${SIGSTACK_BASE_PORT:-29400}
  oidc=$((base+1)) ct=$((base+2)) tsa=$((base+3)) rekor=$((base+4)) rekor_grpc=$((base+5)) rekor_met=$((base+6))
  fulcio=$((base+7)) fulcio_grpc=$((base+8)) fulcio_met=$((base+9))
  for p in 2112 $oidc $ct $tsa $rekor $rekor_grpc $rekor_met $fulcio $fulcio_grpc $fulcio_met; do
    if ! "$PY" -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", int(sys.argv[1]))); s.close()' "$p" 2>/dev/null; then
      why=""; [ "$p" = 2112 ] && why=" (the timestamp server's metrics port, always bound: one stack per machine)"
      echo "sigstore-stack: port $p is taken$why; stop the other stack (\`sigstore-stack.sh down ITS_DIR\`) or set SIGSTACK_BASE_PORT" >&2
      exit 1
    fi
  done
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/pids" ] || { echo "sigstore-stack: $dir already holds a stack (down it first)" >&2; exit 1; }
  : > "$dir/pids"
  umask 077
  "$PY" -c 'import secrets; print(secrets.token_urlsafe(32))' > "$dir/mint-secret"
  "$PY" -c 'import secrets; print(secrets.token_urlsafe(32))' > "$dir/actions-secret"
  start() {  # name cmd... : own session, output in DIR/NAME.log, PID in DIR/pids
    local n=$1; shift
    setsid "$@" > "$dir/$n.log" 2>&1 < /dev/null &
    echo "$n $!" >> "$dir/pids"
  }
  fail() { echo "sigstore-stack: $1 (logs in $dir)" >&2; "$0" down "$dir" >/dev/null 2>&1 || true; exit 1; }
  wait_for() {  # url what: up once it answers HTTP at all (Rekor v2 has no page at its root)
    for _ in $(seq 1 80); do
      "$PY" -c 'import sys,urllib.request,urllib.error
try: urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError: pass' "$1" 2>/dev/null && return 0
      sleep 0.25
    done
    fail "$2 did not come up at $1"
  }
  ttl=${SIGSTACK_TTL:-7200}
  issuer=http://127.0.0.1:$oidc
  start oidc "$PY" "$here/sigstack/oidc_standin.py" --port $oidc --ttl "$ttl" \
    --mint-secret-file "$dir/mint-secret" --actions-secret-file "$dir/actions-secret"
  rm -f "$dir/ctlog-pub.pem"
  start ctlog "$PY" "$here/sigstack/ctlog_standin.py" --port $ct --pubkey-out "$dir/ctlog-pub.pem" --ttl "$ttl"
  start tsa "$bin/timestamp-server" serve --host 127.0.0.1 --port $tsa --timestamp-signer memory \
    --disable-ntp-monitoring
  rm -rf "$dir/rekor-storage"; mkdir -p "$dir/rekor-storage"
  "$PY" - "$dir/rekor-key.pem" "$dir/rekor-pub.pem" <<'PYEOF'
import sys
from cryptography.hazmat.primitives import serialization as s
from cryptography.hazmat.primitives.asymmetric import ec
k = ec.generate_private_key(ec.SECP256R1())
open(sys.argv[1], "wb").write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
open(sys.argv[2], "wb").write(k.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo))
PYEOF
  # --hostname is the checkpoint origin: it must be the Rekor URL's host in the trusted root
  start rekor "$bin/rekor-server-posix" serve --hostname 127.0.0.1 --http-address 127.0.0.1 \
    --http-port $rekor --grpc-address 127.0.0.1 --grpc-port $rekor_grpc --http-metrics-port $rekor_met \
    --signer-filepath "$dir/rekor-key.pem" --storage-dir "$dir/rekor-storage" --checkpoint-interval 1s
  wait_for "$issuer/.well-known/openid-configuration" "the OIDC stand-in"
  for _ in $(seq 1 40); do [ -s "$dir/ctlog-pub.pem" ] && break; sleep 0.25; done
  [ -s "$dir/ctlog-pub.pem" ] || fail "the CT log stand-in did not start"
  cat > "$dir/fulcio-config.json" <<JSON
{"OIDCIssuers": {
  "$issuer": {"IssuerURL": "$issuer", "ClientID": "sigstore", "Type": "github-workflow"},
  "$issuer/second": {"IssuerURL": "$issuer/second", "ClientID": "sigstore", "Type": "github-workflow"}}}
JSON
  rm -f "$dir/fulcio.sock"   # Fulcio leaves its socket behind and then cannot bind it again
  start fulcio "$bin/fulcio" serve --ca ephemeralca --config-path "$dir/fulcio-config.json" \
    --host 127.0.0.1 --port $fulcio --grpc-host 127.0.0.1 --grpc-port $fulcio_grpc --metrics-port $fulcio_met \
    --legacy-unix-domain-socket "$dir/fulcio.sock" \
    --ct-log-url http://127.0.0.1:$ct/acx-standin --ct-log-public-key-path "$dir/ctlog-pub.pem"
  wait_for "http://127.0.0.1:$tsa/api/v1/timestamp/certchain" "the timestamp authority"
  wait_for "http://127.0.0.1:$fulcio/api/v2/trustBundle" "Fulcio"
  wait_for "http://127.0.0.1:$rekor/" "Rekor v2"
  "$PY" "$here/sigstack/trust_config.py" "$dir" "$issuer" "http://127.0.0.1:$fulcio" \
    "http://127.0.0.1:$rekor" "$dir/rekor-pub.pem" "http://127.0.0.1:$ct" "$dir/ctlog-pub.pem" \
    "http://127.0.0.1:$tsa" || fail "could not write the trust documents"
  q() { printf "%q" "$1"; }
  cat > "$dir/env" <<ENV
export SIGSTACK_IDENTITY=https://github.com/acx-example/agents/.github/workflows/release.yml@refs/heads/main
export SIGSTACK_ISSUER=$issuer
export SIGSTACK_SECOND_OIDC_URL=$issuer/second
export SIGSTACK_FULCIO_URL=http://127.0.0.1:$fulcio
export SIGSTACK_REKOR_URL=http://127.0.0.1:$rekor
export SIGSTACK_TSA_URL=http://127.0.0.1:$tsa
export SIGSTACK_CTLOG_URL=http://127.0.0.1:$ct
export SIGSTACK_TRUST_CONFIG=$(q "$dir/trust_config.json")
export SIGSTACK_TRUSTED_ROOT=$(q "$dir/trusted_root.json")
export SIGSTACK_SIGNING_CONFIG=$(q "$dir/signing_config.json")
export ACTIONS_ID_TOKEN_REQUEST_URL=$issuer/actions/token
export ACTIONS_ID_TOKEN_REQUEST_TOKEN=$(cat "$dir/actions-secret")
ENV
  echo "sigstore-stack: up in $dir (ports $((base+1))-$((base+9)) and 2112)"
  ;;
token)
  [ -f "$dir/env" ] || { echo "sigstore-stack: no stack in $dir (run \`sigstore-stack.sh up $dir\`)" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$dir/env"
  url="$SIGSTACK_ISSUER/mint?issuer=main"
  enc() { "$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
  while [ $# -gt 0 ]; do
    case $1 in
      --github) [ $# -ge 5 ] || usage
        url="$url&repo=$(enc "$2")&ref=$(enc "$3")&workflow=$(enc "$4")&sha=$(enc "$5")"; shift 5 ;;
      --issuer) [ $# -ge 2 ] && [ "$2" = second ] || usage
        url="${url/issuer=main/issuer=second}"; shift 2 ;;
      *) usage ;;
    esac
  done
  pyget "$url" "$(cat "$dir/mint-secret")"; echo
  ;;
down)
  [ -f "$dir/pids" ] || { echo "sigstore-stack: nothing started in $dir"; exit 0; }
  while read -r name pid; do
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "sigstore-stack: stopped $name ($pid)"
  done < "$dir/pids"
  rm -f "$dir/pids" "$dir/fulcio.sock"
  ;;
*) usage ;;
esac

#!/usr/bin/env bash
# Install the interop peers (distribution registry, oras 1.2/1.3, cosign 2.5/3.x, crane,
# acx-refreg, chromium and chromium-driver for the browser tests, SoftHSM2, the sigstore-go
# verifier) and build the loopback Sigstore stack (Fulcio, Rekor v2, timestamp authority) from Debian
# packages into a git-ignored folder, without touching the system's apt sources, and the reference
# MCP filesystem server from the npm registry (the boot handshake's real MCP server). Idempotent: a
# second run only re-checks what is there.
#   install-peers.sh           everything
#   install-peers.sh sigstore  only the Sigstore stack and its verifier (`make sigstore-stack`)
#   ACX_PEERS_DIR  target folder (default: <repo>/.peers)
#   PEERS_FORCE=1  re-extract and rebuild everything
set -euo pipefail
what=${1:-all}
case $what in all|sigstore) ;; *) echo "usage: install-peers.sh [all|sigstore]" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${ACX_PEERS_DIR:-$here/.peers}
mkdir -p "$PEERS/apt"
MCP_FS_VERSION=2026.8.31
MCP_FS_BIN=mcp-filesystem/node_modules/.bin/mcp-server-filesystem

SIGSTACK_BINS="sigstack/bin/fulcio sigstack/bin/rekor-server-posix sigstack/bin/timestamp-server \
              sigstore-go/usr/bin/sigstore-go-verification"
have_sigstack() {
  for b in $SIGSTACK_BINS; do [ -x "$PEERS/$b" ] || return 1; done
  [ -s "$PEERS/sigstack/VERSIONS" ]
}
have_all() {
  for b in cosign2/usr/bin/cosign cosign3/usr/bin/cosign oras12/usr/bin/oras \
           oras13/usr/bin/oras crane/usr/bin/crane refreg/acx-refreg \
           "$MCP_FS_BIN"; do
    [ -x "$PEERS/$b" ] || return 1
  done
  command -v docker-registry >/dev/null || return 1
  command -v tmux >/dev/null || return 1
  command -v chromium >/dev/null || return 1
  command -v chromedriver >/dev/null || return 1
  command -v softhsm2-util >/dev/null || return 1
  have_sigstack
}
if [ -z "${PEERS_FORCE:-}" ] && { [ "$what" = sigstore ] && have_sigstack || have_all; }; then
  echo "peers: all present in $PEERS"
  exit 0
fi

# The mirror URI comes from the system's own apt configuration (never hard-coded here).
uri=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1=="deb"{for(i=2;i<=NF;i++) if($i ~ /^[a-z]+:\/\//){print $i; exit}}' /etc/apt/sources.list)
fi
[ -n "$uri" ] || { echo "peers: cannot read a Debian mirror URI from the apt sources" >&2; exit 1; }

apt_private() {  # suite, apt-get args...
  local suite=$1; shift
  local d="$PEERS/apt/$suite"
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" > "$d/sources.list"
  apt-get -q \
    -o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=/nonexistent \
    -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
    -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" \
    -o APT::Sandbox::User=root "$@"
}

updated=""
ensure_lists() {
  [ -n "$updated" ] && return 0
  for s in trixie sid; do apt_private "$s" update >/dev/null; done
  updated=1
}

extract() {  # suite package dest
  local suite=$1 pkg=$2 dest="$PEERS/$3"
  if [ -d "$dest/usr" ] && [ -z "${PEERS_FORCE:-}" ]; then return 0; fi
  ensure_lists
  local dl="$PEERS/apt/$suite/debs"; mkdir -p "$dl"
  ( cd "$dl" && rm -f "${pkg}"_*.deb && apt_private "$suite" download "$pkg" >/dev/null )
  local deb; deb=$(ls "$dl"/"${pkg}"_*.deb | head -1)
  rm -rf "$dest"; mkdir -p "$dest"
  dpkg -x "$deb" "$dest"
  dpkg-deb -f "$deb" Package Version > "$dest/DEB-VERSION"
  echo "peers: $pkg $(dpkg-deb -f "$deb" Version) ($suite)"
}

# The loopback Sigstore stack (docs/decisions/0035-loopback-sigstore-stack.md): Fulcio, Rekor v2
# (rekor-tiles, POSIX storage) and the timestamp authority, built offline in GOPATH mode from sid's
# Go source packages with sid's Go 1.27 (Rekor v2 needs >= 1.25). Fulcio needs stand-ins for five
# import paths Debian lacks (scripts/sigstack/shims*, each file marked STAND-IN). Built once, niced;
# each source package's version is recorded in sigstack/VERSIONS. sid keeps only the newest
# version of a package, so a rebuild can meet new gaps: the cached binaries stay until one succeeds.
build_sigstack() {
  have_sigstack && [ -z "${PEERS_FORCE:-}" ] && return 0
  ensure_lists
  local t0; t0=$(date +%s)
  local dl="$PEERS/apt/sid/debs"; mkdir -p "$dl"
  local go="$PEERS/go127"
  if [ ! -x "$go/usr/lib/go-1.27/bin/go" ]; then
    ( cd "$dl" && rm -f golang-1.27-go_*.deb golang-1.27-src_*.deb \
        && apt_private sid download golang-1.27-go golang-1.27-src >/dev/null )
    rm -rf "$go"; mkdir -p "$go"
    dpkg -x "$dl"/golang-1.27-go_*.deb "$go"; dpkg -x "$dl"/golang-1.27-src_*.deb "$go"
  fi
  local pkgs; pkgs=$(grep -v '^#' "$here/scripts/sigstack/packages.txt")
  local want=""
  for p in $pkgs; do ls "$dl"/"${p}"_*.deb >/dev/null 2>&1 || want="$want $p"; done
  # shellcheck disable=SC2086
  [ -z "$want" ] || ( cd "$dl" && apt_private sid download $want >/dev/null )
  local b="$PEERS/sigstack-build"; rm -rf "$b/root" "$b/shims" "$b/shims-last"; mkdir -p "$b/root"
  : > "$b/VERSIONS"
  for p in $pkgs; do
    local deb; deb=$(ls "$dl"/"${p}"_*.deb | head -1)
    dpkg -x "$deb" "$b/root"
    echo "$p=$(dpkg-deb -f "$deb" Version)" >> "$b/VERSIONS"
  done
  echo "golang-1.27-go=$(dpkg-deb -f "$(ls "$dl"/golang-1.27-go_*.deb | head -1)" Version)" >> "$b/VERSIONS"
  cp -r "$here/scripts/sigstack/shims" "$here/scripts/sigstack/shims-last" "$b/"
  mkdir -p "$b/bin"
  local gocode="$b/root/usr/share/gocode" t
  # Fulcio sees the stand-ins first (its v1 go-grpc-middleware root must shadow Debian's v2 at the
  # v1 path) and the empty KMS packages last; Rekor v2 and the TSA must not see them at all.
  for t in timestamp-server=github.com/sigstore/timestamp-authority/v2/cmd/timestamp-server \
           rekor-server-posix=github.com/sigstore/rekor-tiles/cmd/rekor-server/posix \
           fulcio=github.com/sigstore/fulcio; do
    local gopath="$gocode"
    [ "${t%%=*}" = fulcio ] && gopath="$b/shims:$gocode:$b/shims-last"
    if ! ( export GOROOT="$go/usr/lib/go-1.27" GO111MODULE=off GOTOOLCHAIN=local GOFLAGS= \
                  CGO_ENABLED=0 GOPROXY=off GOSUMDB=off GOPATH="$gopath" GOCACHE="$b/gocache"
           nice -n 10 "$GOROOT/bin/go" build -trimpath -o "$b/bin/${t%%=*}" "${t#*=}" ); then
      echo "peers: building ${t%%=*} from sid's sources failed (see above); the source package" \
           "versions tried are in $b/VERSIONS" >&2
      return 1
    fi
  done
  rm -rf "$PEERS/sigstack"; mkdir -p "$PEERS/sigstack"
  mv "$b/bin" "$PEERS/sigstack/bin"; mv "$b/VERSIONS" "$PEERS/sigstack/VERSIONS"
  rm -rf "$b/root"   # the sources are in the .debs; keep the Go build cache for a rebuild
  echo "peers: built the Sigstore stack (fulcio, rekor-server-posix, timestamp-server) in" \
       "$(( $(date +%s) - t0 ))s"
}

if [ "$what" = sigstore ]; then
  build_sigstack
  extract sid sigstore-go sigstore-go
  have_sigstack || { echo "peers: the Sigstore stack is incomplete in $PEERS" >&2; exit 1; }
  echo "peers: Sigstore stack in $PEERS/sigstack"
  exit 0
fi

extract trixie cosign cosign2
extract sid    cosign cosign3
extract trixie oras   oras12
extract sid    oras   oras13
extract sid    crane  crane
extract sid    sigstore-go sigstore-go

build_refreg() {
  local out="$PEERS/refreg/acx-refreg"
  [ -x "$out" ] && [ -z "${PEERS_FORCE:-}" ] && return 0
  local go="$PEERS/go124"
  if [ ! -x "$go/usr/lib/go-1.24/bin/go" ]; then
    ensure_lists
    local dl="$PEERS/apt/trixie/debs"; mkdir -p "$dl"
    ( cd "$dl" && rm -f golang-1.24-go_*.deb golang-1.24-src_*.deb \
        && apt_private trixie download golang-1.24-go golang-1.24-src >/dev/null )
    rm -rf "$go"; mkdir -p "$go"
    dpkg -x "$dl"/golang-1.24-go_*.deb "$go"; dpkg -x "$dl"/golang-1.24-src_*.deb "$go"
  fi
  extract sid golang-github-google-go-containerregistry-dev ggcr-src
  local b="$PEERS/refreg-build"; mkdir -p "$b/src/acxrefreg" "$PEERS/refreg"
  cp "$here/scripts/refreg/main.go" "$b/src/acxrefreg/main.go"
  ( export GOROOT="$go/usr/lib/go-1.24" GO111MODULE=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0 \
           GOPATH="$b:$PEERS/ggcr-src/usr/share/gocode" GOCACHE="$b/cache" GOPROXY=off
    "$GOROOT/bin/go" build -o "$out" acxrefreg )
  echo "peers: built acx-refreg"
}
build_refreg
build_sigstack

if ! command -v docker-registry >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry >/dev/null
  # The package starts a system service on :5000; tests start their own, so stop it.
  (systemctl stop docker-registry 2>/dev/null || service docker-registry stop 2>/dev/null || true) >/dev/null
fi

# tmux drives the terminal-prompt tests (tests/interop/test_tty_prompts.py; required in CI).
if ! command -v tmux >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q tmux >/dev/null
fi

# SoftHSM2 is the PKCS#11 token the signing tests use (tests/attestation/test_keyrefs.py; required in CI).
if ! command -v softhsm2-util >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q softhsm2 >/dev/null
fi

# The reference MCP filesystem server (npm), pinned; needs Node.js >= 18 (Debian's nodejs).
install_mcp_fs() {
  [ -x "$PEERS/$MCP_FS_BIN" ] && [ -z "${PEERS_FORCE:-}" ] && return 0
  if ! command -v npm >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null
  fi
  rm -rf "$PEERS/mcp-filesystem"; mkdir -p "$PEERS/mcp-filesystem"
  npm install --prefix "$PEERS/mcp-filesystem" --no-audit --no-fund --silent \
    "@modelcontextprotocol/server-filesystem@$MCP_FS_VERSION" >/dev/null
  echo "peers: @modelcontextprotocol/server-filesystem $MCP_FS_VERSION (npm)"
}
install_mcp_fs

# chromium + chromium-driver drive the web pages' browser tests (tests/studio/test_browser.py,
# `make screenshots`; required in CI). Debian's own packages, no browser download at test time.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null
fi

have_all || { echo "peers: some peers are missing after install" >&2; exit 1; }
echo "peers: installed in $PEERS"

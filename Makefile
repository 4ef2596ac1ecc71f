# acxoci — the README's two commands are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export ACX_PEERS_DIR ?= $(CURDIR)/.peers

.PHONY: venv peers sigstore-stack test test-fast lint demo bench clean dist fuzz soak mutate screenshots

# bytecode is compiled once here: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every acx
# run would otherwise compile the package from source (decision 0027)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,lance]'
	$(BIN)/python -m compileall -q -j 0 acxoci > /dev/null
	touch $(STAMP)

venv: $(STAMP)

peers:
	bash scripts/install-peers.sh

# Fulcio, Rekor v2 and the timestamp authority from Debian's Go sources, into the peers folder
# (cached; `make peers` builds them too). Run one with `scripts/sigstore-stack.sh up DIR`.
sigstore-stack:
	bash scripts/install-peers.sh sigstore

lint: venv
	$(BIN)/ruff check acxoci tests
	$(BIN)/mypy

test: venv peers lint
	bash scripts/run-tests.sh

# the subject folders of the trust core, the property tests and the source walks, without the tests
# that need peers or registries (scripts/mutate.py FAST_FOLDERS names the same folders)
FAST_TESTS := tests/attest tests/attestation tests/cartridge tests/cli tests/exchange tests/install \
	tests/level tests/oci tests/policy tests/property tests/release tests/walks tests/workflow

test-fast: venv
	$(BIN)/pytest -q -x -p no:cacheprovider -m "not interop" $(FAST_TESTS)

demo: venv
	bash scripts/demo.sh $(REGISTRY)

bench: venv peers
	$(BIN)/python scripts/bench.py

# The PNGs docs/guide.md shows: the browser tests write them to build/screenshots on every run;
# here they go to docs/img instead (tests/studio/test_browser.py, chromium from `make peers`).
screenshots: venv peers
	ACX_SCREENSHOTS=$(CURDIR)/docs/img $(BIN)/pytest -q -p no:cacheprovider tests/studio/test_browser.py

# A wheel and an sdist in dist/, each checked to install into a clean venv and run.
DIST ?= dist
dist: venv
	rm -rf $(DIST)
	$(BIN)/python -m build --outdir $(DIST) .
	bash scripts/check-dist.sh $(DIST)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .demo .bench .fuzz .soak .mutate

# Reliability campaigns (docs/reliability.md): scale down with FUZZ_SECONDS=N / SOAK_RUNS=N;
# FUZZ_PROPERTY=0 skips the exhaustive property run (every value of every document kind retyped).
FUZZ_SECONDS ?= 600
FUZZ_PROPERTY ?= 1
SOAK_RUNS ?= 1000

fuzz: venv
	$(BIN)/python scripts/fuzz.py --seconds $(FUZZ_SECONDS)
	if [ "$(FUZZ_PROPERTY)" != 0 ]; then $(BIN)/python scripts/fuzz.py --property && \
	  FUZZ_EXHAUSTIVE=1 $(BIN)/pytest -q -p no:cacheprovider tests/documents; fi

soak: venv peers
	$(BIN)/python scripts/soak.py --runs $(SOAK_RUNS)

mutate: venv
	$(BIN)/python scripts/mutate.py $(MUTATE_ARGS)

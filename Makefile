# Timbra — the two commands: `make run` and `make test` (and `make bench`).
# Each installs what is missing first (Debian packages via apt-get), then does its job.
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test test-future bench package deps-test deps-run deps-bench check-fixtures lint lint-workflows test-rust test-installed ui-build ui-test api-fuzz fuzz-short

## make run: builds the UI and the desktop app and starts it. With nothing configured it opens in
## Modo sandbox (database in the app-data folder, PAC simulator, SAT's test CSD). Without a
## display (DISPLAY/WAYLAND_DISPLAY unset) it runs under xvfb-run.
run: deps-run ui-build
	$(CARGO) build -p timbra-app
	@if [[ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]]; then ./target/debug/timbra-app; \
	else echo "Sin pantalla (DISPLAY): Timbra se inicia bajo xvfb-run." >&2; xvfb-run -a ./target/debug/timbra-app; fi

## make test: every test suite of the project.
test: deps-test check-fixtures lint lint-workflows ui-test test-rust test-installed

## make package: the release installers this machine can build (Linux: .deb and .rpm) with the
## Tauri CLI (scripts/tauri; the Windows and macOS installers come from the release workflow,
## .github/workflows/release.yml). Nothing is downloaded at build time.
package: deps-run ui-build
	./scripts/tauri build --ci --bundles deb,rpm
	@dir="$${CARGO_TARGET_DIR:-target}/release/bundle"; echo "Instaladores:"; ls -1 "$$dir"/deb/*.deb "$$dir"/rpm/*.rpm

## The installed app: a debug .deb of the debug build of `make test` (no release build here), unpacked into a
## scratch root (dpkg -x), and the E2E flow `instalada_emitir` run against usr/bin/timbra-app in
## it (tests/e2e/installed.rs): sandbox, emit, Timbrada, data in the identifier's folders.
test-installed: ui-build
	$(TEST_BUILD) --no-run
	./scripts/tauri bundle --ci --debug --bundles deb
	@root=$$(mktemp -d) && trap 'rm -rf "$$root"' EXIT && \
	deb=$$(ls -t "$${CARGO_TARGET_DIR:-target}"/debug/bundle/deb/*.deb | head -1) && \
	dpkg-deb -x "$$deb" "$$root" && echo "Instalado $$deb en $$root" && \
	TIMBRA_E2E_APP="$$root/usr/bin/timbra-app" $(TEST_BUILD) --test e2e -- instalada

## The release workflow (.github/workflows/) checked by zizmor (from PyPI, in a virtualenv under
## the target folder: scripts/install-deps test installs it), offline: syntax, expressions and
## its security audits.
lint-workflows:
	"$${CARGO_TARGET_DIR:-target}/tools/venv/bin/zizmor" --offline .github/workflows/

## Formatting and lints are part of the suite (ui-build first: the app's build embeds ui/dist).
lint: ui-build
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# One build serves every step of `make test`: the workspace's tests with the drain's failpoints
# compiled in (inert unless TIMBRA_FAILPOINT names one; drain_crash.rs needs them). Every later
# step (api-fuzz, test-installed) takes its binaries from this same build: `cargo build -p X`
# resolves other features (no dev-dependencies) and would compile most of the tree again.
TEST_BUILD = $(CARGO) test --workspace --locked --features timbra-cli/failpoints

# Includes the desktop app's webview E2E suite (src-tauri, test `e2e`: Xvfb + tauri-driver),
# which needs the built UI; screenshots go to artifacts/screenshots/. The outbox's conformance
# suite runs every store, intake, drain, duplicate and cancellation test on SQLite and on
# PostgreSQL (a fresh database per test on the server scripts/test-postgres-url names;
# deps-test starts one); drain_crash adds the four-worker kill -9 chaos run on PostgreSQL.
test-rust: ui-build
	export TIMBRA_TEST_POSTGRES_URL="$$(./scripts/test-postgres-url)" && \
	$(TEST_BUILD)
	$(MAKE) api-fuzz
	$(MAKE) fuzz-short

## make test-future: the cargo test suites (not the E2E) with the system clock past the end of
## SAT's test CSD (2027-05-18): every test binary runs under libfaketime (scripts/faketime-runner,
## the clock moved to TIMBRA_FAKETIME, by default `2027-06-01 12:00:00` UTC; monotonic clocks
## untouched), one package at a time, then the desktop app's unit tests. A test that judges a certificate by the system clock fails
## here; tests pass their clock in. Not part of `make test` (its time).
FUTURE_PACKAGES ?= timbra-rules timbra-cfdi timbra-sat-ws timbra-pac timbra-pac-sim timbra-pac-clients timbra-pdf timbra-outbox timbra-services timbra-api timbra-cli
test-future: deps-test
	export TIMBRA_TEST_POSTGRES_URL="$$(./scripts/test-postgres-url)" && \
	export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$(CURDIR)/scripts/faketime-runner" && \
	for p in $(FUTURE_PACKAGES); do \
	  echo "== $$p (reloj: $${TIMBRA_FAKETIME:-2027-06-01 12:00:00} UTC)" >&2; \
	  $(CARGO) test -p $$p --locked || exit 1; \
	done && \
	$(CARGO) test -p timbra-app --locked --lib

## Coverage-guided fuzzing (fuzz/, cargo-fuzz on stable via RUSTC_BOOTSTRAP=1) of the CFDI XML
## reader, the sale JSON parser and each PAC's response parsers: 20 s per target. Longer runs:
## docs/fuzzing.md.
fuzz-short:
	./scripts/fuzz 20

## Property-based testing of the local API from its OpenAPI document (schemathesis, pinned, in a
## virtualenv under the target folder): no 5xx, every response as documented.
api-fuzz:
	$(TEST_BUILD) --no-run
	TIMBRA_BIN=$${CARGO_TARGET_DIR:-target}/debug/timbra ./scripts/schemathesis

## The UI (ui/): dependencies from package-lock.json, the bundle the app embeds, its checks.
ui/node_modules/.installed: ui/package.json ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund
	touch $@
ui-build: ui/node_modules/.installed
	cd ui && npm run build
ui-test: ui/node_modules/.installed
	cd ui && npm run check && npm test

check-fixtures:
	cd crates/cfdi/sat && sha256sum -c --quiet SHA256SUMS
	cd tests/fixtures/cfdi && sha256sum -c --quiet SHA256SUMS
	cd crates/pdf/fonts && sha256sum -c --quiet SHA256SUMS
	cd crates/cfdi/catalogs && sha256sum -c --quiet SHA256SUMS

## make bench: every benchmark, then one table (scripts/bench-table): the criterion benches and
## the drain bench; the CFDI core against xsltproc + openssl per process and in batch, and
## python-satcfdi (installed into a virtualenv under the target folder, never by make test);
## team mode on PostgreSQL (scripts/bench-teams: drain with 1/2/4 worker processes, intake per
## sale and batched on PostgreSQL and SQLite); the app's cold start and memory at 100,000
## invoices (scripts/bench-app-start, under Xvfb).
bench: deps-bench ui-build
	$(CARGO) bench --workspace --exclude timbra-app --locked
	$(CARGO) build --release --locked -p timbra-cli -p timbra-app
	./scripts/bench-table

deps-test:
	./scripts/install-deps test
deps-run:
	./scripts/install-deps run
deps-bench:
	./scripts/install-deps bench

# Timbra — the two commands: `make run` and `make test` (and `make bench`).
# Each installs what is missing first (Debian packages via apt-get), then does its job.
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test bench deps-test deps-run deps-bench check-fixtures test-rust

## make run: builds and starts Timbra. Until the desktop app lands (issue: console), this builds
## the `timbra` command and shows its help.
run: deps-run
	$(CARGO) build -p timbra-cli
	./target/debug/timbra --help

## make test: every test suite of the project.
test: deps-test check-fixtures test-rust

test-rust:
	$(CARGO) test --workspace --locked

check-fixtures:
	cd crates/cfdi/sat && sha256sum -c --quiet SHA256SUMS
	cd tests/fixtures/cfdi && sha256sum -c --quiet SHA256SUMS

## make bench: every benchmark, then one table (with the CFDI core against xsltproc + openssl).
bench: deps-bench
	$(CARGO) bench --workspace --locked
	./scripts/bench-table

deps-test:
	./scripts/install-deps test
deps-run:
	./scripts/install-deps run
deps-bench:
	./scripts/install-deps bench

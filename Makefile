# pikod — see README.md. `make help` lists the targets.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      := bin
STATICCHECK_VERSION := v0.8.2

# Importing the keyring library dials the D-Bus session bus at start-up
# (vault/doc.go). The tests never use the desktop's bus: every target that
# runs tests, or pikod for them, has it disabled (the keyring tests start a
# private bus and keyring of their own).
TEST_TARGETS := test test-deps interop-deps conformance conformance-deps fuzz bench
$(TEST_TARGETS): export DBUS_SESSION_BUS_ADDRESS = disabled:

# make run keeps the session bus when there is one (the address set, or a
# bus socket where pikod looks: $XDG_RUNTIME_DIR/bus, /run/user/UID/bus), so
# the vault's "auto" can choose the Secret Service at a first start; without
# one it runs pikod with "disabled:", which says so instead of a warning.
SESSION_BUS = $(shell if [ -n "$$DBUS_SESSION_BUS_ADDRESS" ] || [ -S "$${XDG_RUNTIME_DIR:-/nonexistent}/bus" ] || [ -S "/run/user/$$(id -u)/bus" ]; then echo yes; fi)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/pikod, bin/pikoctl and bin/browser-bridge
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pikod ./cmd/pikod
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pikoctl ./cmd/pikoctl
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/browser-bridge ./cmd/browser-bridge

# make install puts both binaries at a stable path, for the service unit:
# PREFIX/bin/pikod and PREFIX/bin/pikoctl (default ~/.local/bin).
PREFIX ?= $(HOME)/.local

.PHONY: install
install: build ## install pikod and pikoctl to PREFIX/bin (default ~/.local), for 'pikoctl service install'
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN)/pikod $(BIN)/pikoctl $(PREFIX)/bin/
	@echo "installed $(PREFIX)/bin/pikod and $(PREFIX)/bin/pikoctl; next: $(PREFIX)/bin/pikoctl service install"

.PHONY: run
run: build ## build and run pikod in the foreground on the default instance (with the session bus when there is one)
	$(if $(SESSION_BUS),,DBUS_SESSION_BUS_ADDRESS=disabled: )$(BIN)/pikod $(ARGS)

.PHONY: man
man: ## write pikoctl's man pages to bin/man/man1 (then: MANPATH=$$PWD/bin/man man pikoctl-mcp-add)
	$(GO) run ./cmd/pikoctl __docs --man $(BIN)/man/man1

.PHONY: generate
generate: ## regenerate docs/reference from the source (tests fail while it is out of date)
	$(GO) generate ./contracts ./cmd/pikoctl

# The interop tests run the official MCP reference servers, pinned in
# $(INTEROP)/package-lock.json. PIKO_SKIP_INTEROP=1 skips both the install
# and the tests (for machines without node).
INTEROP := tests/interop
INTEROP_STAMP := $(INTEROP)/node_modules/.package-lock.json

# The official MCP client conformance suite runs against pikod through
# the adapter in $(CONFORMANCE) (docs/development.md, "The MCP conformance suite").
# Node 22 and the suite are npm packages pinned in
# $(CONFORMANCE)/package-lock.json. PIKO_SKIP_CONFORMANCE=1 skips both the
# install and the run. CONFORMANCE_ARGS passes flags to the runner, e.g.
# CONFORMANCE_ARGS='-scenarios tools_call,auth/metadata-default'.
CONFORMANCE := tests/conformance
CONFORMANCE_STAMP := $(CONFORMANCE)/node_modules/.package-lock.json

# make test on a fresh Debian machine: test-deps installs the Debian
# packages the tests run (as root) or stops at once naming them (scripts/test-deps).
.PHONY: test
test: test-deps $(if $(filter 1,$(PIKO_SKIP_INTEROP)),,interop-deps) $(if $(filter 1,$(PIKO_SKIP_CONFORMANCE)),,conformance) ## run the whole test suite with the race detector
	$(GO) mod download
	$(GO) test -race -count=1 -timeout 25m ./...

.PHONY: test-deps
test-deps: ## install (as root) or name the Debian packages the tests need
	@GO='$(GO)' ./scripts/test-deps

.PHONY: conformance
conformance: conformance-deps ## run the MCP client conformance suite against pikod; results in tests/conformance/out
	$(GO) run ./$(CONFORMANCE)/runner -out $(CONFORMANCE)/out -eras default,legacy $(CONFORMANCE_ARGS)

.PHONY: conformance-deps
conformance-deps: $(CONFORMANCE_STAMP) ## install node 22 and the pinned conformance suite from npm

$(CONFORMANCE_STAMP): $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	@command -v npm >/dev/null || { echo "conformance-deps: npm not found: install node and npm (Debian: apt-get install nodejs npm), or set PIKO_SKIP_CONFORMANCE=1" >&2; exit 1; }
	npm ci --prefix $(CONFORMANCE) --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: interop-deps
interop-deps: $(INTEROP_STAMP) ## install the pinned npm MCP servers the interop tests run

# npm ci writes node_modules/.package-lock.json; it is older than the
# manifests when they changed since the last install.
$(INTEROP_STAMP): $(INTEROP)/package.json $(INTEROP)/package-lock.json
	@command -v npm >/dev/null || { echo "interop-deps: npm not found: install node and npm (Debian: apt-get install nodejs npm), or set PIKO_SKIP_INTEROP=1" >&2; exit 1; }
	npm ci --prefix $(INTEROP) --no-audit --no-fund
	@touch $@

# The benchmark report (bench/README.md). It runs server-everything from
# $(INTEROP) and compares with the MCP Inspector CLI pinned in
# $(BENCH_NODE)/package-lock.json. An inspector that cannot be installed is
# not an error: the report says so instead of giving a number.
# BENCH_ARGS passes flags to pikobench, e.g. BENCH_ARGS='-only a,b'.
BENCH_NODE  := bench/node
BENCH_STAMP := $(BENCH_NODE)/node_modules/.package-lock.json

.PHONY: bench
bench: $(if $(filter 1,$(PIKO_SKIP_INTEROP)),,interop-deps) $(BENCH_STAMP) ## run the benchmarks, write bench/REPORT.md and print it
	GO=$(GO) $(GO) run ./bench/cmd/pikobench $(BENCH_ARGS)

.PHONY: soak
soak: ## a simulated month: 5 million calls with retention set low; writes bench/SOAK.md (SOAK_ARGS='-soak-calls 200000' for a short one)
	GO=$(GO) $(GO) run ./bench/cmd/pikobench -soak $(SOAK_ARGS)

$(BENCH_STAMP): $(BENCH_NODE)/package.json $(BENCH_NODE)/package-lock.json
	-npm ci --prefix $(BENCH_NODE) --no-audit --no-fund --loglevel error
	@if [ -f $@ ]; then touch $@; else echo "bench: the MCP Inspector is not installed; the report will say so" >&2; fi

.PHONY: check
check: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Every Fuzz function of the module, found with go test -list, each for
# FUZZTIME (go test can fuzz only one target at a time).
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## run every fuzz target of the module for FUZZTIME (default 30s) each
	@set -e; n=0; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz: $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test $$pkg -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME); \
			n=$$((n+1)); \
		done; \
	done; echo "fuzz: $$n targets, none failed"

.PHONY: clean
clean: ## remove built binaries
	rm -rf $(BIN)

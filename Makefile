# redis-msetex: `make help` lists the targets.

SHELL  := /bin/bash
CARGO  ?= cargo
PORT   ?= 6379
ROUNDS ?= 7
MODULE := target/release/libmsetex.so

# make install: where Debian keeps Redis modules (Valkey's:
# MODULEDIR=/usr/lib/valkey/modules).
PREFIX    ?= /usr
DESTDIR   ?=
MODULEDIR ?= $(PREFIX)/lib/redis/modules
# make deb: where the package goes.
DEBDIR    ?= target/deb
# make rpm: where the package goes.
RPMDIR    ?= target/rpm
# make bench-gate: the servers it runs besides REDIS_SERVER (Debian's Redis 7.0.15).
GATE_SERVERS ?= ../shared/servers/valkey-8.1.1/valkey-server
# make dist: a tarball named after the crate version and the target triple.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TRIPLE  := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
DISTDIR ?= target/dist
DISTNAME = msetex-$(VERSION)-$(TRIPLE)

.DEFAULT_GOAL := help
.PHONY: help deps deps-build build test test-matrix run lint bench bench-quick bench-instr bench-gate bench-floor soak profile fuzz install install-files uninstall dist dist-files deb deb-files rpm rpm-files clean

help: ## List the targets and the variables
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables (make NAME=value target), with their values now:"
	@echo "  PORT=$(PORT)  the port of make run"
	@echo "  ROUNDS=$(ROUNDS)  rounds of make bench"
	@echo "  PREFIX=$(PREFIX)  MODULEDIR=$(MODULEDIR)  DESTDIR=$(DESTDIR)  where make install puts the library (Valkey: MODULEDIR=/usr/lib/valkey/modules)"
	@echo "  DEBDIR=$(DEBDIR)  where make deb puts the package"
	@echo "  RPMDIR=$(RPMDIR)  where make rpm puts the package"
	@echo "  DISTDIR=$(DISTDIR)  where make dist puts the tarball ($(DISTNAME).tar.gz)"
	@echo "  SERVERS=\"bin ...\"  the servers of make test-matrix, make bench and make bench-instr (default: ../shared/servers)"
	@echo "  GATE_SERVERS=$(GATE_SERVERS)  make bench-gate's servers besides REDIS_SERVER"
	@echo "  FUZZ_CASES=N  cases per property in make fuzz (default 1000000)"

deps: ## Install what is missing (redis-server, redis-tools, libclang-dev, gcc; apt-get when root)
	@scripts/deps.sh

deps-build: ## Install what building needs and is missing (libclang-dev, gcc)
	@scripts/deps.sh build

build: deps-build ## Build the module: target/release/libmsetex.so
	$(CARGO) build --release --locked
	@echo "built $(MODULE)"

test: deps build ## Build, then run the unit and integration tests (real redis-server processes); lists skips
	scripts/test.sh

test-matrix: deps build ## The integration suite on every server (SERVERS="bin ..."); writes docs/COMPATIBILITY.md
	scripts/test-matrix.sh

run: deps build ## Start redis-server in the foreground with ./redis.conf (MSETEX loaded) on PORT
	@if (exec 3<>/dev/tcp/127.0.0.1/$(PORT)) 2>/dev/null; then \
		echo "port $(PORT) is in use (another redis-server?): stop it, or pick another port: make run PORT=<port>"; \
		exit 1; \
	fi
	redis-server ./redis.conf --port $(PORT)

lint: deps-build ## cargo fmt --check; cargo clippy with warnings and the unsafe lints as errors
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings \
		-D unsafe_op_in_unsafe_fn -D clippy::undocumented_unsafe_blocks

bench: deps build ## Benchmarks on every server (ROUNDS=7, SERVERS="bin ..."; 8 to 30 min by machine); writes docs/BENCHMARKS.md
	$(CARGO) run --release --locked -p msetex-bench -- --rounds $(ROUNDS)

bench-quick: deps build ## A first look in a minute or two (2 rounds, fewer keys); writes target/BENCHMARKS-quick.md
	$(CARGO) run --release --locked -p msetex-bench -- --quick --out target/BENCHMARKS-quick.md --readme -

bench-instr: deps build bench-floor ## Instructions per key under callgrind, every server (~15 min); its sections of docs/BENCHMARKS.md, docs/PROFILE.md
	$(CARGO) run --release --locked -p msetex-bench -- --instr

bench-gate: deps build bench-floor ## CI: bench-instr on REDIS_SERVER and GATE_SERVERS (~3 min); fails when a target is missed
	@for bin in $(GATE_SERVERS); do test -f "$$bin" || { echo "make bench-gate: $$bin not found"; exit 1; }; done
	SERVERS="$(GATE_SERVERS)" $(CARGO) run --release --locked -p msetex-bench -- --gate \
		--out target/bench-gate.md --profile target/bench-gate-profile.md

# The floor module (bench/floor) the instruction bench loads beside the module; valgrind.
bench-floor:
	@command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
	$(CARGO) build --release --locked -p msetex-floor

soak: deps build ## Reliability tests at full size on every server + long fuzz run (~30 min); writes docs/RELIABILITY.md
	scripts/soak.sh

profile: deps build ## perf: where MSETEX spends its time (needs perf); writes docs/PROFILE.md
	scripts/profile.sh

fuzz: build ## Parser property tests with FUZZ_CASES cases each (default 1000000)
	MSETEX_FUZZ_CASES=$${FUZZ_CASES:-1000000} $(CARGO) test --release --locked --lib -- syntax::tests

install: build ## Install libmsetex.so in MODULEDIR (below)
	@$(MAKE) --no-print-directory install-files

# Redis 7+ refuses to load a module file without execute permission.
install-files:
	install -d "$(DESTDIR)$(MODULEDIR)"
	install -m 0755 $(MODULE) "$(DESTDIR)$(MODULEDIR)/libmsetex.so"
	@echo "installed $(DESTDIR)$(MODULEDIR)/libmsetex.so; add to redis.conf (or valkey.conf):"
	@echo "loadmodule $(MODULEDIR)/libmsetex.so"

uninstall: ## Remove the installed library
	rm -f "$(DESTDIR)$(MODULEDIR)/libmsetex.so"

dist: build ## Release tarball in DISTDIR: msetex-<version>-<target>.tar.gz
	@$(MAKE) --no-print-directory dist-files

dist-files:
	rm -rf "$(DISTDIR)/$(DISTNAME)"
	mkdir -p "$(DISTDIR)/$(DISTNAME)"
	cp $(MODULE) README.md LICENSE packaging/msetex.conf "$(DISTDIR)/$(DISTNAME)/"
	tar -C "$(DISTDIR)" -czf "$(DISTDIR)/$(DISTNAME).tar.gz" "$(DISTNAME)"
	rm -rf "$(DISTDIR)/$(DISTNAME)"
	@echo "$(DISTDIR)/$(DISTNAME).tar.gz"

deb: build ## Debian package in DEBDIR: msetex_<version>_<arch>.deb (Redis and Valkey module dirs)
	@$(MAKE) --no-print-directory deb-files

deb-files:
	DEBDIR="$(DEBDIR)" scripts/deb.sh

rpm: build ## RPM for RHEL/Fedora in RPMDIR: msetex-<version>-<release>.<arch>.rpm (needs rpmbuild)
	@$(MAKE) --no-print-directory rpm-files

rpm-files:
	RPMDIR="$(RPMDIR)" scripts/rpm.sh

clean: ## Remove build output
	$(CARGO) clean

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
# make dist: where the tarballs go.
DISTDIR ?= target/dist
# make portable, dist, deb and rpm: the architectures built, each with
# cargo-zigbuild against glibc GLIBC (scripts/portable.sh): the library then
# needs that glibc at most, which the packages read from it.
ARCH  ?= x86_64 aarch64
GLIBC ?= 2.17
HOST_ARCH := $(shell uname -m)
PORTABLE_LIBS = $(foreach arch,$(ARCH),target/$(arch)-unknown-linux-gnu/release/libmsetex.so)
# PORTABLE=1: the tests (make test, test-matrix, soak), the benchmarks (make
# bench, bench-gate) and make install use the portable library of this
# machine's architecture instead of cargo's native build (make run still
# loads the native one, which redis.conf names).
PORTABLE ?=
ifeq ($(PORTABLE),1)
MODULE := target/$(HOST_ARCH)-unknown-linux-gnu/release/libmsetex.so
export MSETEX_MODULE := $(CURDIR)/$(MODULE)
endif

.DEFAULT_GOAL := help
.PHONY: help deps deps-build build portable cross test test-matrix run lint bench bench-quick bench-instr bench-gate bench-floor soak profile fuzz install install-files uninstall dist dist-files deb deb-files rpm rpm-files clean

help: ## List the targets and the variables
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables (make NAME=value target), with their values now:"
	@echo "  PORT=$(PORT)  the port of make run"
	@echo "  ROUNDS=$(ROUNDS)  rounds of make bench"
	@echo "  PREFIX=$(PREFIX)  MODULEDIR=$(MODULEDIR)  DESTDIR=$(DESTDIR)  where make install puts the library (Valkey: MODULEDIR=/usr/lib/valkey/modules)"
	@echo "  DEBDIR=$(DEBDIR)  where make deb puts the packages and SHA256SUMS"
	@echo "  RPMDIR=$(RPMDIR)  where make rpm puts the packages and SHA256SUMS"
	@echo "  DISTDIR=$(DISTDIR)  where make dist puts the tarballs and SHA256SUMS"
	@echo "  ARCH=\"$(ARCH)\"  the architectures of make portable, dist, deb and rpm"
	@echo "  GLIBC=$(GLIBC)  the glibc the portable libraries are built against (the newest they may need)"
	@echo "  PORTABLE=$(PORTABLE)  1: the tests, the benchmarks and make install use the portable $(HOST_ARCH) library"
	@echo "  SERVERS=\"bin ...\"  the servers of make test-matrix and make bench-instr (default: ../shared/servers)"
	@echo "  GATE_SERVERS=$(GATE_SERVERS)  make bench-gate's servers besides REDIS_SERVER"
	@echo "  FUZZ_CASES=N  cases per property in make fuzz (default 1000000)"

deps: ## Install what is missing (redis-server, redis-tools, libclang-dev, gcc; apt-get when root)
	@scripts/deps.sh

deps-build: ## Install what building needs and is missing (libclang-dev, gcc)
	@scripts/deps.sh build

build: deps-build ## Build the module: target/release/libmsetex.so
	$(CARGO) build --release --locked
ifeq ($(PORTABLE),1)
	PORTABLE_GLIBC=$(GLIBC) scripts/portable.sh $(HOST_ARCH)
endif
	@echo "built $(MODULE)"

portable: deps-build ## Build the library of each ARCH against glibc GLIBC (cargo-zigbuild; installs zig and the Rust target)
	PORTABLE_GLIBC=$(GLIBC) scripts/portable.sh $(ARCH)

# What the tests of the portable builds use: the library of each ARCH and an
# arm64 redis-server under qemu. Where the toolchain, qemu or the arm64
# package cannot be installed, the reason goes to target/cross/*.skip and the
# tests skip with it.
cross: deps-build
	PORTABLE_GLIBC=$(GLIBC) scripts/portable.sh --soft $(ARCH)
	scripts/arm64-server.sh --soft

test: deps build cross ## Build, then run the unit and integration tests (real redis-server processes); lists skips
	scripts/test.sh

test-matrix: deps build cross ## The integration suite on every server (SERVERS="bin ..."); writes docs/COMPATIBILITY.md
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

bench: deps build ## Wall-clock benchmarks of REDIS_SERVER (ROUNDS=7); writes docs/BENCHMARKS.md but its instruction section
	$(CARGO) run --release --locked -p msetex-bench -- --rounds $(ROUNDS)

bench-quick: deps build ## A first look in a minute or two (2 rounds, fewer keys); writes target/BENCHMARKS-quick.md
	$(CARGO) run --release --locked -p msetex-bench -- --quick --out target/BENCHMARKS-quick.md

bench-instr: deps build bench-floor ## Instructions per key under callgrind, every server and setup (~50 min); its sections of docs/BENCHMARKS.md, docs/PROFILE.md, README's cost block
	$(CARGO) run --release --locked -p msetex-bench -- --instr

bench-gate: deps build bench-floor ## CI: bench-instr on REDIS_SERVER and GATE_SERVERS, fewer setups (~5 min); fails when a target is missed
	@for bin in $(GATE_SERVERS); do test -f "$$bin" || { echo "make bench-gate: $$bin not found"; exit 1; }; done
	SERVERS="$(GATE_SERVERS)" $(CARGO) run --release --locked -p msetex-bench -- --gate \
		--out target/bench-gate.md --profile target/bench-gate-profile.md --readme -

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

dist: portable ## Tarball per ARCH in DISTDIR: msetex-<version>-<arch>-unknown-linux-gnu.tar.gz, and SHA256SUMS
	@$(MAKE) --no-print-directory dist-files

# The -files targets package what make portable built (the tests call them).
dist-files:
	DISTDIR="$(DISTDIR)" scripts/dist.sh $(PORTABLE_LIBS)

deb: portable ## Debian package per ARCH in DEBDIR: msetex_<version>_<amd64|arm64>.deb, and SHA256SUMS
	@$(MAKE) --no-print-directory deb-files

deb-files:
	DEBDIR="$(DEBDIR)" scripts/deb.sh $(PORTABLE_LIBS)

rpm: portable ## RPM per ARCH in RPMDIR: msetex-<version>-1.<x86_64|aarch64>.rpm, and SHA256SUMS (rpmbuild)
	@$(MAKE) --no-print-directory rpm-files

rpm-files:
	RPMDIR="$(RPMDIR)" scripts/rpm.sh $(PORTABLE_LIBS)

clean: ## Remove build output
	$(CARGO) clean

# redis-msetex: `make help` lists the targets.

SHELL  := /bin/bash
CARGO  ?= cargo
PORT   ?= 6379
ROUNDS ?= 5
MODULE := target/release/libmsetex.so

.DEFAULT_GOAL := help
.PHONY: help deps build test run lint bench clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Install what is missing (redis-server, redis-tools, libclang-dev; apt-get when root)
	@scripts/deps.sh

build: deps ## Build the module: target/release/libmsetex.so
	$(CARGO) build --release --locked
	@echo "built $(MODULE)"

test: build ## Build, then run the unit and integration tests (real redis-server processes)
	$(CARGO) test --release --locked

run: build ## Start redis-server in the foreground with ./redis.conf (MSETEX loaded) on PORT
	@if (exec 3<>/dev/tcp/127.0.0.1/$(PORT)) 2>/dev/null; then \
		echo "port $(PORT) is in use (another redis-server?): stop it, or pick another port: make run PORT=<port>"; \
		exit 1; \
	fi
	redis-server ./redis.conf --port $(PORT)

lint: deps ## cargo fmt --check and cargo clippy with warnings as errors
	$(CARGO) fmt --check
	$(CARGO) clippy --release --locked --all-targets -- -D warnings

bench: build ## Benchmark against MSET, Lua and SETEX (ROUNDS=5); writes docs/BENCHMARKS.md
	$(CARGO) run --release --locked --example bench -- --rounds $(ROUNDS)

clean: ## Remove build output
	$(CARGO) clean

# Targets: test (default), lint, demo, stress, bench, soak, fuzz, charts, interop.
# Only Go (see go.mod), git and make are needed; "make test" installs
# redis-server when it is missing (Debian/Ubuntu, via apt-get), and
# PostgreSQL for rivermw's tests. test runs the root module beside the
# others, two lanes (.ci/test.sh).

GO ?= go
# staticcheck 2026.2.2 (module version v0.8.2), the newest release; it
# supports Go 1.26.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages the core lock package (lockmw) must never depend on: they belong
# to the adapters, and golang.org/x/tools to the generator cmd/rlockgen.
ADAPTER_DEPS := go-co-op/gocron|hibiken/asynq|go\.opentelemetry\.io|golang\.org/x/tools
# The Go modules of the repository: the root; the router adapters, each a
# module of its own so that the root go.mod requires no router; the load tool
# and the router examples, modules so that the libraries they use stay out of
# the root go.mod. lint and test cover each.
RELEASED_MODULES := httpmw/ginmw httpmw/echomw httpmw/fibermw httpmw/echo5mw rivermw grpcmw connectmw lockmw/rueidisrlock lockmw/valkeyrlock # also listed in MODULES, literally
MODULES := . httpmw/ginmw httpmw/echomw httpmw/fibermw httpmw/echo5mw rivermw grpcmw connectmw lockmw/rueidisrlock lockmw/valkeyrlock examples/bench examples/routers examples/grpc

.PHONY: test lint demo stress bench soak fuzz charts interop release-bump

test:
	./.ci/install-redis.sh
	./.ci/install-postgres.sh
	GO=$(GO) ./.ci/test.sh $(MODULES)

lint:
	@files="$$(gofmt -l .)"; \
	if [ -n "$$files" ]; then echo "gofmt -l: these files need gofmt:"; echo "$$files"; exit 1; fi
	@for m in $(MODULES); do \
		echo "== go vet, staticcheck, go mod tidy -diff in $$m"; \
		(cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff) || exit 1; \
	done
	@if [ -d lockmw ]; then \
		deps="$$($(GO) list -deps ./lockmw)" || exit 1; \
		bad="$$(echo "$$deps" | grep -E '$(ADAPTER_DEPS)' || true)"; \
		if [ -n "$$bad" ]; then echo "lockmw must not depend on gocron, asynq, OpenTelemetry or x/tools, but imports:"; echo "$$bad"; exit 1; fi; \
	fi
	@echo "== go generate ./examples/annotations/... changes nothing"; \
	$(GO) generate ./examples/annotations/... && git diff --exit-code -- examples/annotations

demo:
	$(GO) run ./examples/demo

# stress runs the whole suite N times in a row and prints a pass/fail count:
# run it before you stop; one red run in N is a defect, not luck. It runs
# what test leaves to it too (RLOCK_STRESS=1: the crash scenario on the
# rueidis and valkey-go workers).
stress: N ?= 10
stress:
	./.ci/install-redis.sh
	./.ci/install-postgres.sh
	GO=$(GO) ./.ci/stress.sh $(N)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# soak runs every crash scenario (mutex, semaphore, read-write, multi-lock on
# a single node; mutex, semaphore and read-write on a quorum) for SOAK each,
# on twice their names, through the fault proxies, with faults drawn per run
# (kill holder, kill waiter, pause a holder past its TTL, pause Redis,
# restart Redis with persistence, proxy latency, drop and blackhole; the seed
# is printed, -seed N replays it; the multi-lock draws kills of holders
# only): 30m gives over 100,000 acquisitions in all (78 a second over the
# five in 60 s runs of each, on this 2-core machine under two test suites:
# 22m is the least; see docs/reliability.md). It takes about twice SOAK
# (-parallel 3).
soak: SOAK ?= 30m
soak:
	./.ci/install-redis.sh
	$(GO) test -count=1 -v -timeout 0 -parallel 3 -run 'Crash' ./internal/reliability -soak=$(SOAK) -faults

# interop runs rlock beside a Redisson client written elsewhere:
# node-redisson 1.0.4 from npm (internal/interop/noderedisson), 4 workers a
# side on one name, on loopback and through 500us each way (about 2
# minutes). It needs Node.js 16 or later and npm besides Go; npm ci installs
# the exact packages of package-lock.json there. make test skips these
# tests (they run with -interop).
interop:
	./.ci/install-redis.sh
	cd internal/interop/noderedisson && npm ci --no-audit --no-fund
	$(GO) test -race -count=1 -v -timeout 20m ./internal/interop/... -interop

# charts runs the load tool's parallel scenario (every lock, both floors) on
# each ground, one node on loopback, through 500us each way, a 3-master
# cluster, and writes each side-by-side as an SVG chart into docs/charts
# (docs/performance.md shows them): several minutes a ground, not part of
# test. CHART_FLAGS adds flags to each run (e.g. -rounds 3 -duration 2s).
CHART_FLAGS ?=
charts:
	./.ci/install-redis.sh
	mkdir -p docs/charts
	$(GO) run -C examples/bench . -scenario parallel $(CHART_FLAGS) -svg ../../docs/charts/parallel-loopback.svg
	$(GO) run -C examples/bench . -scenario parallel -latency 500us $(CHART_FLAGS) -svg ../../docs/charts/parallel-500us.svg
	$(GO) run -C examples/bench . -scenario parallel -cluster 3 $(CHART_FLAGS) -svg ../../docs/charts/parallel-cluster3.svg

fuzz: FUZZTIME ?= 30s
fuzz:
	./.ci/install-redis.sh
	@status=0; \
	for file in $$(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' .); do \
		dir=$$(dirname "$$file"); \
		for target in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' "$$file"); do \
			echo "== $$dir $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$dir" || status=1; \
		done; \
	done; \
	exit $$status

# release-bump makes every nested module require the root at version V (the
# tag just pushed, see RELEASING.md); their replace directives stay.
release-bump:
	@test -n "$(V)" || { echo "usage: make release-bump V=vX.Y.Z"; exit 2; }
	@for m in $(filter-out .,$(MODULES)); do \
		echo "== $$m requires github.com/go-rlock/rlock $(V)"; \
		(cd $$m && $(GO) mod edit -require=github.com/go-rlock/rlock@$(V) && $(GO) mod tidy) || exit 1; \
	done

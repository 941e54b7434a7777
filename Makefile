# Targets: test (default), lint, demo, bench, soak, fuzz.
# Only Go (see go.mod), git and make are needed; "make test" installs
# redis-server when it is missing (Debian/Ubuntu, via apt-get).

GO ?= go
# staticcheck 2026.2.2 (module version v0.8.2), the newest release; it
# supports Go 1.26.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages the core lock package (lockmw) must never depend on: they belong
# to the adapters.
ADAPTER_DEPS := go-co-op/gocron|hibiken/asynq|go\.opentelemetry\.io

.PHONY: test lint demo bench soak fuzz

test:
	./.ci/install-redis.sh
	$(GO) test -race -count=1 -timeout 9m ./...

lint:
	@files="$$(gofmt -l .)"; \
	if [ -n "$$files" ]; then echo "gofmt -l: these files need gofmt:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff
	@if [ -d lockmw ]; then \
		deps="$$($(GO) list -deps ./lockmw)" || exit 1; \
		bad="$$(echo "$$deps" | grep -E '$(ADAPTER_DEPS)' || true)"; \
		if [ -n "$$bad" ]; then echo "lockmw must not depend on gocron, asynq or OpenTelemetry, but imports:"; echo "$$bad"; exit 1; fi; \
	fi

demo:
	$(GO) run ./examples/demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

soak:
	@echo "no soak targets yet"

fuzz:
	@echo "no fuzz targets yet"

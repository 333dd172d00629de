# kvblob. Each target does its own set-up and needs only Go; `make test` also
# runs the Redis driver's tests against a redis-server it starts itself (CI
# installs one; see .ci/run).
GO ?= go

.PHONY: run test check generate golden bench soak fuzz

run: ## the main job: check generated/, run every store's conformance suite
	$(GO) run ./cmd/drivergen gate

test: ## every test, with the race detector
	$(GO) test -race -count=1 ./...

check: ## generated/ matches spec/, the tree vets and is gofmt-clean
	$(GO) run ./cmd/drivergen check
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

generate: ## rewrite generated/ from spec/
	$(GO) run ./cmd/drivergen generate

golden: ## rewrite the generator's golden files
	$(GO) test ./gen -run TestGolden -update

bench: ## the benchmark table, JSON, SVG and ratios line
	$(GO) run ./cmd/blobbench

soak: ## the randomized fault soak (not built yet)
	@echo "make soak: not built yet"

fuzz: ## each fuzz target for a bounded time
	$(GO) test ./gen -run '^$$' -fuzz FuzzLoad -fuzztime 20s
	$(GO) test ./runtime/driver -run '^$$' -fuzz FuzzParseKey -fuzztime 20s
	$(GO) test ./stores/memory -run '^$$' -fuzz FuzzCheckObject -fuzztime 20s

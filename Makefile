# kvblob. Each target does its own set-up and needs only Go to start: the
# first `make run`, `make test` or `make demo` runs `make deps`, which
# installs or fetches the servers the stores' tests start on loopback
# (README.md, "First run", says what and how long), and says so, a line
# per step. CI installs them beforehand (see .ci/run).
GO ?= go
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: run test check generate golden examples bench soak fuzz deps demo mutate

run: deps ## the main job: check generated/, run every store's conformance suite
	$(GO) run ./cmd/gate

# A test binary that runs past TEST_TIMEOUT fails with every goroutine's
# stack, instead of hanging the run: the slowest packages (cmd/blobbench,
# cmd/mutate) take about 4 minutes on a busy two-core machine.
TEST_TIMEOUT ?= 12m
test: deps ## every test, with the race detector; a progress line every 30 s on stderr; ends with the totals
	$(GO) build -o .bin/testsum ./cmd/testsum
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -json ./... | .bin/testsum

# Each store whose tests start a server sets it up in its own folder's
# deps.sh (stores/<store>/deps.sh, steps from scripts/deps.sh): make deps
# runs every one, in folder order, each step printing "make deps: NAME:
# ..." lines while it works and nothing when it finds its server. A
# server it cannot set up skips its tests (the step says why); under
# CI=true it fails here instead.
deps: ## install or fetch the servers the tests start, each store's stores/<store>/deps.sh (first run: minutes, README.md's First run)
	@for f in stores/*/deps.sh; do GO="$(GO)" bash "$$f" || { echo "make deps: $$f failed"; exit 1; }; done

# The demo needs only redis-server, so it runs only that step.
demo: ## two processes move a request's KV rows through a redis-server on loopback, then clean up
	@GO="$(GO)" KVBLOB_DEPS_ONLY=redis-server bash stores/redis/deps.sh
	$(GO) run ./cmd/demo

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

check: ## generated/ matches spec/, go.mod and go.sum are tidy, the tree vets, passes staticcheck and is gofmt-clean
	$(GO) run ./cmd/drivergen check
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy (go mod tidy -diff):"; $(GO) mod tidy -diff; echo "run 'go mod tidy'"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@test -z "$$(gofmt -s -l .)" || { echo "gofmt -s needed:"; gofmt -s -l .; exit 1; }

generate: ## rewrite generated/ from spec/
	$(GO) run ./cmd/drivergen generate

golden: ## rewrite the generator's golden files
	$(GO) test ./gen -run TestGolden -update

examples: ## rewrite the example outputs the docs show (blocks marked <!-- output: ID -->) from what the commands print now
	$(GO) test ./docs -run TestExampleOutputs -update

bench: ## the benchmark table, JSON, SVG and ratios line
	$(GO) run ./cmd/blobbench

SOAK_DURATION ?= 60s
soak: ## the randomized fault soak, bounded (SOAK_DURATION, default 60s)
	$(GO) run ./cmd/soak -duration $(SOAK_DURATION)

# Every package of the module with a mutant (cmd/mutate expands ./...: a
# package whose non-test files CI's -race build compiles and that are not
# generated; so generated/, written by drivergen and held by gen's golden
# tests, docs/ and its tests-only packages, and the cgo SDK behind the
# mooncake tag are left out). Each mutant runs against the tests of its
# package and then of every package whose tests link it, as CI runs them
# (with -race where the package starts goroutines or uses sync), go test
# -failfast (one failing test decides a kill) and -vet=off (a mutant the
# tests all pass is then vetted as go test vets it, and a vet failure,
# which fails CI's go test, is a kill); MUTATE_JOBS mutants at once. A
# package's tests that reach their -timeout (four times what the
# package's test binary took to pass, 1 to 3 minutes) run again, whole,
# under CI's (TEST_TIMEOUT): a hang there is a kill (CI's test binary
# fails), listed apart with the tests that were running; a pass there is
# a pass (slow, and CI passes it). Each kill's line names the package whose
# tests made it. A package's tests run once unmutated first (with CI's
# -timeout: a package CI passes is mutated, however slow; cut short if
# the budget ends first), as the first of its work and charged to it,
# with coverage of the package alone (an importer's coverage of every
# package is measured when a mutant first reaches its tests), so mutants
# start as soon as their package's run passed. A failure in an importer's tests is a kill only
# when those tests pass unmutated and fail on the mutant again (else the
# mutant is reported flaky, apart). A package's tests that never execute
# the mutated line (by their coverage, measured once unmutated) are
# skipped. The budget reaches every package: the next mutant is always
# the package's with the fewest decided or running (so every package gets
# its first before any gets a second, however slow its tests; of equals,
# a package whose unmutated run passed before one not started, then the
# one that used the least time; an importer's coverage run, measured once
# for every package's mutants, is charged to none); a package whose next
# mutant would not finish before the budget's end is skipped, not the
# run. A package's mutants are sampled (seeded: another MUTATE_SEED
# samples others): the report says each package's share of the budget,
# the share sampled and the share decided (a mutant the budget's end cut
# short is sampled, not decided, and not scored), and the total how many
# of the packages with a mutant were reached (one decided) and which were
# not, with why. Mutants argued equivalent (no test could tell them from the
# source) are listed, each with its reason, in cmd/mutate/equivalent.txt:
# the report gives the score over every decided mutant and the score
# without the listed ones, names each listed survivor with its reason
# apart from the unexplained, and names an entry that a test killed
# (wrong) or that matches no mutant (stale). The default budget is what
# 150 mutants decided across every package are estimated to take on a
# two-core machine with nothing else running, from each package's
# unmutated run and its mutants' measured cost: about 15 minutes of
# unmutated runs, 25 of the mutants' own tests and 55 of the importers'
# tests and coverage runs (for a mutant its own tests pass), 95 minutes
# of work over two jobs that share the two cores.
MUTATE_BUDGET ?= 60m
MUTATE_JOBS ?= 2
MUTATE_SEED ?= 1
MUTATE_PKGS ?= ./...
mutate: deps ## mutation testing of every package, bounded (MUTATE_BUDGET, default 60m): score and share sampled per package, each kill's package, each survivor's file:line, change and line, the listed equivalents apart
	$(GO) run ./cmd/mutate -budget $(MUTATE_BUDGET) -j $(MUTATE_JOBS) -seed $(MUTATE_SEED) -timeout 3m -ci-timeout $(TEST_TIMEOUT) -equivalent cmd/mutate/equivalent.txt $(MUTATE_PKGS)

# Every fuzz target in the tree, found afresh each run: the packages whose
# tests declare a func Fuzz..., then each target go test -list names there
# (so a build-tagged or moved one is neither missed nor stale). Each runs
# for FUZZTIME; the first that fails stops the run.
FUZZTIME ?= 20s
fuzz: ## every fuzz target in the tree, each for FUZZTIME (default 20s)
	@pkgs=$$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u); \
	test -n "$$pkgs" || { echo "make fuzz: no fuzz targets found"; exit 1; }; \
	n=0; for pkg in $$pkgs; do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    n=$$((n+1)); echo "make fuzz: $$pkg $$target for $(FUZZTIME)"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done; echo "make fuzz: $$n targets passed"

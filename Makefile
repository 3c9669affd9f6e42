# tpucost — see README.md. `make demo` and `make test` are the two commands a new user needs.
GO       ?= go
PKGS     := ./...
# Packages whose code runs goroutines: their tests also run under the race detector.
RACE_PKGS := ./compiler/... ./tpusim/... ./dataset/... ./gnn/... ./tune/...
BIN      := bin/tpucost

.PHONY: all build test race bench demo lint fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/tpucost

test: lint
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -race $(RACE_PKGS)

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# Runs every package's headline benchmarks and writes one table to BENCHMARKS.md and into
# docs/benchmarks.md (between the bench markers). A few minutes on 2 cores.
bench:
	$(GO) run ./internal/benchtable

# The whole loop on a small built-in default: datasets, two models, evaluation with plots,
# model-guided vs simulator-only tuning; the report is demo-out/report.md.
demo: build
	./$(BIN) demo --out demo-out

lint:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=60s ./compiler/hlo

clean:
	rm -rf bin

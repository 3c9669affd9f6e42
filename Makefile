# tpucost — see README.md. `make demo` and `make test` are the two commands a new user needs.
GO       ?= go
PKGS     := ./...
# Packages whose code runs goroutines: their tests also run under the race detector.
RACE_PKGS := ./internal/measure/... ./compiler/... ./tpusim/... ./dataset/... ./metric/... ./nn/... ./gnn/... ./validate/... ./tune/...
BIN      := bin/tpucost
# The fast path is the default: when this machine has OpenBLAS (its cblas.h, found by
# pkg-config or in /usr/include) and cgo, every target builds with -tags blas and
# Gorgonia's matrix products run on OpenBLAS (nn/blas.go); otherwise pure Go.
# `make TAGS= test` forces pure Go. Debian: apt-get install libopenblas-dev.
HAVE_OPENBLAS := $(shell { pkg-config --exists openblas || ls /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/openblas*/cblas.h; } >/dev/null 2>&1 \
	&& [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo yes)
TAGS     ?= $(if $(HAVE_OPENBLAS),-tags blas,)
BACKEND  := $(if $(findstring blas,$(TAGS)),openblas,go)

.PHONY: all build backend test race bench train-bench demo lint fuzz clean

all: build

# Prints the backend the targets build with: openblas or go.
backend:
	@echo $(BACKEND)

build:
	@echo "build: backend=$(BACKEND)"
	$(GO) build $(TAGS) -o $(BIN) ./cmd/tpucost

test: lint
	@echo "test: backend=$(BACKEND)"
	$(GO) test $(TAGS) -count=1 $(PKGS)
	$(GO) test $(TAGS) -count=1 -race $(RACE_PKGS)

race:
	$(GO) test $(TAGS) -count=1 -race $(RACE_PKGS)

# Runs every package's headline benchmarks and writes one table to BENCHMARKS.md and into
# docs/benchmarks.md (between the bench markers). A few minutes on 2 cores.
bench:
	GOFLAGS="$(GOFLAGS) $(subst -tags ,-tags=,$(TAGS))" $(GO) run ./internal/benchtable

# The training benchmarks alone, in the build `make build` makes: a step of 32 zoo kernels
# (forward, backward, Adam) and one epoch over 512 kernels of TpuGraphs' tile shape. Each
# benchmark's name says its backend (backend=openblas or backend=go). About a minute.
train-bench:
	$(GO) test $(TAGS) -run '^$$' -bench 'TrainStep' -benchtime 20x ./gnn
	$(GO) test $(TAGS) -run '^$$' -bench 'TpuGraphsTileEpoch' -benchtime 1x ./gnn

# The whole loop on a small built-in default: datasets, two models, evaluation with plots,
# model-guided vs simulator-only tuning; the report is demo-out/report.md.
demo: build
	./$(BIN) demo --out demo-out

lint:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(TAGS) $(PKGS)

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=60s ./compiler/hlo

clean:
	rm -rf bin

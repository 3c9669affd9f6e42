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

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=3x $(PKGS)

demo: build
	./$(BIN) zoo list --family resnet_v1
	./$(BIN) compile resnet50_b32
	./$(BIN) sim resnet50_b32 --chip v4
	./$(BIN) sim ../shared/testdata/hlo/graphsage_tf.hlo --chip v5e 2>/dev/null || ./$(BIN) sim compiler/hlo/testdata/graphsage_tf.hlo --chip v5e

lint:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=60s ./compiler/hlo

clean:
	rm -rf bin

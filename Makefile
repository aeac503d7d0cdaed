# Baton — run `make help` for the targets.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/baton-sqs/baton/internal/cli.Version=$(VERSION)
FUZZTIME ?= 15s

.PHONY: help build test test-long test-race lint fuzz bench memory loadtest run image release

help: ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## Build ./baton with the version stamped in
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o baton ./cmd/baton

image: ## Build the container image baton:dev (deploy/image.sh: static binary, FROM scratch)
	deploy/image.sh -t baton:dev --version $(VERSION)

release: ## On a vX.Y.Z tag: binaries, SHA256SUMS, SBOMs and images into dist/ (docs/container.md)
	deploy/release.sh

run: ## Run the server on 127.0.0.1:9324
	go run ./cmd/baton serve

test: ## Run every test but the long fault suites (the README's test command)
	go test ./...

test-long: ## Run every test, the long fault suites too, as CI does
	BATON_LONG_TESTS=1 go test -timeout 20m ./...

test-race: ## Run every test with the race detector
	go test -race ./...

lint: ## go vet, gofmt and staticcheck
	go vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	go tool staticcheck ./...

fuzz: ## Run each fuzz target for FUZZTIME
	go test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./protocol/awsjson
	go test -run='^$$' -fuzz='^FuzzFastDecode$$' -fuzztime=$(FUZZTIME) ./protocol/awsjson
	go test -run='^$$' -fuzz='^FuzzFastEncode$$' -fuzztime=$(FUZZTIME) ./protocol/awsjson
	go test -run='^$$' -fuzz=FuzzDecode -fuzztime=$(FUZZTIME) ./protocol/awsquery
	go test -run='^$$' -fuzz='^FuzzReceiptDecode$$' -fuzztime=$(FUZZTIME) ./engine
	go test -run='^$$' -fuzz='^FuzzParseAuthorization$$' -fuzztime=$(FUZZTIME) ./protocol/sigv4
	go test -run='^$$' -fuzz='^FuzzVerify$$' -fuzztime=$(FUZZTIME) ./protocol/sigv4
	go test -run='^$$' -fuzz='^FuzzReceiptRoundTrip$$' -fuzztime=$(FUZZTIME) ./engine
	go test -run='^$$' -fuzz='^FuzzDecodeState$$' -fuzztime=$(FUZZTIME) ./store/pebblestore
	go test -run='^$$' -fuzz='^FuzzDecodeAttributes$$' -fuzztime=$(FUZZTIME) ./store/pebblestore
	go test -run='^$$' -fuzz='^FuzzMD5OfAttributes$$' -fuzztime=$(FUZZTIME) ./engine
	go test -run='^$$' -fuzz='^FuzzDecodeLedgerBatch$$' -fuzztime=$(FUZZTIME) ./engine/ledger
	go test -run='^$$' -fuzz='^FuzzParseBatchItemFailures$$' -fuzztime=$(FUZZTIME) ./worker
	go test -run='^$$' -fuzz='^FuzzPublish$$' -fuzztime=$(FUZZTIME) ./sns
	go test -run='^$$' -fuzz='^FuzzFilterPolicy$$' -fuzztime=$(FUZZTIME) ./sns

bench: ## Run the Go benchmarks
	go test -run='^$$' -bench=. -benchmem $$(go list ./... | grep -v /e2e)

memory: ## The built server's resident size with 1M queued messages and 10k long polls, and its restart time
	go test ./e2e -run='^$$' -bench=Memory -benchtime=1x -timeout=30m

loadtest: ## baton bench: an in-process Baton (memory, then the embedded store) against the JSON ceiling
	go run ./cmd/baton bench --self --store memory --ceiling --scenario all --rounds 3
	go run ./cmd/baton bench --self --store embedded --ceiling --scenario all --rounds 3

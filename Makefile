# Everything starts from nothing: `make demo` and `make test` create .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test unit integration venv clean bench fuzz chaos docs

demo: $(STAMP)
	$(BIN)/doccheck demo

test: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q -p no:cacheprovider -n 2
	$(BIN)/python -m pytest tests/integration -q -p no:cacheprovider -n 3 --dist loadfile --no-loadscope-reorder --durations=25

unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q

integration: $(STAMP)
	$(BIN)/python -m pytest tests/integration -q -n 3 --dist loadfile --no-loadscope-reorder

venv: $(STAMP)

# The exact lock, installed by uv (pinned in the lock too): it fetches and unpacks in parallel, ~10 s
# on a fresh machine where pip takes ~4 minutes, and installs the same 218 packages. Should uv fail
# (a registry it cannot reach, say), pip installs the same lock.
# The checkout's own modules are compiled too (under a second): with PYTHONDONTWRITEBYTECODE=1 nothing
# writes them, and each of the ~300 processes the tests start (commands, emulators, flow runs,
# workers) compiled the ~190 it imports again, ~0.35 s of CPU each. A module edited since is
# compiled as before (Python checks each file's size and time against its source).
$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c requirements/constraints.txt -e ".[dev]" \
	  || $(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[dev]"
	$(BIN)/python -m compileall -q -j 0 doccheck prefect_doccheck flows tasks deployments tests
	touch $(STAMP)

# The docs site (MkDocs Material + mkdocstrings) into site/, --strict: a broken link or an API page that
# cannot be rendered fails; then every public name it documents must have a docstring.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/python docs/tools/check_site.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# Issue 8 end to end under faults, kills, concurrent runs and a two-day gap (not in CI; minutes).
chaos: $(STAMP)
	$(BIN)/python benchmarks/chaos.py

clean:
	rm -rf $(VENV) reports .pytest_cache build site *.egg-info

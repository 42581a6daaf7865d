# logwright: the two commands a user needs are `make verify` and `make test`.
# Each creates .venv and installs what it needs when it is missing.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: venv native test verify lint bench demo clean mutants mutmut fuzz spark-cluster

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

# The compiled build (docs/native.md): the hot modules compiled with mypyc beside their sources,
# about 3 minutes the first time, nothing to do while the sources are those it was built from.
# LOGWRIGHT_PURE=1 skips it (and makes everything run from source).
native: $(STAMP)
	$(VENV)/bin/logwright native build --require

test: $(STAMP) native
	LOGWRIGHT_EXPECT_COMPILED=$(if $(filter-out 0,$(LOGWRIGHT_PURE)),,1) HYPOTHESIS_PROFILE=ci $(VPY) -m pytest -n 2 --dist worksteal -p no:cacheprovider

verify: $(STAMP) native
	$(VENV)/bin/logwright verify

# traces check and fuzz --seeds through a Spark standalone master and worker started on
# 127.0.0.1 (about 2 minutes on 2 cores; kept out of make test's 10-minute budget).
spark-cluster: $(STAMP)
	$(VPY) -m pytest -p no:cacheprovider -m spark_cluster tests/test_spark_standalone.py

lint: $(STAMP)
	$(VENV)/bin/ruff check impl tests model_tests bench mutation spec
	$(VENV)/bin/mypy --strict impl/logwright

# Each named fault of mutation/catalogue.py, planted in a copy, must fail the CI campaign.
mutants: $(STAMP)
	$(VPY) mutation/run.py $(MUTANTS_ARGS)

# Nightly-style, not part of `make test` nor CI: mutmut 3 over the decision modules (broker,
# controller, storage, log manager; [tool.mutmut] in pyproject.toml), one child under nice, then
# the score per module (killed / (killed + survived), timeouts killed) to out/mutmut.json and a
# table; exit 1 below 90%. MUTMUT_ARGS picks mutants by name, e.g.
# MUTMUT_ARGS='"logwright.broker.fencing.*"'. Results accumulate in mutants/ (delete it to redo).
mutmut: $(STAMP)
	HYPOTHESIS_PROFILE=ci nice -n 15 $(VPY) mutation/mutmut_run.py mutmut run --max-children 1 $(MUTMUT_ARGS)
	$(VPY) mutation/mutmut_run.py score --json out/mutmut.json

# An unbounded seeded campaign of the cluster state machine (Ctrl-C to stop); each failure is
# saved, shrunk, in traces/regressions/. E.g. FUZZ_ARGS="--seed 7 --duration 600".
fuzz: $(STAMP)
	$(VENV)/bin/logwright fuzz $(FUZZ_ARGS)

bench: $(STAMP) native
	$(VPY) bench/run.py

clean:
	-test -x $(VENV)/bin/logwright && $(VENV)/bin/logwright native clean
	rm -rf $(VENV) build *.egg-info impl/*.egg-info .pytest_cache .mypy_cache .ruff_cache

demo: $(STAMP)
	$(VENV)/bin/logwright demo

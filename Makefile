# Everything a fresh machine needs: `make demo` (the main job on fixtures/) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
CORPUS ?= $(abspath ../shared/corpus)
export KAFKATOOL_CORPUS ?= $(CORPUS)

.PHONY: install demo test lint bench fixtures clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark]'
	touch $@

## demo: dump, verify and search the bundled fixture log dir (what an SRE would run first)
demo: install
	$(VENV)/bin/kafkatool dump fixtures/logdir/payments-0
	$(VENV)/bin/kafkatool dump --records --from-offset 40 --to-offset 44 fixtures/logdir/orders-0
	$(VENV)/bin/kafkatool verify fixtures/logdir
	$(VENV)/bin/kafkatool locate fixtures/logdir/orders-0 --offset 44

## test: the whole suite against the ground-truth corpus (fails if ../shared/corpus is missing)
test: install
	@test -d "$(KAFKATOOL_CORPUS)/expected" || { echo "corpus not found at $(KAFKATOOL_CORPUS) (set KAFKATOOL_CORPUS)"; exit 1; }
	$(VENV)/bin/ruff check kafkatool formats fixtures tests bench
	$(PY) -m pytest -n 2 -q -m "not spark"
	$(PY) -m pytest -q -m spark

lint: install
	$(VENV)/bin/ruff check kafkatool formats fixtures tests bench

## fixtures: regenerate fixtures/ with the project's own deterministic generator
fixtures: install
	$(PY) fixtures/generate.py fixtures/logdir
	$(PY) fixtures/generate.py --incident fixtures/incident

## bench: throughput of header scan + CRC and record decode on generated 1 GiB segments; locate latency; repair
## against verify and its backup size; Spark scan
bench: install
	$(PY) bench/bench_scan.py
	$(PY) bench/bench_locate.py
	$(PY) bench/bench_repair.py
	$(PY) bench/bench_spark.py
	$(PY) bench/bench_spark.py --kind tiny --segments 2 --size 134217728
	$(PY) bench/bench_spark.py --level records --segments 2 --size 268435456

clean:
	rm -rf $(VENV) bench/out .pytest_cache

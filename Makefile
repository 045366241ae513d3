# Everything a fresh machine needs: `make demo` (the main job on fixtures/) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
CORPUS ?= $(abspath ../shared/corpus)
export KAFKATOOL_CORPUS ?= $(CORPUS)
# The native core (a PyO3 crate, built into kafkatool/_native by pip through setuptools-rust; optional).
NATIVE_SRC = native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs)
NATIVE  = $(VENV)/.native-built

.PHONY: install demo test test-fast lint bench bench-issue fixtures clean

install: $(STAMP) $(NATIVE)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,schemas]'
	touch $@ $(NATIVE)

# Rebuild the extension when the crate changes (without cargo, pip skips it with a warning).
$(NATIVE): $(NATIVE_SRC) | $(STAMP)
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

## demo: dump, verify and search the bundled fixture log dir (what an SRE would run first)
demo: install
	$(VENV)/bin/kafkatool dump fixtures/logdir/payments-0
	$(VENV)/bin/kafkatool dump --records --from-offset 40 --to-offset 44 fixtures/logdir/orders-0
	$(VENV)/bin/kafkatool verify fixtures/logdir
	$(VENV)/bin/kafkatool locate fixtures/logdir/orders-0 --offset 44

# Run again with the pure-Python reader: the goldens, the Construct agreement, dump/verify end to end.
PURE_TESTS = tests/test_golden_dump.py tests/test_golden_small.py tests/test_records_formats.py tests/test_verify.py

## test: the whole suite against the ground-truth corpus (fails if ../shared/corpus is missing)
test: install
	@test -d "$(KAFKATOOL_CORPUS)/expected" || { echo "corpus not found at $(KAFKATOOL_CORPUS) (set KAFKATOOL_CORPUS)"; exit 1; }
	$(VENV)/bin/ruff check kafkatool formats fixtures tests bench
	@if command -v cargo >/dev/null; then \
	  echo "cd native && cargo clippy -- -D warnings && cargo test"; \
	  cd native && cargo clippy --quiet --all-targets -- -D warnings && cargo test --quiet; \
	else echo "no cargo: the native core's Rust checks are skipped (tests/test_native.py fails under CI=true)"; fi
	$(PY) -m pytest -n 2 -q -m "not spark" --durations=15
	KAFKATOOL_PURE_PYTHON=1 $(PY) -m pytest -n 2 -q -p no:cacheprovider $(PURE_TESTS)
	$(PY) -m pytest -q -m spark

## test-fast: the suite without the tests marked slow (kill-at-every-step, 10^7-row inputs: ~10 s to minutes each)
## and without Spark, for a quick check while working; make test runs everything
test-fast: install
	$(PY) -m pytest -n 2 -q -m "not spark and not slow"

lint: install
	$(VENV)/bin/ruff check kafkatool formats fixtures tests bench

## fixtures: regenerate fixtures/ with the project's own deterministic generator
fixtures: install
	$(PY) fixtures/generate.py fixtures/logdir
	$(PY) fixtures/generate.py --incident fixtures/incident

## bench: verify linear in segments and against a scandir + CRC floor per partition; throughput of header scan + CRC and record decode on generated 1 GiB segments; locate latency; loader
## against a bare header scan; repair against verify and its backup size; offsets, txn-state and metadata against
## the Construct declarations alone; start-up; Spark scan. Ends with bench/report.py: issue 30's seven ratios of this
## run as one table, the machine named (bench/out/REPORT.md)
bench: install
	$(PY) bench/report.py --start
	$(PY) bench/bench_scan.py
	$(PY) bench/bench_dump.py
	$(PY) bench/bench_search.py
	$(PY) bench/bench_locate.py
	$(PY) bench/bench_loader.py
	$(PY) bench/bench_verify.py
	$(PY) bench/bench_parallel.py
	$(PY) bench/bench_linear.py
	$(PY) bench/bench_repair.py
	$(PY) bench/bench_internal.py
	$(PY) bench/bench_delivery.py
	$(PY) bench/bench_spark.py
	$(PY) bench/bench_spark.py --kind tiny --segments 2 --size 134217728
	$(PY) bench/bench_spark.py --startup
	$(PY) bench/bench_cli.py
	$(PY) bench/bench_spark.py --level records --segments 2 --size 268435456
	$(PY) bench/report.py

## bench-issue: only what issue 30's seven ratios need, then the same table (bench/out/REPORT.md); ~14 minutes on 2
## shared cores, the first run writing ~1.2 GB of inputs under bench/out
bench-issue: install
	$(PY) bench/report.py --start
	$(PY) bench/bench_linear.py
	$(PY) bench/bench_parallel.py --issue
	$(PY) bench/bench_dump.py --verify-size 67108864 --deep big-lz4@kafka-python --deep tiny-lz4@aiokafka --deep big-lz4@aiokafka
	$(PY) bench/bench_internal.py --only offsets
	$(PY) bench/bench_search.py
	$(PY) bench/bench_delivery.py
	$(PY) bench/report.py

clean:
	rm -rf $(VENV) bench/out .pytest_cache

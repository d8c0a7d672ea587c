# Two entry points: `make run` (the app) and `make test` (the whole suite).
# Both create or refresh the virtual environment in .venv from requirements*.txt.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench chromium venv clean sample-data

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

# Debian's chromium for the browser tests (never `playwright install`).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

run: $(STAMP)
	$(PY) -m streamlit run app.py

# one pytest worker per core (at most 4; the browser tests share one worker and its server):
# on a fresh clone most of the time is numba compiling the kernels, which the workers split
test: $(STAMP) chromium
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadgroup

bench: $(STAMP)
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

sample-data: $(STAMP)
	$(PY) scripts/make_sample_data.py

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts

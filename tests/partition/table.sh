#!/bin/bash
# The fault x store table of docs/guarantees.md, from the output of the
# partition and clock tests (a ctest log such as
# BUILD/Testing/Temporary/LastTest.log, or the scripts' own output):
#
#   tests/partition/table.sh LOG               print the table
#   tests/partition/table.sh --save LOG [RUN]  write docs/results/partition.txt
#                                              from LOG (RUN: which run it
#                                              was, in words) and remake the
#                                              docs' tables from it; commit both
#
# One row per torture run: the "--- CASE, nemesis NEMESIS..." header of
# test_torture_partition.sh with the summary: line torture printed after
# it (a control run: its control: line), and the SUMMARY lines of the
# split and clock-jump tests.  The parsing is scripts/tables.py's
# (extract-partition, and the `partition` table), so the table a log
# makes and the one committed in the docs are made by the same code.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
tables=$here/scripts/tables.py
if [ "${1:-}" = --save ]; then
    log=${2:?usage: tests/partition/table.sh --save LOG [RUN]}
    out=$here/docs/results/partition.txt
    python3 "$tables" extract-partition "$log" ${3:+"$3"} >"$out.tmp"
    grep -q '^summary: \|^SUMMARY ' "$out.tmp" || {
        rm -f "$out.tmp"
        echo "table.sh: no partition or clock summaries in $log" >&2
        exit 1
    }
    mv "$out.tmp" "$out"
    python3 "$tables"
    echo "wrote $out; the docs' tables remade (git diff docs/)"
    exit 0
fi
log=${1:?usage: tests/partition/table.sh [--save] LOG}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
python3 "$tables" extract-partition "$log" >"$tmp"
python3 "$tables" render partition "$tmp" | sed '/^$/,$d'

#!/bin/bash
# The README's fault x store table, from the output of the partition and
# clock tests (a ctest log such as BUILD/Testing/Temporary/LastTest.log,
# or the scripts' own output):
#
#   tests/partition/table.sh LOG
#
# One row per torture run: the "--- CASE, nemesis NEMESIS..." header of
# test_torture_partition.sh with the summary: line torture printed after
# it (a control run: its control: line), and the SUMMARY lines of the
# split and clock-jump tests.
set -euo pipefail
log=${1:?usage: tests/partition/table.sh LOG}
echo "| store | fault | overlapping windows | fenced updates lost | stale writes refused | holders told LOST | new holder after a heal, p50/max ms | every worker back, ms |"
echo "|---|---|---|---|---|---|---|---|"
awk '
function field(line, key,    re, m) {
    re = key "=[^ ]*"
    if (match(line, re)) {
        m = substr(line, RSTART + length(key) + 1, RLENGTH - length(key) - 1)
        return m
    }
    return "?"
}
function row(store, fault, line) {
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", store, fault,
        field(line, "overlaps"), field(line, "fenced_lost"),
        field(line, "stale_refused"), field(line, "told_lost"),
        field(line, "new_holder_after_heal_ms"),
        field(line, "all_workers_back_ms")
}
/^--- .*, nemesis / {
    hdr = $0
    sub(/^--- /, "", hdr)
    store = hdr; sub(/,.*/, "", store)
    fault = hdr; sub(/^[^,]*, nemesis /, "", fault)
    pending = 1
    next
}
pending && /^summary: / { row(store, fault, $0); pending = 0; next }
# A control run prints no summary: its lost updates are the point.
pending && /^(PASS|FAIL) control: / {
    n = $3
    printf "| %s | %s (control, unfenced) | - | %s lost (must be > 0) | - | - | - | - |\n", store, fault, n
    pending = 0
    next
}
/^SUMMARY store=/ {
    row(field($0, "store"), field($0, "fault"), $0)
}
' "$log"

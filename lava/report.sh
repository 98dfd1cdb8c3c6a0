#!/bin/sh
# `atsdbench show|compare --format lava` lines on stdin (NAME pass|fail|skip [VALUE UNITS]), one
# lava-test-case each; outside LAVA (no lava-test-case) the lines are printed as they are.
while read -r name result value units; do
    [ -n "$name" ] || continue
    if ! command -v lava-test-case >/dev/null 2>&1; then
        echo "$name $result${value:+ $value $units}"
    elif [ -n "$value" ]; then
        lava-test-case "$name" --result "$result" --measurement "$value" --units "$units"
    else
        lava-test-case "$name" --result "$result"
    fi
done

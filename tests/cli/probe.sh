#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice-probe (the shaper tests' sender and receiver) refuses bad input with
# exit status 2 and a message naming the value and the limit; --help exits 0;
# a source address that is not on an interface is a runtime failure (exit 1).
# No root needed.
set -u
source tests/lib/tap.sh
PROBE=${SLUICE_PROBE:-$BUILD/sluice-probe}

if [ ! -x "$PROBE" ]; then
	skip "sluice-probe is not built ($PROBE): run 'make'" "sluice-probe usage errors"
	exit 0
fi

usage() { local n=$1 p=$2; shift 2; expect_usage "sluice-probe $n" "$p" "$PROBE" "$@"; }

expect_status 0 "sluice-probe --help: exit status 0" "$PROBE" --help
if grep -q 'sluice-probe send' <<<"$OUT" && grep -q 'sluice-probe recv' <<<"$OUT"; then
	ok "sluice-probe --help: names send and recv"
else
	not_ok "sluice-probe --help: names send and recv"
fi
usage "no command" "want send or recv"
usage "unknown command" "unknown command 'fly'" fly
usage "send without -d" "are required" send -s 198.18.0.1 -p 9000
usage "send: bad port" "1..65535" send -s 198.18.0.1 -d 198.18.0.2 -p 70000
usage "send: zero count" "1..10000000" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -n 0
usage "send: payload below the header" "24..1472" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -l 8
usage "send: bad destination" "not an IPv4 or IPv6 address" send -s 198.18.0.1 -d x -p 9000
usage "send: mixed families" "not an IPv6 address" send -s 198.18.0.1 -d 2001:2::2 -p 9000
usage "send: rate 0" "0.001..10000000" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -r 0
usage "send: batch 0" "1..256" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -b 0
usage "send: batch over 256" "1..256" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -b 257
usage "send: fractional batch" "packets a sendmmsg() call" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 -b 1.5
usage "send: stray argument" "unexpected argument 'extra'" send -s 198.18.0.1 -d 198.18.0.2 -p 9000 extra
usage "recv without -p" "-p PORT is required" recv
usage "recv: bad timeout" "0.01..3600" recv -p 9000 -t 0
usage "recv: bad interval" "interval in microseconds" recv -p 9000 -e -1
usage "recv: bad bind address" "not an IPv4 or IPv6 address" recv -p 9000 -b nowhere
# 198.18.0.77 is on no interface of a test runner (the net tests use their
# own namespaces): bind() fails, a runtime failure.
expect_status 1 "sluice-probe send from an address on no interface: exit status 1" \
	"$PROBE" send -s 198.18.0.77 -d 198.18.0.78 -p 9000 -n 1
if grep -q 'ip addr add 198.18.0.77' <<<"$OUT"; then ok "sluice-probe send: says how to fix it"; else
	not_ok "sluice-probe send: says how to fix it"; diag "$OUT"; fi
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Run every sluice test suite and print one TAP 13 stream:
#   unit  algorithm math on the host          build/tests/unit/*
#   bpf   the program via BPF_PROG_TEST_RUN     build/tests/bpf/*   (root)
#   net   veth + namespaces, real traffic       tests/net/*.sh      (root)
#   cli   bad input, exit status and message    tests/cli/*.sh
#   shape the tc egress shaper with fq           tests/shape/*.sh    (root)
#   stress reproducers of kernel trouble        tests/stress/*.sh   (root; not in the default)
# Ends with exactly one line "N passed, N failed, N skipped".
# SUITES="unit cli" limits the run; TEST_TIMEOUT bounds one program (seconds).
set -u
export BUILD=${BUILD:-build}
SUITES=${SUITES:-unit bpf cli net}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
# shellcheck source=tests/lib/tally.sh
source "$(dirname "$0")/lib/tally.sh"

run_prog() { # run_prog SUITE PROG...
	local suite=$1 name line st seen=0 bad=0 tmp
	shift
	name="$suite/$(basename "${@: -1}")"
	tmp=$(mktemp)
	timeout --kill-after=10 "$TEST_TIMEOUT" "$@" >"$tmp" 2>&1 </dev/null
	st=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) seen=1; emit "ok" "$name: ${line#ok - }" ;;
		"not ok - "*) seen=1; bad=1; emit "not ok" "$name: ${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$tmp"
	rm -f "$tmp"
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		emit "not ok" "$name: timed out after ${TEST_TIMEOUT}s"
	elif [ "$seen" = 0 ]; then
		emit "not ok" "$name: reported no test (exit status $st)"
	elif [ "$st" != 0 ] && [ "$bad" = 0 ]; then
		emit "not ok" "$name: exit status $st"
	fi
}

echo "TAP version 13"
for suite in $SUITES; do
	echo "# suite $suite"
	if { [ "$suite" = bpf ] || [ "$suite" = net ] || [ "$suite" = shape ] ||
		[ "$suite" = stress ]; } &&
		[ "$(id -u)" != 0 ]; then
		emit "ok" "$suite suite # SKIP needs root (CAP_BPF and CAP_NET_ADMIN): run 'sudo make test'"
		continue
	fi
	case $suite in
	unit | bpf)
		found=0
		for p in "$BUILD"/tests/"$suite"/*; do
			[ -x "$p" ] && [ -f "$p" ] || continue
			found=1
			run_prog "$suite" "$p"
		done
		[ $found = 1 ] || emit "not ok" "$suite: no test programs in $BUILD/tests/$suite (run 'make tests')"
		;;
	net | cli | stress | shape)
		for p in tests/"$suite"/*.sh; do
			[ -f "$p" ] || continue
			run_prog "$suite" bash "$p"
		done
		;;
	esac
done
tally_end

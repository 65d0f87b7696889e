#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Run every sluice test suite and print one TAP 13 stream:
#   unit  algorithm math on the host          build/tests/unit/*
#   bpf   the program via BPF_PROG_TEST_RUN     build/tests/bpf/*   (root;
#         twice: on the LRU key table, then SLUICE_TEST_TABLE=sets, whose
#         lines end "[sets table]")
#   net   veth + namespaces, real traffic       tests/net/*.sh      (root)
#   cli   bad input, exit status and message    tests/cli/*.sh
#   shape the tc egress shaper with fq           tests/shape/*.sh    (root; in a
#         qemu guest of Debian 12's 6.1 when this kernel cannot make an fq qdisc)
#   stress reproducers of kernel trouble        tests/stress/*.sh   (root; not in the default)
# Ends with exactly one line "N passed, N failed, N skipped".
# SUITES="unit cli" limits the run; TEST_TIMEOUT bounds one program (seconds).
set -u
export BUILD=${BUILD:-build}
SUITES=${SUITES:-unit bpf cli net shape}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
# shellcheck source=tests/lib/tally.sh
source "$(dirname "$0")/lib/tally.sh"

# mark NAME: NAME with RUN_MARK (" [sets table]") put before any "# SKIP".
mark() {
	case $1 in
	*" # SKIP"*) printf '%s%s # SKIP%s' "${1%% # SKIP*}" "$RUN_MARK" "${1#* # SKIP}" ;;
	*) printf '%s%s' "$1" "$RUN_MARK" ;;
	esac
}
RUN_MARK=

run_prog() { # run_prog SUITE PROG...  (RUN_MARK: a suffix for every line)
	local suite=$1 name line st seen=0 bad=0 tmp
	shift
	name="$suite/$(basename "${@: -1}")"
	tmp=$(mktemp)
	timeout --kill-after=10 "$TEST_TIMEOUT" "$@" >"$tmp" 2>&1 </dev/null
	st=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) seen=1; emit "ok" "$(mark "$name: ${line#ok - }")" ;;
		"not ok - "*) seen=1; bad=1; emit "not ok" "$(mark "$name: ${line#not ok - }")" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$tmp"
	rm -f "$tmp"
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		emit "not ok" "$(mark "$name: timed out after ${TEST_TIMEOUT}s")"
	elif [ "$seen" = 0 ]; then
		emit "not ok" "$(mark "$name: reported no test (exit status $st)")"
	elif [ "$st" != 0 ] && [ "$bad" = 0 ]; then
		emit "not ok" "$(mark "$name: exit status $st")"
	fi
}

# fq_available: can the running kernel make an fq qdisc? Asked of a veth
# pair in a scratch namespace of our own (nothing else is touched).
fq_available() {
	local ns="sluice-fqprobe-$$" st=1
	ip netns add "$ns" 2>/dev/null || return 1
	if ip -n "$ns" link add fqprobe0 type veth peer name fqprobe1 2>/dev/null &&
		tc -n "$ns" qdisc add dev fqprobe0 root fq 2>/dev/null; then
		st=0
	fi
	ip netns del "$ns" 2>/dev/null
	return $st
}

# shape_in_guest: the shape suite in one qemu guest of Debian 12's 6.1
# (scripts/test-kernels.sh, one boot, only this suite), its TAP lines merged
# into this stream as "shape/...". One SKIP with the reason when no guest can
# be run (no qemu or busybox, no kernel package cached and none to download).
shape_in_guest() {
	local t line out st seen=0 kernel=linux-image-amd64 tag=
	for t in qemu-system-x86_64 busybox cpio dpkg-deb depmod apt-get; do
		if ! command -v "$t" >/dev/null; then
			emit "ok" "shape suite # SKIP this kernel has no fq qdisc, and '$t' for the qemu guest is not installed: run 'sudo make deps'"
			return
		fi
	done
	# The guest mounts a fresh tmpfs on /tmp and /run: a tree there is out of its sight.
	case $(pwd -P)/ in
	/tmp/* | /run/*)
		emit "ok" "shape suite # SKIP this kernel has no fq qdisc, and a qemu guest cannot see a tree under /tmp or /run ($(pwd -P)): check it out elsewhere"
		return ;;
	esac
	echo "# shape: this kernel ($(uname -r)) cannot make an fq qdisc: running the suite in a qemu guest of Debian 12's 6.1 ($kernel)"
	out=$(mktemp)
	KERNELS=$kernel KERNEL_SUITES=shape KERNEL_MEM=${SHAPE_GUEST_MEM:-1G} \
		KERNEL_TIMEOUT=${SHAPE_GUEST_TIMEOUT:-900} scripts/test-kernels.sh >"$out" 2>&1
	st=$?
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*" - $kernel # SKIP "*)
			seen=1
			emit "ok" "shape suite # SKIP no qemu guest: ${line#* # SKIP }" ;;
		"not ok "[0-9]*" - $kernel ("*"apt-get download"*)
			seen=1
			emit "ok" "shape suite # SKIP no qemu guest: the kernel package is not cached in ${KERNEL_CACHE:-$BUILD/kernels} and ${line#*: } (no network?)" ;;
		"ok "[0-9]*" - "*": shape/"*)
			seen=1 tag=${line#ok * - } tag=${tag%%: *}
			line=${line#ok * - *: }
			case $line in
			*" # SKIP "*) emit "ok" "${line%% # SKIP *} [$tag guest] # SKIP ${line#* # SKIP }" ;;
			*) emit "ok" "$line [$tag guest]" ;;
			esac ;;
		"not ok "[0-9]*" - "*": shape/"*)
			seen=1 tag=${line#not ok * - } tag=${tag%%: *}
			emit "not ok" "${line#not ok * - *: } [$tag guest]" ;;
		"not ok "[0-9]*" - "*)
			seen=1
			emit "not ok" "shape: qemu guest: ${line#not ok * - }" ;;
		"ok "[0-9]*" - "*)
			seen=1
			emit "ok" "shape: qemu guest: ${line#ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
	[ "$seen" = 1 ] || {
		emit "not ok" "shape: scripts/test-kernels.sh reported no test (exit status $st)"
		diag_file "$out"
	}
	rm -f "$out"
}

diag_file() { sed 's/^/# /' "$1"; }

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
		# The bpf suite again on the set-associative key table (--table
		# sets): every program, its lines marked "[sets table]".
		if [ "$suite" = bpf ] && [ $found = 1 ]; then
			echo "# suite bpf on the sets table (SLUICE_TEST_TABLE=sets)"
			RUN_MARK=" [sets table]"
			for p in "$BUILD"/tests/bpf/*; do
				[ -x "$p" ] && [ -f "$p" ] || continue
				run_prog "$suite" env SLUICE_TEST_TABLE=sets "$p"
			done
			RUN_MARK=
		fi
		;;
	shape)
		if fq_available; then
			for p in tests/shape/*.sh; do
				[ -f "$p" ] || continue
				run_prog "$suite" bash "$p"
			done
		elif [ -n "${SLUICE_GUEST:-}" ]; then
			emit "not ok" "shape: this guest's kernel ($(uname -r)) cannot make an fq qdisc (sch_fq)"
		else
			shape_in_guest
		fi
		;;
	net | cli | stress)
		for p in tests/"$suite"/*.sh; do
			[ -f "$p" ] || continue
			run_prog "$suite" bash "$p"
		done
		;;
	esac
done
tally_end

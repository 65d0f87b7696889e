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
#   soak  an operator's day, SOAK_S seconds      tests/soak/*.sh     (root; not in the
#         default: make soak)
# Ends with exactly one line "N passed, N failed, N skipped".
# SUITES="unit cli" limits the run; TEST_TIMEOUT bounds one program (seconds);
# TEST_JOBS (default 2) programs of the unit, bpf and cli suites run at once,
# TEST_NET_JOBS (default 2) net scripts (one with a held_check alone).
# GUEST_SUITES="bpf net/multiprog" runs those on Debian 12's 6.1 too, in the
# shape suite's qemu guest (one boot; CI does: .ci/run), as make test-kernels
# KERNELS=linux-image-amd64 KERNEL_SUITES="..." would; see "the qemu guest".
set -u
export BUILD=${BUILD:-build}
SUITES=${SUITES:-unit bpf cli net shape}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
# A word SUITE/NAME runs only that program or script of SUITE (NAME without
# .sh), e.g. SUITES="bpf net/multiprog": the suites in the order first named,
# each with the names picked in it (PICK[SUITE]; none: all of them).
declare -A PICK=()
RUN_SUITES=
for w in $SUITES; do
	s=${w%%/*}
	case " $RUN_SUITES " in *" $s "*) ;; *) RUN_SUITES="$RUN_SUITES $s" ;; esac
	if [ "$s" != "$w" ]; then
		PICK[$s]="${PICK[$s]:-} ${w#*/}"
	else
		PICK[$s]="${PICK[$s]:-} :all"
	fi
done
# picked SUITE PATH: does this run take PATH of SUITE?
picked() {
	local n w
	n=$(basename "$2")
	n=${n%.sh}
	for w in ${PICK[$1]:-}; do
		[ "$w" = ":all" ] || [ "$w" = "$n" ] || [ "$w" = "$n.sh" ] && return 0
	done
	return 1
}
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

# run_prog SUITE PROG...: run one test program (RUN_MARK: a suffix for every
# line) and merge its lines. Up to JOBS programs run at once (prog_start),
# each into a file of its own: a new one starts as soon as any of them ends.
# Their lines are merged in the order they started (prog_flush), so the
# stream is the same whatever JOBS is.
JOBS=1
PROG_Q=()
run_prog() {
	prog_start "$@"
	while [ "$(prog_running)" -ge "$JOBS" ]; do sleep 0.1; done
	prog_flush
}
# prog_running: how many of the programs started are still running (a
# program's status file appears as it ends).
prog_running() {
	local e tmp n=0
	for e in "${PROG_Q[@]}"; do
		read -r _ tmp _ <<<"$e"
		[ -e "$tmp.st" ] || n=$((n + 1))
	done
	echo $n
}
# prog_flush: merge the programs at the head of the queue that have ended.
prog_flush() {
	local tmp
	while [ "${#PROG_Q[@]}" -gt 0 ]; do
		read -r _ tmp _ <<<"${PROG_Q[0]}"
		[ -e "$tmp.st" ] || break
		prog_finish
	done
}
prog_start() { # prog_start SUITE PROG...
	local suite=$1 name tmp
	shift
	name="$suite/$(basename "${@: -1}")"
	tmp=$(mktemp)
	{
		local t0=$EPOCHREALTIME st
		timeout --kill-after=10 "$TEST_TIMEOUT" "$@" >"$tmp" 2>&1 </dev/null
		st=$?
		echo "$st $t0 $EPOCHREALTIME" >"$tmp.st"
	} &
	PROG_Q+=("$! $tmp $name${RUN_MARK:+|$RUN_MARK}")
}
# prog_finish: wait for the oldest program running and merge its lines.
prog_finish() {
	local pid tmp name line st seen=0 bad=0 RUN_MARK=
	read -r pid tmp name <<<"${PROG_Q[0]}"
	PROG_Q=("${PROG_Q[@]:1}")
	case $name in *"|"*) RUN_MARK=${name#*|} name=${name%%|*} ;; esac
	wait "$pid"
	local t0 t1
	read -r st t0 t1 <"$tmp.st" 2>/dev/null
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) seen=1; emit "ok" "$(mark "$name: ${line#ok - }")" ;;
		"not ok - "*) seen=1; bad=1; emit "not ok" "$(mark "$name: ${line#not ok - }")" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$tmp"
	rm -f "$tmp" "$tmp.st"
	prog_time "$name${RUN_MARK}" "${t0:-}" "${t1:-}"
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		emit "not ok" "$(mark "$name: timed out after ${TEST_TIMEOUT}s")"
	elif [ "$seen" = 0 ]; then
		emit "not ok" "$(mark "$name: reported no test (exit status $st)")"
	elif [ "$st" != 0 ] && [ "$bad" = 0 ]; then
		emit "not ok" "$(mark "$name: exit status $st")"
	fi
}
prog_drain() { while [ "${#PROG_Q[@]}" -gt 0 ]; do prog_finish; done; }

# prog_time NAME T0 T1: one comment with the program's wall time, kept for
# the slowest-ten summary at the end (where the suite's time goes).
PROG_TIMES=()
prog_time() {
	[ -n "$2" ] && [ -n "$3" ] || return 0
	local ms
	ms=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%d", (b - a) * 1000 }')
	echo "# time: $1 $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s"
	PROG_TIMES+=("$ms $1")
}
prog_times_end() {
	[ "${#PROG_TIMES[@]}" -gt 0 ] || return 0
	echo "# the slowest programs (wall seconds; TEST_JOBS ran some side by side):"
	printf '%s\n' "${PROG_TIMES[@]}" | sort -rn | head -10 |
		awk '{ ms = $1; $1 = ""; printf "#   %7.1f %s\n", ms / 1000, substr($0, 2) }'
}

# run_stream SUITE PROG...: as run_prog, but each line as it comes (the soak
# runs for SOAK_S seconds: its progress is worth seeing), bounded by
# SOAK_S + 900 seconds.
run_stream() {
	local suite=$1 name line seen=0 bad=0 stf
	shift
	name="$suite/$(basename "${@: -1}")"
	stf=$(mktemp)
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) seen=1; emit "ok" "$name: ${line#ok - }" ;;
		"not ok - "*) seen=1; bad=1; emit "not ok" "$name: ${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < <(timeout --kill-after=10 $((${SOAK_S:-1800} + 900)) "$@" 2>&1 </dev/null
		echo $? >"$stf")
	local st
	st=$(cat "$stf")
	rm -f "$stf"
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		emit "not ok" "$name: timed out after $((${SOAK_S:-1800} + 900))s"
	elif [ "$seen" = 0 ]; then
		emit "not ok" "$name: reported no test (exit status $st)"
	elif [ "$st" != 0 ] && [ "$bad" = 0 ]; then
		emit "not ok" "$name: exit status $st"
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

# ---- the qemu guest: the shape suite where this kernel has no fq, and
# GUEST_SUITES (CI: the kernel-dependent programs, .ci/run) in the same boot ----
#
# One guest of Debian 12's 6.1 (scripts/test-kernels.sh, one boot) runs
# GUEST_SUITES, then the shape suite when this kernel cannot make an fq
# qdisc. It starts before the host's first suite and runs in the background
# while the host runs the suites that time nothing (unit, bpf, cli); the
# guest's suites that measure (net, shape) wait at a gate (a file in a 9p
# share of its own, guest_go) until the host is done with those, and the
# host's suites that measure rates (net, stress, soak) wait for the guest to
# end. Its TAP lines are merged into this stream when it
# ends: the shape suite's as "shape/... [6.1.0-N guest]", GUEST_SUITES' as
# make test-kernels names them ("6.1.0-N: bpf/..."). One SKIP with the reason
# when no guest can be run (no qemu or busybox, no kernel package cached and
# none to download).
GUEST_KERNEL=linux-image-amd64
GUEST_PID= GUEST_OUT= GUEST_SKIP= GUEST_SHAPE=0 GUEST_WANTED= GUEST_STARTED=0

# guest_start: decide what the guest runs and boot it in the background (once).
guest_start() {
	local t suites=${GUEST_SUITES:-}
	[ "$GUEST_STARTED" = 0 ] || return 0
	GUEST_STARTED=1
	case " $RUN_SUITES " in
	*" shape "*)
		if [ -z "${SLUICE_GUEST:-}" ] && [ "$(id -u)" = 0 ] && ! fq_available; then
			GUEST_SHAPE=1
			# The shape scripts SUITES picked (shape/NAME), or all.
			for t in ${PICK[shape]}; do
				case $t in :all) suites="$suites shape" ;; *) suites="$suites shape/$t" ;; esac
			done
		fi ;;
	esac
	suites=$(echo $suites)
	[ -n "$suites" ] || return 0
	GUEST_WANTED=$suites
	if [ "$(id -u)" != 0 ]; then
		GUEST_SKIP="needs root (qemu, and the bpf suite in the guest): run 'sudo make test'"
		return 0
	fi
	for t in qemu-system-x86_64 busybox cpio dpkg-deb depmod apt-get; do
		if ! command -v "$t" >/dev/null; then
			GUEST_SKIP="'$t' for the qemu guest is not installed: run 'sudo make deps'"
			return 0
		fi
	done
	GUEST_OUT=$(mktemp)
	echo "# guest: one qemu guest of Debian 12's 6.1 ($GUEST_KERNEL) runs: $suites" \
		"(in the background: its suites that measure start when the host's unit, bpf and cli suites are done; the host's net suite waits for it)"
	[ "$GUEST_SHAPE" = 1 ] &&
		echo "# shape: this kernel ($(uname -r)) cannot make an fq qdisc: the suite runs in the guest"
	# The bpf suite makes a 1M-key table per program: 3G, as make test-kernels.
	local mem=${SHAPE_GUEST_MEM:-1G} tmo=${SHAPE_GUEST_TIMEOUT:-900}
	if [ -n "${GUEST_SUITES:-}" ]; then
		mem=${GUEST_MEM:-3G}
		tmo=${GUEST_TIMEOUT:-1800}
	fi
	# The guest starts beside the host's unit, bpf and cli suites, which
	# load both CPUs: its suites that measure wait at a gate (KERNEL_GATE, a
	# directory it sees) until guest_go makes a file in it. It runs at a
	# higher priority than the host's suites (nice -5): it is the longest
	# part of the run, and its emulated timers suffer most from a busy host.
	GUEST_GATE=$(mktemp -d)
	KERNELS=$GUEST_KERNEL KERNEL_SUITES=$suites KERNEL_MEM=$mem KERNEL_TIMEOUT=$tmo \
		KERNEL_GATE=$GUEST_GATE nice -n -5 scripts/test-kernels.sh >"$GUEST_OUT" 2>&1 </dev/null &
	GUEST_PID=$!
}

# guest_go: open the guest's gate (once): the host no longer loads the
# machine. The file stays until the guest ends (guest_gate_end).
GUEST_GATE=
guest_go() {
	[ -n "$GUEST_GATE" ] && [ ! -e "$GUEST_GATE/go" ] || return 0
	echo "# guest: the host's unit, bpf and cli suites are done: the guest's suites that measure may start"
	: >"$GUEST_GATE/go"
}
# guest_gate_end: the guest ended: remove its gate.
guest_gate_end() {
	[ -n "$GUEST_GATE" ] || return 0
	rm -rf "$GUEST_GATE"
	GUEST_GATE=
}

# guest_gate_wait: in a guest booted with a gate, wait for the host's go.
guest_gate_wait() {
	[ -n "${SLUICE_GUEST_GATE:-}" ] || return 0
	local t0=$SECONDS
	echo "# guest: the suites that measure wait for the host's go (its own suites load the machine)"
	while [ ! -e "$SLUICE_GUEST_GATE" ] && [ $((SECONDS - t0)) -lt "${GUEST_GATE_TIMEOUT:-1800}" ]; do
		sleep 1
	done
	if [ -e "$SLUICE_GUEST_GATE" ]; then
		echo "# guest: go after $((SECONDS - t0)) s"
	else
		echo "# guest: no go from the host within ${GUEST_GATE_TIMEOUT:-1800} s: going on anyway"
	fi
	SLUICE_GUEST_GATE=
}

# guest_skip_all WHY: one SKIP for what the guest would have run.
guest_skip_all() {
	[ "$GUEST_SHAPE" = 1 ] && emit "ok" "shape suite # SKIP this kernel has no fq qdisc, and $1"
	[ -n "${GUEST_SUITES:-}" ] && emit "ok" "guest suites ($GUEST_SUITES on $GUEST_KERNEL) # SKIP $1"
	return 0
}

# guest_finish: wait for the guest (once) and merge its lines.
guest_finish() {
	local line st seen=0 tag
	[ -n "$GUEST_WANTED" ] || return 0
	GUEST_WANTED=
	if [ -n "$GUEST_SKIP" ]; then
		guest_skip_all "$GUEST_SKIP"
		return 0
	fi
	echo "# guest: waiting for the qemu guest (pid $GUEST_PID)"
	wait "$GUEST_PID"
	st=$?
	guest_gate_end
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*" - $GUEST_KERNEL # SKIP "*)
			seen=1
			guest_skip_all "no qemu guest: ${line#* # SKIP }" ;;
		"not ok "[0-9]*" - $GUEST_KERNEL ("*"apt-get download"*)
			seen=1
			guest_skip_all "no qemu guest: the kernel package is not cached in ${KERNEL_CACHE:-$BUILD/kernels} and ${line#*: } (no network?)" ;;
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
		# GUEST_SUITES' lines, and the guest's own (it booted, it ended), as
		# make test-kernels names them; with the shape suite alone, the
		# guest's own lines are the shape suite's.
		"not ok "[0-9]*" - "*)
			seen=1
			if [ -n "${GUEST_SUITES:-}" ]; then
				emit "not ok" "${line#not ok * - }"
			else
				emit "not ok" "shape: qemu guest: ${line#not ok * - }"
			fi ;;
		"ok "[0-9]*" - "*)
			seen=1
			if [ -n "${GUEST_SUITES:-}" ]; then
				emit "ok" "${line#ok * - }"
			else
				emit "ok" "shape: qemu guest: ${line#ok * - }"
			fi ;;
		"#"*) echo "$line" ;;
		esac
	done <"$GUEST_OUT"
	[ "$seen" = 1 ] || {
		emit "not ok" "guest ($GUEST_KERNEL): scripts/test-kernels.sh reported no test (exit status $st)"
		diag_file "$GUEST_OUT"
	}
	rm -f "$GUEST_OUT"
}

diag_file() { sed 's/^/# /' "$1"; }
# times_nothing SCRIPT: does SCRIPT say it measures no time or rate?
times_nothing() { grep -qx '# test: times nothing' "$1"; }

echo "TAP version 13"
guest_start
for suite in $RUN_SUITES; do
	echo "# suite $suite"
	# The guest's suites that measure wait for the host's unit, bpf and cli
	# suites (guest_go). A suite that measures rates runs alone: not beside
	# the guest (on the host), not beside the host's other suites (in a
	# guest with a gate). Beside the host's net suite, the guest's shaper
	# timings (milliseconds, emulated) failed in 2 runs of 13 here.
	case $suite in net | stress | soak) guest_gate_wait; guest_go; guest_finish ;; esac
	if { [ "$suite" = bpf ] || [ "$suite" = net ] || [ "$suite" = shape ] ||
		[ "$suite" = stress ] || [ "$suite" = soak ]; } &&
		[ "$(id -u)" != 0 ]; then
		emit "ok" "$suite suite # SKIP needs root (CAP_BPF and CAP_NET_ADMIN): run 'sudo make test'"
		continue
	fi
	# The suites that time nothing run TEST_JOBS programs at once (default
	# 2: the unit and bpf programs are mostly one thread each, and each cli
	# script has its own namespaces and files); the others one at a time.
	case $suite in
	unit | bpf | cli) JOBS=${TEST_JOBS:-2} ;;
	net) JOBS=${TEST_NET_JOBS:-2} ;;
	*) JOBS=1 ;;
	esac
	case $suite in
	unit | bpf)
		found=0 users=$(mktemp)
		for p in "$BUILD"/tests/"$suite"/*; do
			[ -x "$p" ] && [ -f "$p" ] && picked "$suite" "$p" || continue
			found=1
			run_prog "$suite" env SLUICE_TEST_TABLE_USERS="$users" "$p"
		done
		prog_drain
		[ $found = 1 ] || emit "not ok" "$suite: no test programs in $BUILD/tests/$suite (run 'make tests')"
		# The bpf suite again on the set-associative key table (--table
		# sets), its lines marked "[sets table]": every program whose
		# behaviour depends on the table, i.e. that asked for the run's
		# default table (tests/lib/bpfrun.c lists it in $users). The
		# others open each table they test themselves, and would repeat
		# their lines word for word.
		if [ "$suite" = bpf ] && [ $found = 1 ]; then
			echo "# suite bpf on the sets table (SLUICE_TEST_TABLE=sets)"
			RUN_MARK=" [sets table]"
			for p in "$BUILD"/tests/bpf/*; do
				[ -x "$p" ] && [ -f "$p" ] && picked bpf "$p" || continue
				if grep -qx "$(basename "$p")" "$users"; then
					run_prog "$suite" env SLUICE_TEST_TABLE=sets "$p"
				else
					echo "# bpf/$(basename "$p"): opens the tables it tests itself: not run again on the sets table"
				fi
			done
			prog_drain
			RUN_MARK=
		fi
		rm -f "$users"
		;;
	shape)
		if fq_available; then
			# The scripts that say "# test: times nothing" first,
			# TEST_JOBS at once (in a guest with a gate: beside the
			# host's unit, bpf and cli suites), then, past the gate,
			# those that measure, one at a time.
			JOBS=${TEST_JOBS:-2}
			for p in tests/shape/*.sh; do
				[ -f "$p" ] && picked shape "$p" && times_nothing "$p" || continue
				run_prog "$suite" bash "$p"
			done
			prog_drain
			JOBS=1
			guest_gate_wait
			for p in tests/shape/*.sh; do
				[ -f "$p" ] && picked shape "$p" && ! times_nothing "$p" || continue
				run_prog "$suite" bash "$p"
			done
			prog_drain
		elif [ -n "${SLUICE_GUEST:-}" ]; then
			emit "not ok" "shape: this guest's kernel ($(uname -r)) cannot make an fq qdisc (sch_fq)"
		elif guest_start && [ "$GUEST_SHAPE" = 1 ]; then
			guest_go
			guest_finish
		else
			emit "not ok" "shape: this kernel cannot make an fq qdisc, and no guest was started for it"
		fi
		;;
	net | cli | stress)
		# A script that holds a flood to burst + rate x t (held_check,
		# a bound exact to the packet) runs with no other script of the
		# host's beside it: those run one at a time after the others.
		alone=()
		for p in tests/"$suite"/*.sh; do
			[ -f "$p" ] && picked "$suite" "$p" || continue
			if [ "$JOBS" -gt 1 ] && grep -q '^[^#]*held_check ' "$p"; then
				alone+=("$p")
			else
				run_prog "$suite" bash "$p"
			fi
		done
		prog_drain
		for p in "${alone[@]}"; do
			JOBS=1 run_prog "$suite" bash "$p"
		done
		;;
	soak)
		for p in tests/soak/*.sh; do
			[ -f "$p" ] && picked soak "$p" || continue
			run_stream "$suite" bash "$p"
		done
		;;
	esac
done
guest_go
guest_finish
prog_times_end
tally_end

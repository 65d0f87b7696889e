# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# TAP helpers for sluice's shell tests; source this file.
# Lines are "ok - name" / "not ok - name"; tests/run.sh numbers them.

TAP_FAILED=0
BUILD=${BUILD:-build}
SLUICE=${SLUICE:-$BUILD/sluice}
SLUICECTL=${SLUICECTL:-$BUILD/sluicectl}
SLUICE_GEN=${SLUICE_GEN:-$BUILD/sluice-gen}

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; TAP_FAILED=$((TAP_FAILED + 1)); }
skip() { local why=$1; shift; echo "ok - $* # SKIP $why"; }
diag() { local l; while IFS= read -r l; do echo "# $l"; done <<<"$*"; }

# check NAME CMD...: ok if CMD succeeds; its output is shown when it fails.
check() {
	local name=$1 out; shift
	if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name"; diag "$out"; fi
}

# expect_status WANT NAME CMD...: ok if CMD exits with WANT; sets $OUT to its output.
expect_status() {
	local want=$1 name=$2 st; shift 2
	OUT=$("$@" 2>&1); st=$?
	if [ "$st" = "$want" ]; then ok "$name"; return 0; fi
	not_ok "$name"; diag "exit status $st, want $want: $*"; diag "$OUT"; return 1
}

# expect_usage NAME PATTERN CMD...: CMD exits 2 (a usage error) and its
# message says PATTERN (case-insensitive).
expect_usage() {
	local name=$1 pat=$2
	shift 2
	expect_status 2 "$name: exit status 2" "$@" || return
	if grep -qiF -- "$pat" <<<"$OUT"; then
		ok "$name: says '$pat'"
	else
		not_ok "$name: says '$pat'"
		diag "$*: $OUT"
	fi
}

# all_passed GOT SENT LOST: every packet sent arrived, but for LOST that the
# receiver's queue had no room for before XDP (a starved receiver).
all_passed() { [ "$1" -le "$2" ] && [ $(($1 + $3)) -ge "$2" ]; }

# promtool_check NAME FILE: `promtool check metrics` accepts the Prometheus
# text in FILE (skipped, saying why, where promtool is not installed).
promtool_check() {
	local out
	if ! command -v promtool >/dev/null; then
		skip "promtool is not installed (Debian's prometheus package): run 'sudo make deps'" "$1"
	elif out=$(promtool check metrics <"$2" 2>&1); then
		ok "$1"
	else
		not_ok "$1"
		diag "$out"
	fi
}
tap_done() { [ "$TAP_FAILED" = 0 ]; }

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# --table lru|sets of sluice attach, run and shape attach: a bad value is a
# usage error (exit 2) naming both, before anything looks at IFACE; the help
# texts document it. No root needed: the interface does not exist.
set -u
source tests/lib/tap.sh

if [ ! -x "$SLUICE" ]; then
	skip "sluice is not built ($SLUICE): run 'make'" "--table"
	exit 0
fi

IF="cttab$$"

usage() { local n=$1 p=$2; shift 2; expect_usage "$n" "$p" "$SLUICE" "$@"; }

for cmd in attach run "shape attach"; do
	# shellcheck disable=SC2086 # "shape attach" is two words
	usage "$cmd --table hash" "--table takes 'lru'" $cmd "$IF" --table hash
	# shellcheck disable=SC2086
	usage "$cmd --table hash names sets" "or 'sets'" $cmd "$IF" --table hash
	# shellcheck disable=SC2086
	usage "$cmd --table without a value" "needs a value" $cmd "$IF" --table
	# shellcheck disable=SC2086
	usage "$cmd --table LRU (case matters)" "not 'LRU'" $cmd "$IF" --table LRU
	# A good value gets past the parser: the error is the missing interface.
	for t in lru sets; do
		# shellcheck disable=SC2086
		OUT=$($SLUICE $cmd "$IF" --table $t 2>&1)
		if grep -q -- "--table" <<<"$OUT" || ! grep -q "no interface '$IF'" <<<"$OUT"; then
			not_ok "$cmd --table $t: accepted (fails only on the missing interface)"
			diag "$OUT"
		else
			ok "$cmd --table $t: accepted (fails only on the missing interface)"
		fi
	done
done

# The help of each command documents the option (run's takes every option of
# attach, and says so).
for cmd in attach "shape attach"; do
	# shellcheck disable=SC2086
	OUT=$($SLUICE $cmd --help 2>&1)
	if grep -q -- "--table lru|sets" <<<"$OUT"; then
		ok "$cmd --help documents --table lru|sets"
	else
		not_ok "$cmd --help documents --table lru|sets"
		diag "$OUT"
	fi
done
OUT=$($SLUICE attach --help 2>&1)
if grep -q "keys per family" <<<"$OUT" && grep -q "set-associative" <<<"$OUT"; then
	ok "attach --help: --max-keys on the sets table is per family"
else
	not_ok "attach --help: --max-keys on the sets table is per family"
	diag "$OUT"
fi
if [ -r man/sluice.8 ] && grep -q 'table " " lru | sets' man/sluice.8 &&
	grep -q 'sluice_sets_for(N)' man/sluice.8; then
	ok "sluice(8) documents --table and the sets table's size"
else
	not_ok "sluice(8) documents --table and the sets table's size"
fi

tap_done

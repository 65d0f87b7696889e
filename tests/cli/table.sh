#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# --table sets|lru of sluice attach, run and shape attach: a bad value is a
# usage error (exit 2) naming both, the default first, before anything looks
# at IFACE; the help texts document it, and that sets is the default. No root needed: the interface does not exist.
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
	usage "$cmd --table hash" "--table takes 'sets' (the set-associative table, the default)" \
		$cmd "$IF" --table hash
	# shellcheck disable=SC2086
	usage "$cmd --table hash names lru" "or 'lru'" $cmd "$IF" --table hash
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
	if grep -q -- "--table sets|lru" <<<"$OUT"; then
		ok "$cmd --help documents --table sets|lru"
	else
		not_ok "$cmd --help documents --table sets|lru"
		diag "$OUT"
	fi
done
OUT=$($SLUICE attach --help 2>&1)
if grep -q "keys per family" <<<"$OUT" && grep -q "set-associative" <<<"$OUT" &&
	grep -q "a new state: sets (default)" <<<"$OUT"; then
	ok "attach --help: sets is the default, --max-keys on it is per family"
else
	not_ok "attach --help: sets is the default, --max-keys on it is per family"
	diag "$OUT"
fi
if [ -r man/sluice.8 ] && grep -q 'table " " sets | lru' man/sluice.8 &&
	grep -q 'sluice_sets_for(N)' man/sluice.8; then
	ok "sluice(8) documents --table and the sets table's size"
else
	not_ok "sluice(8) documents --table and the sets table's size"
fi

tap_done

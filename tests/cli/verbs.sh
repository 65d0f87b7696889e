#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A shortened word never changes state: sluicectl takes a unique prefix only
# for a command that reads (rule list, stats, top, show), never for one that
# changes anything (set, rule add, rule del, rule flush, flush); sluice takes
# no shortened option (--fr is not --fresh). Checked on an attached veth of
# our own: a refused word leaves every rule and bucket where it was.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "shortened words never change state"
for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "shortened words never change state"
		exit 0
	fi
done

N=41
netns_setup vb $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach" rx_sluice attach "$IF_RX" || exit 1
ctl() { rx_ctl -i "$IF_RX" "$@"; }
rules() { ctl -j rule list | grep -o '"match":"[^"]*"' | tr '\n' ' '; }
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}

expect_status 0 "rule add" ctl rule add 198.18.$N.0/24 --deny
expect_status 0 "rule add" ctl rule add 198.18.$N.128/25 --rate 10/s
before=$(rules)
has "two rules and the default" '"match":"198.18.41.128/25"' "$before"

# ---- sluicectl: the words that change state, shortened ----
for words in "r f" "rule f" "rule fl" "r d 198.18.$N.0/24" "rule de 198.18.$N.0/24" \
	"rule a 198.18.$N.64/26 --deny" "r ad 198.18.$N.64/26 --deny" "f" "fl" \
	"se --rate 1/h" "flus 198.18.$N.5"; do
	# shellcheck disable=SC2086 # the words are words
	expect_usage "sluicectl $words: refused" "which changes state" ctl $words
	has "sluicectl $words: names the full command" "write it in full, 'sluicectl " "$OUT"
	if [ "$(rules)" = "$before" ]; then
		ok "sluicectl $words: every rule is still there"
	else
		not_ok "sluicectl $words: every rule is still there"
		diag "before: $before"; diag "after: $(rules)"
	fi
done
expect_usage "sluicectl r f under -j: refused in JSON too" '"error"' ctl -j r f
# ... while their full names work, and reading words may still be shortened
expect_status 0 "sluicectl rule l (a command that reads) may be shortened" ctl rule l
has "rule l lists the rules" "198.18.$N.128/25" "$OUT"
expect_status 0 "sluicectl r li" ctl r li
expect_status 0 "sluicectl sh ADDR (show)" ctl sh 198.18.$N.7
expect_status 0 "sluicectl st (stats)" ctl st
expect_status 0 "sluicectl t (top)" ctl t
expect_status 0 "sluicectl rule flush (in full) flushes" ctl rule flush
has "rule flush: only the default is left" '"match":"default"' "$(rules)"
[ "$(rules)" = '"match":"default" ' ] && ok "rule flush: no rule left" ||
	{ not_ok "rule flush: no rule left"; diag "$(rules)"; }

# ---- sluice: no shortened options (getopt_long would take them) ----
expect_status 0 "rule add" ctl rule add 198.18.$N.0/24 --deny
before=$(rules)
rx_sluice detach "$IF_RX" --keep-state >/dev/null
expect_usage "sluice attach --fr: refused" "'--fr' is short for '--fresh'" \
	rx_sluice attach "$IF_RX" --fr
expect_usage "sluice attach --fres: refused" "write options in full" \
	rx_sluice attach "$IF_RX" --fres
expect_usage "sluice attach --rat=10/s: refused" "'--rat' is short for '--rate'" \
	rx_sluice attach "$IF_RX" --rat=10/s
expect_usage "sluice run --keep: refused" "'--keep' is short for '--keep-state'" \
	rx_sluice run "$IF_RX" --keep
expect_status 0 "sluice attach (resumes the kept state)" rx_sluice attach "$IF_RX"
if [ "$(rules)" = "$before" ]; then
	ok "the refused --fr dropped nothing: the rules were resumed"
else
	not_ok "the refused --fr dropped nothing: the rules were resumed"
	diag "before: $before"; diag "after: $(rules)"
fi
# a value that starts with -- is the option's value, not a shortened option
expect_usage "sluice attach --config --x: the value is a file" "--x" \
	rx_sluice attach "$IF_RX" --config --x

tap_done

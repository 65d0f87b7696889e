#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Rule sets past the 4,095 counter slots, as the real sluice and sluicectl
# run them:
#  - a batch of 5,000 rules applies; past 2,047 slots rules of one policy
#    share a slot, rule list says which counters are shared, and traffic
#    from a source of a rule on a shared slot gets that rule's policy;
#  - the rules of a family of at most two prefix lengths live in the rule
#    hash (of up to four past 4,096 rules), of more only the /32s: show and
#    top name them;
#  - one rule add or del at 5,000 rules is a few bpf(2) calls, not O(rules)
#    (it is made in place in the live generation);
#  - --max-rules bounds the rules, and a pinned state keeps its size;
#  - a rule table left stale (a writer that died) is not trusted: the rules
#    are read from the maps, and the next change repairs the table;
#  - a layout-4 state (the sluice before: no rule table, no rule hash) is
#    upgraded in place by attach, its rules kept.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "rules past the counter slots" strace bpftool jq
netns_need_sluice "rules past the counter slots"

N=62 R=5000
netns_setup rs $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach --max-rules 6000" \
	rx_sluice attach "$IF_RX" --max-rules 6000 --rate 1000/s || exit 1
ctl() { rx_ctl -i "$IF_RX" "$@"; }
T=$NETNS_TMP

# R rules: /32s of 198.19.0.0/16, every fifth a /30 of 198.18.128.0/17.
# Policies: deny, exempt, and one rate: three, so past 2,047 slots they share.
awk -v r=$R 'BEGIN { for (i = 0; i < r; i++) {
	m = i % 3
	pol = m == 0 ? "--deny" : m == 1 ? "--exempt" : "--rate 10/s --burst 5"
	if (i % 5 == 4)
		printf "rule add 198.18.%d.%d/30 %s\n", 128 + int(i / 64) % 128, (i % 64) * 4, pol
	else
		printf "rule add 198.19.%d.%d/32 %s\n", int(i / 256), i % 256, pol
} }' >"$T/rules.conf"
expect_status 0 "a batch of $R rules" ctl -b "$T/rules.conf" || exit 1
list=$(ctl -j rule list)
n=$(grep -o '"match":' <<<"$list" | wc -l)
if [ "$n" = $((R + 1)) ]; then ok "rule list has the $R rules and the default"; else
	not_ok "rule list has the $R rules and the default"; diag "$n rows"; fi
slots=$(grep -o '"slot":[0-9]*' <<<"$list" | sort -u | wc -l)
if [ "$slots" -le 4096 ] && [ "$slots" -ge 2048 ]; then
	ok "the rules use at most the 4,095 slots (and the default's): $slots"
else
	not_ok "the rules use at most the 4,095 slots (and the default's): $slots"
fi
if grep -q '"counters_shared_by":' <<<"$list"; then ok "rule list -j marks shared counters"
else not_ok "rule list -j marks shared counters"; fi
if ctl rule list | grep -q "^\* counters of a slot"; then ok "rule list explains the shared mark"
else not_ok "rule list explains the shared mark"; fi

# Rule 4997 (i % 3 == 2, a /32): a rate rule on a shared slot; rule 4998
# (i % 3 == 0): a denied /32.
RATE_SRC=198.19.19.133 DENY_SRC=198.19.19.134
has_row() { if grep -qF -- "$2" <<<"$(row "$3")"; then ok "$1"; else not_ok "$1"; diag "$(row "$3")"; fi; }
has_row "the last rate rule is on a shared slot" '"counters_shared_by":' "$RATE_SRC/32"
denied0=$(sluice_stat denied)
tx_gen -s "$DENY_SRC" -d "$ADDR4_RX" -n 20 >/dev/null || not_ok "send 20 packets from $DENY_SRC"
denied=$(($(sluice_stat denied) - denied0))
if [ "$denied" = 20 ]; then ok "a denied /32 on a shared slot drops all 20"; else
	not_ok "a denied /32 on a shared slot drops all 20"; diag "denied $denied"; fi
tx_gen -s "$RATE_SRC" -d "$ADDR4_RX" -n 20 >/dev/null || not_ok "send 20 packets from $RATE_SRC"
out=$(ctl show "$RATE_SRC")
if grep -q "policy    $RATE_SRC/32: limit token-bucket 10/s" <<<"$out" &&
	grep -qx "dropped   15" <<<"$out"; then
	ok "show: the /32 rule's policy held its source to its burst of 5"
else
	not_ok "show: the /32 rule's policy held its source to its burst of 5"; diag "$out"
fi
out=$(ctl top -n 1)
if grep -q "$RATE_SRC/32 .*$RATE_SRC/32" <<<"$out"; then
	ok "top names the source's own rule, not another of its slot"
else
	not_ok "top names the source's own rule, not another of its slot"; diag "$out"
fi
in_maps() { # in_maps HASH TRIE: how many entries each holds
	[ "$(bpftool -j map dump pinned "$RX_PINS/sluice_rulehash" | jq length)" = "$1" ] &&
		[ "$(bpftool -j map dump pinned "$RX_PINS/sluice_rules" | jq length)" = "$2" ]
}
if in_maps $R 0; then ok "two IPv4 lengths (/32, /30): all $R rules in sluice_rulehash"
else not_ok "two IPv4 lengths (/32, /30): all $R rules in sluice_rulehash"; fi
expect_status 0 "a third length (/16)" ctl rule add 198.18.0.0/16 --exempt
if in_maps $((R + 1)) 0; then ok "three lengths and more than 4,096 rules: all in the hash"
else not_ok "three lengths and more than 4,096 rules: all in the hash"; fi
printf 'rule add 198.18.64.0/20 --exempt\nrule add 198.18.80.0/26 --exempt\n' >"$T/lens.conf"
expect_status 0 "two more lengths (/20, /26)" ctl -b "$T/lens.conf"
if in_maps $((R - R / 5)) $((R / 5 + 3)); then
	ok "five lengths: the /32s in the hash, the /30s, /26, /20 and /16 in the trie"
else
	not_ok "five lengths: the /32s in the hash, the /30s, /26, /20 and /16 in the trie"
fi
out=$(ctl show 198.18.200.1)
if grep -q "policy    198.18.0.0/16: exempt" <<<"$out"; then ok "show finds the /16 in the trie"
else not_ok "show finds the /16 in the trie"; diag "$out"; fi
if grep -q "policy    $RATE_SRC/32" <<<"$(ctl show $RATE_SRC)"; then
	ok "and the /32 over it in the hash"
else not_ok "and the /32 over it in the hash"; fi
printf 'rule del 198.18.0.0/16\nrule del 198.18.64.0/20\nrule del 198.18.80.0/26\n' >"$T/lens.conf"
expect_status 0 "rule del of the /16, /20, /26" ctl -b "$T/lens.conf"
if in_maps $R 0; then ok "two lengths again: every rule back in the hash"
else not_ok "two lengths again: every rule back in the hash"; fi

# ---- config bytes, for the two states a test cannot reach otherwise ----
CFG=$RX_PINS/sluice_config
cfg_field() { bpftool -j map dump pinned "$CFG" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }
# cfg_poke OFFSET BYTE...: write BYTEs at OFFSET of the config (netns.sh's)
cfg_poke_rx() { cfg_poke "$CFG" "$@"; }
RULETAB_SEQ=400

# The rules without their counters, sorted as rule list sorts them.
policies() { ctl -j rule list | sed -E 's/"(passed|dropped|passed_bytes|dropped_bytes|would_drop|would_drop_bytes)":[0-9]+,?//g'; }

# One change at R rules: a constant number of bpf(2) calls.
bpf_calls() {
	rx_exec timeout 60 strace -f -qq -c -e trace=bpf -o "$T/strace" "$@" \
		>/dev/null 2>&1 || { echo "more than 60 s of"; return 1; }
	awk '$NF == "bpf" { print $4 }' "$T/strace"
}
# (Of the lengths the rules have: a new length may move rules between the
# hash and the trie, and is written whole.)
for cmd in "rule add 198.18.61.0/30 --rate 5/s" "rule add 198.18.61.0/30 --rate 6/s" \
	"rule del 198.18.61.0/30" "rule add 198.18.61.7/32 --deny" "rule del 198.18.61.7/32"; do
	# shellcheck disable=SC2086 # the words of the command
	calls=$(bpf_calls "$SLUICECTL" -i "$IF_RX" $cmd)
	if [ -n "$calls" ] && [ "$calls" -eq "$calls" ] 2>/dev/null && [ "$calls" -le 40 ]; then
		ok "$cmd at $R rules: $calls bpf calls (at most 40, whatever the rule count)"
	else
		not_ok "$cmd at $R rules: at most 40 bpf calls"; diag "$calls"
	fi
done

# The table those in-place changes left is the rules the maps hold.
from_tab=$(policies)
cfg_poke_rx $RULETAB_SEQ 0 0 0 0 0 0 0 0 || not_ok "write ruletab_seq 0"
if [ "$(policies)" = "$from_tab" ]; then
	ok "after the in-place changes the rule table lists what the maps hold"
else
	not_ok "after the in-place changes the rule table lists what the maps hold"
fi
expect_status 0 "a change rewrites the table" ctl rule add 198.18.61.9/32 --deny

# --max-rules: the table is full at 6000.
awk 'BEGIN { print "rule del 198.18.61.9/32"; for (i = 0; i < 1000; i++) printf "rule add 198.18.%d.%d/32 --deny\n", 64 + int(i / 256), i % 256 }' \
	>"$T/more.conf"
expect_status 0 "1,000 more rules: 6,000, the --max-rules" ctl -b "$T/more.conf"
expect_status 1 "rule 6,001 is refused" ctl rule add 198.18.70.1/32 --deny
case $OUT in
*"at most 6000"*"--max-rules"*) ok "the refusal names the limit and --max-rules" ;;
*) not_ok "the refusal names the limit and --max-rules"; diag "$OUT" ;;
esac
expect_status 1 "a re-attach with another --max-rules is refused" \
	rx_sluice attach "$IF_RX" --max-rules 7000
case $OUT in
*"hold 6000 rules, not 7000"*) ok "the refusal names both sizes" ;;
*) not_ok "the refusal names both sizes"; diag "$OUT" ;;
esac
ctl rule flush >/dev/null


# A stale rule table: ruletab_seq 0, as a writer that died leaves it.
# Three lengths and no /32: every rule in the trie, as layout 4 had them.
printf 'rule add 198.18.80.0/24 --rate 7/s\nrule add 198.18.81.0/25 --rate 7/s\nrule add 198.18.82.0/26 --rate 7/s\n' >"$T/three.conf"
ctl -b "$T/three.conf" >/dev/null
cfg_poke_rx $RULETAB_SEQ 0 0 0 0 0 0 0 0 || not_ok "write ruletab_seq 0"
n=$(ctl -j rule list | grep -o '"match":' | wc -l)
if [ "$n" = 4 ]; then ok "with the rule table stale, rule list reads the rules from the maps"
else not_ok "with the rule table stale, rule list reads the rules from the maps"; diag "$n rows"; fi
expect_status 0 "a rule add after it" ctl rule add 198.18.83.0/24 --rate 7/s
if [ "$(cfg_field ruletab_seq)" = "$(cfg_field seq)" ] && [ "$(cfg_field ruletab_nr)" = 4 ]; then
	ok "the change repaired the rule table (ruletab_seq = seq, 4 rules)"
else
	not_ok "the change repaired the rule table"
	diag "ruletab_seq $(cfg_field ruletab_seq) seq $(cfg_field seq) nr $(cfg_field ruletab_nr)"
fi

# A layout-4 state: no rule table, no rule hash, every rule in the trie.
rm -f "$RX_PINS/sluice_ruletab" "$RX_PINS/sluice_rulehash"
cfg_poke_rx 0 4 0 0 0 || not_ok "write layout 4"
cfg_poke_rx $RULETAB_SEQ 0 0 0 0 0 0 0 0
expect_status 1 "sluicectl refuses a layout-4 state" ctl rule list
case $OUT in
*"layout version 4"*"upgrades them"*) ok "and says attach upgrades it in place" ;;
*) not_ok "and says attach upgrades it in place"; diag "$OUT" ;;
esac
expect_status 0 "sluice attach upgrades it" rx_sluice attach "$IF_RX"
LAYOUT=$(sed -n 's/^#define SLUICE_LAYOUT_VERSION[[:space:]]*\([0-9]*\).*/\1/p' include/sluice/sluice.h)
if [ "$(cfg_field layout)" = "$LAYOUT" ] && [ -e "$RX_PINS/sluice_ruletab" ] && [ -e "$RX_PINS/sluice_rulehash" ]; then
	ok "layout $LAYOUT now, the rule table and the rule hash pinned"
else
	not_ok "layout $LAYOUT now, the rule table and the rule hash pinned"; diag "layout $(cfg_field layout)"
fi
n=$(ctl -j rule list | grep -o '"match":' | wc -l)
if [ "$n" = 5 ]; then ok "the upgrade kept the 4 rules"; else
	not_ok "the upgrade kept the 4 rules"; diag "$n rows"; fi
if in_maps 0 4; then ok "and left them in the trie"; else not_ok "and left them in the trie"; fi
expect_status 0 "a /32 rule after the upgrade" ctl rule add 198.18.84.9/32 --deny
if in_maps 1 4; then ok "it went to the hash (the /24, /25, /26 stay in the trie)"; else
	not_ok "it went to the hash (the /24, /25, /26 stay in the trie)"; fi
denied0=$(sluice_stat denied)
tx_gen -s 198.18.84.9 -d "$ADDR4_RX" -n 5 >/dev/null || not_ok "send 5 packets from 198.18.84.9"
if [ $(($(sluice_stat denied) - denied0)) = 5 ]; then ok "and it denies"; else
	not_ok "and it denies"; fi
tap_done

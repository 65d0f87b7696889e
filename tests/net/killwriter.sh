#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A writer killed anywhere leaves the old state or the new one whole:
#  - `sluice reload` of 10,000 rules killed with SIGKILL at random points (some
#    stopped with SIGSTOP first, traffic and rule list checked while they
#    hold the lock),
#    between two files whose rules sit in different maps (all in the hash;
#    the /32s in the hash and the rest in the trie), and reloads of the file
#    already in force: after each kill real traffic meets exactly the old or
#    the new rule set (the old file's deny source dropped and the new one's
#    passed, or the reverse), and rule list, top and stats --prometheus work
#    and show the set in force;
#  - a writer killed between its one in-place rule update and its flip (made
#    with bpftool: a rule deleted or added behind the settings' back, the rule
#    table stale): readers work and show what packets meet;
#  - a rule left in the idle generation (as sluice 0.4.0 left one) does not
#    come alive with the next rewrite;
#  - two full rewrites later nothing is hidden: no removed deny rule still
#    denies, and the maps hold exactly the rules of the file.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "killed writers" bpftool jq
netns_need_sluice "killed writers"

N=57 KILLS=${KILLS:-20}
DA=198.18.$N.3 DB=198.18.$N.4 DC=198.18.$N.5
netns_setup kw $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
T=$NETNS_TMP
ctl() { rx_ctl -i "$IF_RX" "$@"; }
rx_counter_add da ip saddr "$DA" && rx_counter_add db ip saddr "$DB" &&
	rx_counter_add dc ip saddr "$DC" || { not_ok "count at the receiver with nft"; exit 1; }

# fillers RATE: 10,000 /32 rules of 198.19.0.0/16 at RATE.
fillers() {
	awk -v r="$1" 'BEGIN { for (i = 0; i < 10000; i++)
		printf "rule add 198.19.%d.%d/32 --rate %s --burst 5\n", int(i / 256), i % 256, r }'
}
# A: one length (/32), every rule in the hash. B: five lengths, the /32s in
# the hash and the rest in the trie. E: neither deny rule.
{ echo "set --rate 1000/s --burst 1000"; echo "rule add $DA/32 --deny"; fillers 10/s; } >"$T/A"
{ echo "set --rate 1000/s --burst 1000"; echo "rule add $DB/32 --deny"; fillers 20/s
  printf 'rule add 198.18.60.0/24 --rate 5/s\nrule add 198.18.61.0/28 --rate 5/s\n'
  printf 'rule add 198.18.62.0/30 --rate 5/s\nrule add 198.18.63.0/26 --rate 5/s\n'; } >"$T/B"
{ echo "set --rate 1000/s --burst 1000"; fillers 30/s; } >"$T/E"
declare -A NR=([A]=10001 [B]=10005 [E]=10000)

expect_status 0 "sluice attach --config A (10,001 rules)" \
	rx_sluice attach "$IF_RX" --config "$T/A" || exit 1

# in_force: which file's deny rule packets meet: A, B, or "DA x/10 DB y/10".
in_force() {
	local a b c
	rx_counter_reset da && rx_counter_reset db && rx_counter_reset dc || return 1
	tx_gen -s "$DA" -d "$ADDR4_RX" -n 10 -r 2000 >/dev/null &&
		tx_gen -s "$DB" -d "$ADDR4_RX" -n 10 -r 2000 >/dev/null &&
		tx_gen -s "$DC" -d "$ADDR4_RX" -n 10 -r 2000 >/dev/null || return 1
	sleep 0.1
	a=$(rx_counter da) b=$(rx_counter db) c=$(rx_counter dc)
	if [ "$a" = 0 ] && [ "$b" = 10 ] && [ "$c" = 10 ]; then echo A
	elif [ "$a" = 10 ] && [ "$b" = 0 ] && [ "$c" = 10 ]; then echo B
	elif [ "$a" = 10 ] && [ "$b" = 10 ] && [ "$c" = 10 ]; then echo E
	else echo "DA $a/10 DB $b/10 DC $c/10 passed"; fi
}
# listed: which file rule list shows (by its deny rule and its count).
listed() {
	local out n
	out=$(ctl -j rule list 2>&1) || { echo "rule list failed: $out"; return 1; }
	n=$(($(grep -o '"match":' <<<"$out" | wc -l) - 1))
	case $out in
	*"\"$DA/32\""*) [ "$n" = "${NR[A]}" ] && { echo A; return; } ;;
	*"\"$DB/32\""*) [ "$n" = "${NR[B]}" ] && { echo B; return; } ;;
	*) [ "$n" = "${NR[E]}" ] && { echo E; return; } ;;
	esac
	echo "$n rules listed, of no file"
}
readers_work() {
	ctl top -n 1 >/dev/null 2>"$T/top.err" &&
		ctl stats --prometheus >/dev/null 2>"$T/prom.err"
}

v=$(in_force)
if [ "$v" = A ]; then ok "A is in force"; else not_ok "A is in force"; diag "$v"; fi
start=$EPOCHREALTIME
rx_sluice reload "$IF_RX" --config "$T/A" >/dev/null
# Kill points spread over the time a reload takes here (at least 50 ms).
span=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { s = (b - a) * 1.2; print s < 0.05 ? 0.05 : s }')
diag "a reload of 10,001 rules takes about $(awk -v s="$span" 'BEGIN { printf "%d", s / 1.2 * 1000 }') ms here"

cur=A bad_force=0 bad_read=0 bad_list=0 stopped_bad=0 files=(A B A)
for ((k = 0; k < KILLS; k++)); do
	new=${files[k % 3]}
	[ $((k % 4)) = 3 ] && new=$cur # the file in force again
	delay=$(awk -v s="$span" -v r=$RANDOM 'BEGIN { printf "%.3f", s * r / 32768 }')
	# nsenter execs sluice: $! is the writer itself.
	nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" reload "$IF_RX" --config "$T/$new" \
		>/dev/null 2>&1 &
	pid=$!
	sleep "$delay"
	if [ $((k % 3)) = 2 ]; then
		# Stopped mid-write, holding the lock: packets meet one whole set,
		# and rule list (no lock, or a bounded wait for it) shows it.
		kill -STOP "$pid" 2>/dev/null
		v=$(in_force) l=$(SLUICE_LOCK_TIMEOUT=2 listed)
		if { [ "$v" != "$cur" ] && [ "$v" != "$new" ]; } || [ "$l" != "$v" ]; then
			stopped_bad=$((stopped_bad + 1))
			diag "kill $k ($cur -> $new after $delay s), stopped: packets meet $v," \
				"rule list: $l"
		fi
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	v=$(in_force) l=$(listed)
	if [ "$v" != "$cur" ] && [ "$v" != "$new" ]; then
		bad_force=$((bad_force + 1))
		diag "kill $k ($cur -> $new after $delay s): packets meet $v"
	fi
	if [ "$l" != "$v" ]; then
		bad_list=$((bad_list + 1))
		diag "kill $k ($cur -> $new after $delay s): packets meet $v, rule list: $l"
	fi
	if ! readers_work; then
		bad_read=$((bad_read + 1))
		diag "kill $k ($cur -> $new after $delay s): $(cat "$T/top.err" "$T/prom.err")"
	fi
	case $v in A | B) cur=$v ;; esac
done
if [ $bad_force = 0 ] && [ $stopped_bad = 0 ]; then
	ok "$KILLS reloads killed at random points: packets meet the old or the new rules, whole"
else
	not_ok "$KILLS reloads killed at random points: packets meet the old or the new rules, whole"
	diag "$bad_force after the kill, $stopped_bad while stopped (or rule list then)"
fi
if [ $bad_list = 0 ]; then ok "after each kill rule list shows the rules packets meet"
else not_ok "after each kill rule list shows the rules packets meet"; fi
if [ $bad_read = 0 ]; then ok "after each kill top and stats --prometheus work"
else not_ok "after each kill top and stats --prometheus work"; fi

# A writer killed after its one in-place update, before its flip: the rule
# of DA deleted from the live generation behind the settings' back, the
# table stale (what such a writer leaves). Packets no longer meet it.
expect_status 0 "reload A" rx_sluice reload "$IF_RX" --config "$T/A"
CFG=$RX_PINS/sluice_config
cfg_bytes() {
	bpftool -j map lookup pinned "$CFG" key 0 0 0 0 | jq -r '.value | join(" ")'
}
cfg_poke() {
	local off=$1 i
	shift
	read -ra b <<<"$(cfg_bytes)"
	for i in "$@"; do b[off]=$i; off=$((off + 1)); done
	bpftool map update pinned "$CFG" key 0 0 0 0 value "${b[@]}"
}
# entry ADDR: the hex key and value of the hash entry of ADDR/32 (of the
# live generation, whichever it is).
entry() {
	local a g
	IFS=. read -ra a <<<"$1"
	for g in 0 1; do
		bpftool -j map lookup pinned "$RX_PINS/sluice_rulehash" key 48 0 0 0 $g 4 \
			"${a[@]}" 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2>/dev/null |
			jq -re 'select(.key) | "\(.key | join(" ")) value \(.value | join(" "))"' \
				2>/dev/null && return
	done
}
e=$(entry "$DA")
key=${e%% value *} val=${e#* value }
if [ -n "$e" ] && bpftool map delete pinned "$RX_PINS/sluice_rulehash" key $key &&
	cfg_poke 400 0 0 0 0 0 0 0 0; then
	v=$(in_force) l=$(listed)
	if [ "$v" = E ] && [ "$l" = E ]; then
		ok "a writer killed mid rule del: rule list works and shows what packets meet"
	else
		not_ok "a writer killed mid rule del: rule list works and shows what packets meet"
		diag "packets: $v; rule list: $l"
	fi
	readers_work && ok "and top and stats --prometheus work" ||
		{ not_ok "and top and stats --prometheus work"; diag "$(cat "$T/top.err" "$T/prom.err")"; }
else
	not_ok "delete the rule of $DA behind the settings' back"
fi
# ... and one killed mid rule add: a deny rule of DC in the live generation.
expect_status 0 "reload A" rx_sluice reload "$IF_RX" --config "$T/A"
e=$(entry "$DA")
key=${e%% value *} val=${e#* value }
# shellcheck disable=SC2086 # one argument per byte
if [ -n "$e" ] && set -- $key && bpftool map update pinned "$RX_PINS/sluice_rulehash" \
	key "${@:1:9}" 0x05 "${@:11}" value $val && cfg_poke 400 0 0 0 0 0 0 0 0; then
	v=$(in_force) out=$(ctl -j rule list 2>&1)
	case $v/$out in
	"DA 0/10 DB 10/10 DC 0/10 passed/"*"\"$DC/32\""*)
		ok "a writer killed mid rule add: rule list works and shows the rule packets meet" ;;
	*) not_ok "a writer killed mid rule add: rule list works and shows the rule packets meet"
		diag "packets: $v; rule list: $(head -c 300 <<<"$out")" ;;
	esac
else
	not_ok "add a rule of $DC behind the settings' back"
fi

# Rewrites: whatever the kills left, nothing of A or B is hidden. A
# reload of the file in force first (sluice 0.4.0 then said its rules were
# in the trie), then whole rewrites, each of which flips the generation.
expect_status 0 "reload A" rx_sluice reload "$IF_RX" --config "$T/A"
expect_status 0 "reload A again, nothing changed" rx_sluice reload "$IF_RX" --config "$T/A"
# A deny rule of DC left in the idle generation, the rule table up to date:
# what 0.4.0 left after such a reload and a rewrite (its old rules deleted
# from the wrong map).
e=$(entry "$DA")
key=${e%% value *} val=${e#* value }
# shellcheck disable=SC2086 # one argument per byte
if [ -n "$e" ] && set -- $key && bpftool map update pinned "$RX_PINS/sluice_rulehash" \
	key "${@:1:4}" $((1 - $5)) "${@:6:4}" 0x05 "${@:11}" value $val; then
	expect_status 0 "reload E (no deny rule)" rx_sluice reload "$IF_RX" --config "$T/E"
	v=$(in_force) l=$(listed)
	if [ "$v" = E ] && [ "$l" = E ]; then
		ok "a rule left in the idle generation does not come alive with the next rewrite"
	else
		not_ok "a rule left in the idle generation does not come alive with the next rewrite"
		diag "packets: $v; rule list: $l"
	fi
else
	not_ok "leave a rule of $DC in the idle generation"
fi
expect_status 0 "reload B" rx_sluice reload "$IF_RX" --config "$T/B"
v=$(in_force) l=$(listed)
if [ "$v" = B ] && [ "$l" = B ]; then ok "two rewrites later the removed deny rule of A no longer denies"
else not_ok "two rewrites later the removed deny rule of A no longer denies"; diag "packets: $v; rule list: $l"; fi
expect_status 0 "reload E" rx_sluice reload "$IF_RX" --config "$T/E"
v=$(in_force) l=$(listed)
if [ "$v" = E ] && [ "$l" = E ]; then ok "nor that of B"
else not_ok "nor that of B"; diag "packets: $v; rule list: $l"; fi
gens=$( { bpftool -j map dump pinned "$RX_PINS/sluice_rulehash"
	bpftool -j map dump pinned "$RX_PINS/sluice_rules"; } |
	jq -r '.[].formatted.key.gen' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
case $gens in
"0:10000 " | "1:10000 ") ok "the maps hold exactly E's 10,000 rules, in one generation" ;;
*) not_ok "the maps hold exactly E's 10,000 rules, in one generation"; diag "by generation: $gens" ;;
esac
tap_done

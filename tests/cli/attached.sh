#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluicectl on an attached interface (a veth in namespaces of our own):
# a rule del of a missing rule exits 1, batch files are all or nothing, edits keep or reset
# bucket state as documented, and show/top/flush/stats read what packets did.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "sluicectl on an attached interface"
for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "sluicectl on an attached interface"
		exit 0
	fi
done

N=9
netns_setup ct $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach" rx_sluice attach "$IF_RX" || exit 1

ctl() { rx_ctl -i "$IF_RX" "$@"; }
# has NAME PATTERN TEXT: ok when TEXT contains PATTERN
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
# has_line NAME LINE TEXT: ok when TEXT has LINE as a whole line
has_line() {
	if grep -qxF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
# same NAME A B / differ NAME A B
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "'$2' != '$3'"; fi; }
differ() { if [ "$2" != "$3" ]; then ok "$1"; else not_ok "$1"; diag "both '$2'"; fi; }

# ---- a rule del of a rule that is not there: the live state's condition (1) ----
expect_status 1 "rule del of a missing rule: exit status 1" ctl rule del 198.18.$N.128/25
has "rule del of a missing rule: names it" "there is no rule for 198.18.$N.128/25" "$OUT"

# ---- batch files: all or nothing ----
tmp=$NETNS_TMP
cat >"$tmp/good.conf" <<EOF
# the lab's policy
set --rate 300/s --burst 600

rule add 198.18.$N.64/26 --rate 10/s      # a noisy corner
rule add 2001:2:0:$N::/64 --rate 100/s --rate 10mbit --prefix 128
rule add 198.18.$N.128/25 --exempt
EOF
# The policies without their counters: IPv6 neighbour discovery on the veth
# may pass packets meanwhile, which is not a change.
policies() {
	ctl -j rule list | sed -E 's/"(passed|dropped|passed_bytes|dropped_bytes)":[0-9]+,?//g'
}
before=$(policies)
cp "$tmp/good.conf" "$tmp/bad.conf"
echo "rule add 198.18.$N.0/26 --rate 10/s --burst 0" >>"$tmp/bad.conf"
expect_status 2 "batch with a bad last line: exit status 2" ctl -b "$tmp/bad.conf"
has "batch with a bad last line: names FILE:LINE" "bad.conf:7: --burst is 0" "$OUT"
if [ "$(policies)" = "$before" ]; then
	ok "batch with a bad last line: nothing changed"
else
	not_ok "batch with a bad last line: nothing changed"
fi
cp "$tmp/good.conf" "$tmp/missing.conf"
echo "rule del 198.18.$N.0/26" >>"$tmp/missing.conf"
expect_status 1 "batch deleting a missing rule last: exit status 1" ctl -b "$tmp/missing.conf"
has "batch deleting a missing rule last: names FILE:LINE" \
	"missing.conf:7: there is no rule for 198.18.$N.0/26" "$OUT"
if [ "$(policies)" = "$before" ]; then
	ok "batch deleting a missing rule last: nothing changed"
else
	not_ok "batch deleting a missing rule last: nothing changed"
fi
expect_status 0 "a good batch applies" ctl -b "$tmp/good.conf"
has "the batch set the default policy" '"rate":"300/s"' "$(row default)"
has "the batch added the IPv4 rule" '"rate":"10/s"' "$(row "198.18.$N.64/26")"
has "the batch added a rule with a packet and a byte rate" '"bytes":{"rate":"10mbit"' \
	"$(row "2001:2:0:$N::/64")"
has "the rule's --prefix keys each IPv6 source alone" '"prefix6":128' "$(row "2001:2:0:$N::/64")"
has "the batch added the exempt rule" '"action":"exempt"' "$(row "198.18.$N.128/25")"
list=$(ctl rule list)
has "rule list shows both rates of a rule" "100/s+10mbit" "$list"
has "rule list ends with the default policy" "default" "$(tail -1 <<<"$list")"

# ---- which edits start fresh buckets ----
t0=$(tag_of default)
ctl set --rate 400/s
same "set --rate keeps the default policy's buckets (same tag)" "$t0" "$(tag_of default)"
ctl set --burst 50
same "set --burst keeps them too" "$t0" "$(tag_of default)"
ctl set --algo fixed-window
t1=$(tag_of default)
differ "set --algo starts fresh buckets (new tag)" "$t0" "$t1"
has "set --algo keeps the rate" '"rate":"400/s"' "$(row default)"
ctl set --prefix4 24
differ "set --prefix4 starts fresh buckets" "$t1" "$(tag_of default)"
ctl set --algo sliding-window --rate 100/s --window 10s
t3=$(tag_of default)
ctl set --rate 200/s
same "set --rate keeps a sliding window's buckets" "$t3" "$(tag_of default)"
has "set --rate keeps the window" '"window_ns":10000000000,"window_limit":2000' "$(row default)"
ctl set --algo token-bucket --prefix4 32 --rate 100/s
r0=$(tag_of "198.18.$N.64/26")
ctl rule add 198.18.$N.64/26 --rate 20/s --burst 40
same "replacing a rule's rate keeps its buckets" "$r0" "$(tag_of "198.18.$N.64/26")"
ctl rule add 198.18.$N.64/26 --rate 20/s --algo leaky-bucket
differ "replacing a rule's algorithm starts fresh buckets" "$r0" "$(tag_of "198.18.$N.64/26")"

# ---- dry-run ----
ctl rule add 198.18.$N.64/26 --rate 20/s --dry-run
has "rule --dry-run is shown" '"dry_run":true' "$(row "198.18.$N.64/26")"
ctl set --dry-run on
has "set --dry-run on reaches every policy" '"effective_dry_run":true' \
	"$(row "198.18.$N.128/25")"
ctl set --dry-run off
has "set --dry-run off" '"effective_dry_run":false' "$(row default)"

# ---- fleet-wide policies (--fleet): the contract of the flag ----
ctl rule add 198.18.$N.64/26 --rate 20/s --fleet
has "rule add --fleet is shown" '"fleet":true' "$(row "198.18.$N.64/26")"
has_line "rule list shows FLEET yes" "yes" \
	"$(ctl rule list | awk -v m="198.18.$N.64/26" '$1 == m { print $8 }')"
r0=$(tag_of "198.18.$N.64/26")
ctl rule add 198.18.$N.64/26 --rate 20/s --fleet off
has "rule add --fleet off" '"fleet":false' "$(row "198.18.$N.64/26")"
same "--fleet on or off keeps the rule's buckets" "$r0" "$(tag_of "198.18.$N.64/26")"
ctl set --fleet on
has "set --fleet on marks the default policy" '"fleet":true' "$(row default)"
has "stats: a fleet policy with no agent says so" '"state":"off"' "$(ctl -j stats)"
has "status: a fleet policy with no agent says the limit is this box's alone" \
	"no agent has run" "$(rx_sluice status "$IF_RX")"
ctl set --fleet off
has "set --fleet off" '"fleet":false' "$(row default)"
expect_usage "set --fleet with no value" "--fleet of set needs 'on' or 'off'" ctl set --fleet
expect_usage "set --fleet maybe" "--fleet of set" ctl set --fleet maybe
expect_usage "rule add --fleet twice" "--fleet is given twice" \
	ctl rule add 198.18.$N.0/26 --rate 10/s --fleet --fleet
expect_usage "a window algorithm refuses --fleet" \
	"sliding-window counts within one box and cannot be shared by a fleet" \
	ctl rule add 198.18.$N.0/26 --algo sliding-window --rate 10/s --fleet
ctl set --fleet on
expect_usage "a fleet default policy refuses a window algorithm" \
	"fixed-window counts within one box, and this policy is fleet-wide" \
	ctl set --algo fixed-window --rate 10/s
has "... naming the kept fleet flag and how to change it, not a --fleet not given" \
	"its fleet flag, set by an earlier --fleet on, is kept): give --fleet off with it (set --algo fixed-window --fleet off)" "$OUT"
has "the refused change changed nothing" '"algo":"token-bucket"' "$(row default)"
expect_status 0 "... and --fleet off with it is taken" \
	ctl set --algo fixed-window --rate 100/s --fleet off
expect_status 0 "(back to a token bucket and --fleet on)" \
	ctl set --algo token-bucket --rate 100/s --fleet on
ctl set --fleet off
expect_usage "--deny refuses --fleet" "--deny takes no --fleet" \
	ctl rule add 198.18.$N.0/26 --deny --fleet
expect_usage "sluice attach has no --fleet NAME (run's)" \
	"is an option of 'sluice run', not of 'sluice attach'" \
	rx_sluice attach "$IF_RX" --fleet edge

# ---- what packets did: show, top, stats, flush ----
if [ ! -x "$SLUICE_GEN" ]; then
	skip "sluice-gen is not built ($SLUICE_GEN): run 'make'" "show/top/flush after traffic"
	tap_done
	exit
fi
SRC_TB=198.18.$N.10 SRC_LOG=198.18.$N.20 SRC_SW=198.18.$N.30
ctl set --rate 1/h --burst 5
ctl rule add $SRC_LOG/32 --algo sliding-log --rate 3/m
ctl rule add $SRC_SW/32 --algo sliding-window --rate 3/h
for s in $SRC_TB $SRC_LOG $SRC_SW; do
	tx_gen -s "$s" -d "$ADDR4_RX" -n 8 >/dev/null ||
		{ not_ok "send 8 packets from $s with sluice-gen"; exit 1; }
done

out=$(ctl show $SRC_TB)
has "show, token bucket: the burst is spent" "0 of 5 packets left" "$out"
has_line "show, token bucket: its drops" "dropped   3" "$out"
out=$(ctl -j show $SRC_TB)
has "show -j: tokens left" '"packets_left":0,' "$out"
out=$(ctl show $SRC_LOG)
has "show, sliding log: the log is full" "3 of 3 slots hold a packet of the last 1m" "$out"
has_line "show, sliding log: its drops" "dropped   5" "$out"
out=$(ctl show $SRC_SW)
has "show, sliding window: the window count" "3 in this 1h window" "$out"
has_line "show, sliding window: its drops" "dropped   5" "$out"
# show takes the key as top prints it.
out=$(ctl show "$SRC_TB/32")
has "show KEY (as top prints it): the same bucket" "0 of 5 packets left" "$out"
expect_usage "show KEY of a length its policy does not key by" "keyed by /32" \
	ctl show "198.18.$N.0/25"
out=$(ctl show 198.18.$N.11)
has "show, a source never seen" "no bucket for 198.18.$N.11: it is full" "$out"
out=$(ctl show 198.18.$N.130)
has "show, an exempt source" "exempt" "$out"

out=$(ctl top -n 3)
has "top: the sliding-log source" "$SRC_LOG/32" "$out"
has "top: the sliding-window source" "$SRC_SW/32" "$out"
has "top: the token-bucket source" "$SRC_TB/32" "$out"
out=$(ctl -j top -n 1)
has "top -n 1 -j: one entry with the most drops" '"dropped":5,' "$out"
has "rule list: the rule's own drops" '"dropped":5,' "$(row "$SRC_LOG/32")"
has "rule list: the default policy's drops" '"dropped":3,' "$(row default)"
out=$(ctl -j stats)
has "stats -j: limited counts every drop" '"limited":13,' "$out"
out=$(ctl stats --prometheus)
has_line "stats --prometheus: per-policy drops" \
	"sluice_policy_dropped_total{interface=\"$IF_RX\",policy=\"$SRC_LOG/32\"} 5" "$out"
has_line "stats --prometheus: global counters" \
	"sluice_limited_total{interface=\"$IF_RX\"} 13" "$out"

out=$(ctl flush $SRC_TB)
has "flush ADDR: one bucket" "flushed 1 bucket and 0 sliding logs of $SRC_TB/32" "$out"
has "flush ADDR: the source is fresh again" "no bucket for $SRC_TB" "$(ctl show $SRC_TB)"
out=$(ctl -j flush 198.18.$N.0/24)
has "flush CIDR: the sliding log" '"logs":1' "$out"
has "flush CIDR: the sliding-window bucket" '"buckets":1' "$out"
has "flush CIDR: nothing left to top" "no source has lost a packet" "$(ctl top)"

# ---- stats --watch follows the live state ----
# A detach and a fresh attach replace every map: the watch follows the new
# ones (a watch of the old maps would go on printing their last counters),
# and a detach ends it with exit 1.
# Not through ctl(): $! must be sluicectl itself (nsenter execs it), not a
# subshell, for the SIGSTOP below to hold the watch.
nsenter --net="/var/run/netns/$NS_RX" "$SLUICECTL" -i "$IF_RX" stats --watch 1 \
	>"$NETNS_TMP/watch.out" 2>"$NETNS_TMP/watch.err" &
WATCH=$!
NETNS_PIDS+=($WATCH)
sleep 1.5
# The watch is held while the state is replaced, so that it sees the new one
# and not the moment between (which is a detach), however slow the machine.
kill -STOP $WATCH
rx_sluice detach "$IF_RX" >/dev/null && rx_sluice attach "$IF_RX" >/dev/null
kill -CONT $WATCH
for _ in $(seq 100); do
	grep -q "attached again with a new state" "$NETNS_TMP/watch.err" && break
	sleep 0.1
done
has "stats --watch: follows a fresh attach" "attached again with a new state" \
	"$(cat "$NETNS_TMP/watch.err")"
rx_sluice detach "$IF_RX" >/dev/null
for _ in $(seq 50); do kill -0 $WATCH 2>/dev/null || break; sleep 0.1; done
if kill -0 $WATCH 2>/dev/null; then
	not_ok "stats --watch: a detach ends the watch"
else
	wait $WATCH
	st=$?
	if [ $st = 1 ] && grep -q "was detached from $IF_RX" "$NETNS_TMP/watch.err"; then
		ok "stats --watch: a detach ends the watch (exit 1, says so)"
	else
		not_ok "stats --watch: a detach ends the watch (exit 1, says so)"
		diag "exit status $st: $(cat "$NETNS_TMP/watch.err")"
	fi
fi

tap_done

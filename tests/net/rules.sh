#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Rules on a running sluice, IPv4 and IPv6: an --exempt source floods and
# every packet passes, a --deny source loses every packet, and an IPv6
# source under the default policy is held like an IPv4 one.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "rules"
netns_need_sluice "rules"

RATE=1000 BURST=1000 SECS=2 PPS=10000
EX4=198.18.1.20 DENY4=198.18.1.30
EX6=2001:2:0:1::20 DENY6=2001:2:0:1::30

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add ex4 ip saddr "$EX4" && rx_counter_add deny4 ip saddr "$DENY4" &&
	rx_counter_add ex6 ip6 saddr "$EX6" && rx_counter_add deny6 ip6 saddr "$DENY6" ||
	{ not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate $RATE/s --burst $BURST" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" || exit 1
expect_status 0 "rule add $EX4/32 --exempt" rx_ctl -i "$IF_RX" rule add "$EX4/32" --exempt
expect_status 0 "rule add $DENY4/32 --deny" rx_ctl -i "$IF_RX" rule add "$DENY4/32" --deny
expect_status 0 "rule add $EX6/128 --exempt" rx_ctl -i "$IF_RX" rule add "$EX6/128" --exempt
expect_status 0 "rule add $DENY6/128 --deny" rx_ctl -i "$IF_RX" rule add "$DENY6/128" --deny

# One flood at a time, so that each knows what it lost before XDP, if the
# receiver was starved (a busy machine); sluice must account for the rest.
flood() {
	local name=$1 before
	before=$(tx_lost)
	gen_bg "$name" -s "$2" -d "$3" -r $PPS -t 1
	gen_wait "$name" || return 1
	sleep 0.2
	printf -v "${name}_lost" %s $(($(tx_lost) - before))
}
d0=$(sluice_stat denied) e0=$(sluice_stat exempt)
for f in "ex4 $EX4 $ADDR4_RX" "deny4 $DENY4 $ADDR4_RX" "ex6 $EX6 $ADDR6_RX" \
	"deny6 $DENY6 $ADDR6_RX"; do
	# shellcheck disable=SC2086 # three words on purpose
	flood $f || { not_ok "send with sluice-gen"; exit 1; }
done

for g in ex4 ex6; do
	got=$(rx_counter $g) sent=${g}_packets lost=${g}_lost
	if all_passed "$got" "${!sent}" "${!lost}"; then
		ok "an --exempt source ($g) floods at 10x the limit and every packet passes ($got)"
	else
		not_ok "an --exempt source ($g) floods at 10x the limit and every packet passes"
		diag "the receiver got $got of the ${!sent} packets sent (${!lost} lost before XDP)"
	fi
done
for g in deny4 deny6; do
	got=$(rx_counter $g) sent=${g}_packets
	if [ "$got" = 0 ] && [ "${!sent}" -gt 0 ]; then
		ok "a --deny source ($g) loses every packet (0 of ${!sent} pass)"
	else
		not_ok "a --deny source ($g) loses every packet"
		diag "the receiver got $got of the ${!sent} packets sent"
	fi
done
denied=$(($(sluice_stat denied) - d0)) exempt=$(($(sluice_stat exempt) - e0))
deny_sent=$((deny4_packets + deny6_packets)) deny_lost=$((deny4_lost + deny6_lost))
ex_sent=$((ex4_packets + ex6_packets)) ex_lost=$((ex4_lost + ex6_lost))
if [ "$denied" -le "$deny_sent" ] && [ $((denied + deny_lost)) -ge "$deny_sent" ] &&
	[ "$exempt" -le "$ex_sent" ] && [ $((exempt + ex_lost)) -ge "$ex_sent" ]; then
	ok "stats.denied and stats.exempt count those packets exactly"
else
	not_ok "stats.denied and stats.exempt count those packets exactly"
	diag "denied $denied (sent $deny_sent, $deny_lost lost before XDP)," \
		"exempt $exempt (sent $ex_sent, $ex_lost lost before XDP)"
fi

# An IPv6 source under the default policy, keyed by its /64: a fresh /64 each try.
measure() {
	local held=2001:2:0:$((4 + $1))::10
	rx_counter_add "held6_$1" ip6 saddr "$held" || return 1
	gen_bg held6 -s "$held" -d "$ADDR6_RX" -r $PPS -t $SECS
	gen_wait held6 || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "held6_$1") HELD_SECS=$held6_seconds HELD_LAG=$held6_lag
}
held_check "an IPv6 source is held to burst + rate x time within 2%" $BURST $RATE measure

expect_status 0 "rule del $DENY4/32" rx_ctl -i "$IF_RX" rule del "$DENY4/32"
# Now under the default policy: 50 packets, well inside its burst, all pass.
rx_counter_reset deny4
lost=$(tx_lost)
gen_bg deny4 -s "$DENY4" -d "$ADDR4_RX" -n 50 -r 1000
gen_wait deny4 || { not_ok "send with sluice-gen"; exit 1; }
sleep 0.2
got=$(rx_counter deny4) deny4_lost=$(($(tx_lost) - lost))
if all_passed "$got" "$deny4_packets" "$deny4_lost"; then
	ok "once its rule is deleted, the denied source passes again ($got of $deny4_packets)"
else
	not_ok "once its rule is deleted, the denied source passes again"
	diag "the receiver got $got of $deny4_packets ($deny4_lost lost before XDP)"
fi
tap_done

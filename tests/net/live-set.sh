#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluicectl set --rate` takes effect on a running sluice: the admitted rate of
# a held source changes, with no reload of the program, and its bucket is kept
# (no fresh burst at the change).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "live set"
netns_need_sluice "live set"

RATE1=1000 RATE2=4000 BURST=1000
FLOOD=198.18.1.10

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add flood ip saddr "$FLOOD" || { not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate $RATE1/s --burst $BURST" \
	rx_sluice attach "$IF_RX" --rate "$RATE1/s" --burst "$BURST" || exit 1

# snap NAME: the flood's admitted count and the time, as NAME_c and NAME_t.
snap() {
	printf -v "${1}_t" %s "$(date +%s.%N)"
	printf -v "${1}_c" %s "$(rx_counter flood)"
}

# The flood runs until the last snapshot is taken, however slow the machine
# (a flood of fixed length could end before it, and the window would measure
# a pause): it is stopped then.
gen_bg flood -s "$FLOOD" -d "$ADDR4_RX" -r $((RATE2 * 5)) -t 120s
sleep 1.5
id_before=$(xdp_prog_id)
snap set
expect_status 0 "sluicectl set --rate $RATE2/s --burst $BURST while a source floods" \
	rx_ctl -i "$IF_RX" set --rate "$RATE2/s" --burst "$BURST"
sleep 1
snap a
sleep 2
snap b
gen_stop flood
gen_wait flood || { not_ok "send with sluice-gen"; exit 1; }

# After the change, the held source earns RATE2 per second: measured over
# 2 s, from 1 s after the change (time enough for the bucket's backlog).
steady=$(awk -v c="$((b_c - a_c))" -v t0="$a_t" -v t1="$b_t" \
	'BEGIN { printf "%.0f", c / (t1 - t0) }')
diag "admitted rate after the change: $steady/s (was $RATE1/s, set to $RATE2/s)"
if within 2 "$steady" "$RATE2"; then
	ok "the new rate holds the source within 2% ($steady/s for $RATE2/s)"
else
	not_ok "the new rate holds the source within 2% ($steady/s for $RATE2/s)"
fi

# Kept bucket: in the first second after the change the source gets at most
# what RATE2 earns in that time. A reset bucket would hand it a fresh burst
# of $BURST on top.
first=$((a_c - set_c))
limit=$(awk -v r=$RATE2 -v t0="$set_t" -v t1="$a_t" \
	'BEGIN { printf "%d", r * (t1 - t0) * 1.02 + 20 }')
if [ "$first" -le "$limit" ]; then
	ok "the source's bucket is kept: no fresh burst at the change ($first <= $limit)"
else
	not_ok "the source's bucket is kept: no fresh burst at the change"
	diag "$first packets passed in the second after the change, at most $limit without a reset"
fi

id_after=$(xdp_prog_id)
if [ -n "$id_before" ] && [ "$id_before" = "$id_after" ]; then
	ok "the change needs no reload (program $id_before still attached)"
else
	not_ok "the change needs no reload"
	diag "XDP program id before: '$id_before', after: '$id_after'"
fi
tap_done

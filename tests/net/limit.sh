#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A source sending far above its limit is held to burst + rate x time (within
# 2 %), while a quiet source next to it loses nothing; bpftool reads the
# counters by name. Real traffic over a veth pair, counted after XDP by nft.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "limit"
netns_need_sluice "limit"

# A burst of one second's worth: a sender held off the CPU for less than that
# (other work on a small machine) forfeits nothing, its bucket just refills,
# so the count stays exact whatever the scheduler does.
RATE=1000 BURST=1000 SECS=3

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }

# Each key table (--table) in turn, a fresh state each: the same traffic, the
# same bounds. TABLES="lru" runs one.
one_table() {
	local T=$1 OFF=$2
	expect_status 0 "$T: sluice attach --table $T --rate $RATE/s --burst $BURST" \
		rx_sluice attach "$IF_RX" --table "$T" --rate "$RATE/s" --burst "$BURST" || return 1
	if rx_sluice status -j "$IF_RX" | grep -q "\"key_table\":{\"table\":\"$T\""; then
		ok "$T: sluice status -j says the key table is $T"
	else
		not_ok "$T: sluice status -j says the key table is $T"
		diag "$(rx_sluice status -j "$IF_RX" 2>&1)"
	fi

	# 20x the limit from one source; 1/5 of it from another, at the same time.
	# Each try uses fresh sources, so fresh buckets.
	flood_sent=0 flood_passed=0
	measure() {
		local try=$1 flood=198.18.1.$((10 * $1 + OFF)) quiet=198.18.1.$((10 * $1 + OFF + 1))
		rx_counter_add "flood$T$try" ip saddr "$flood" &&
			rx_counter_add "quiet$T$try" ip saddr "$quiet" || return 1
		gen_bg flood -s "$flood" -d "$ADDR4_RX" -r $((RATE * 20)) -t "$SECS"
		gen_bg quiet -s "$quiet" -d "$ADDR4_RX" -r $((RATE / 5)) -t "$SECS"
		gen_wait flood && gen_wait quiet || return 1
		sleep 0.2 # the last frames may still be in the receiver's queue
		HELD_ADMITTED=$(rx_counter "flood$T$try") HELD_SECS=$flood_seconds HELD_LAG=$flood_lag
		flood_sent=$((flood_sent + flood_packets)) flood_passed=$((flood_passed + HELD_ADMITTED))
		QUIET_RX=$(rx_counter "quiet$T$try") QUIET_ADDR=$quiet
	}
	held_check "$T: a flooding source is held to burst + rate x time within 2%" $BURST $RATE measure

	# The quiet source: sluice dropped none of it, and the receiver got all of
	# it, but for what the receiver's queues had no room for (a starved
	# receiver on a busy machine, counted by veth before XDP).
	lost=$(tx_lost)
	quiet_dropped=$(rx_ctl -i "$IF_RX" -j show "$QUIET_ADDR" | grep -o '"dropped":[0-9]*' | tail -1)
	name="$T: a quiet source next to the flood loses nothing ($QUIET_RX of $quiet_packets)"
	if [ "$quiet_dropped" = '"dropped":0' ] && [ "$quiet_packets" -gt 0 ] &&
		[ "$QUIET_RX" -le "$quiet_packets" ] && [ $((QUIET_RX + lost)) -ge "$quiet_packets" ]; then
		ok "$name"
	else
		not_ok "$name"
		diag "sluice's bucket for $QUIET_ADDR: ${quiet_dropped:-none};" \
			"frames lost before XDP in all: $lost"
	fi
	[ "$lost" = 0 ] || diag "$lost frames found the receiver's queues full (lost before XDP)"

	# sluice's own counters agree with what the receiver saw: every packet of
	# the floods that did not pass was dropped as limited (all of them, unless
	# some never reached XDP), and nothing else was.
	limited=$(sluice_stat limited)
	if [ "$limited" -le $((flood_sent - flood_passed)) ] &&
		[ $((limited + lost)) -ge $((flood_sent - flood_passed)) ]; then
		ok "$T: stats.limited counts exactly the flood's dropped packets ($limited)"
	else
		not_ok "$T: stats.limited counts exactly the flood's dropped packets"
		diag "limited $limited, floods sent $flood_sent, of which $flood_passed passed;" \
			"$lost lost before XDP"
	fi

	dump=$(bpftool map dump pinned "$RX_PINS/sluice_stats" 2>&1)
	missing=
	for f in rx passed dropped limited exempt denied new_keys; do
		grep -q "\"$f\": *[0-9]" <<<"$dump" || missing="$missing $f"
	done
	if [ -z "$missing" ]; then
		ok "$T: bpftool map dump of sluice_stats names its fields"
	else
		not_ok "$T: bpftool map dump of sluice_stats names its fields"
		diag "not found:$missing"
		diag "$dump"
	fi
}
OFF=0
for T in ${TABLES:-lru sets}; do
	one_table "$T" "$OFF" || not_ok "$T: the run of this table stopped early"
	# The next table's state starts empty: nothing of this one carries over.
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
	OFF=$((OFF + 100))
done
tap_done

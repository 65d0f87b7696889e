#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A flood from many random IPv6 sources, far more than the key table holds,
# with --new-keys set: past the new-key rate the newcomers share their /48's
# bucket instead of churning the table, so a source already held at its
# limit stays held (its bucket is never evicted and re-created full), and
# top lists the /48 they share. Once per key table (--table lru, sets).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "new keys"
netns_need_sluice "new keys"

RATE=1000 BURST=1000 SECS=3 KEYS=60000 MAXKEYS=8192

FLOODNET=2001:2:0:8000::/49

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
# Each key table (--table) in turn, a fresh state each: the same flood, the
# same bounds. TABLES="lru" runs one.
one_table() {
	local T=$1
	expect_status 0 "$T: sluice attach --table $T --rate $RATE/s --burst $BURST --new-keys 500/s --max-keys $MAXKEYS" \
		rx_sluice attach "$IF_RX" --table "$T" --rate "$RATE/s" --burst "$BURST" --new-keys 500/s \
		--max-keys "$MAXKEYS" || return 1

	# A source held at its limit (a fresh /64 each try) while the flood runs.
	measure() {
		local held=2001:2:0:$((OFF + $1))::10
		rx_counter_add "held$T$1" ip6 saddr "$held" || return 1
		gen_bg held -s "$held" -d "$ADDR6_RX" -r $((RATE * 20)) -t "$SECS"
		gen_bg flood -s "$FLOODNET" --keys "$KEYS" -d "$ADDR6_RX" -r 200000 -t "$SECS"
		gen_wait held && gen_wait flood || return 1
		sleep 0.2
		HELD_ADMITTED=$(rx_counter "held$T$1") HELD_SECS=$held_seconds HELD_LAG=$held_lag
		diag "under a flood of $flood_packets packets from $KEYS sources:"
	}
	held_check "$T: a held source stays held within 2% while $KEYS new sources flood" \
		$BURST $RATE measure

	aggregated=$(sluice_stat aggregated) new_keys=$(sluice_stat new_keys)
	diag "new keys admitted: $new_keys, packets of new sources charged to their /48: $aggregated"
	if [ "$aggregated" -gt 0 ] && [ "$new_keys" -lt "$MAXKEYS" ]; then
		ok "$T: the flood's newcomers past --new-keys share the aggregate bucket"
	else
		not_ok "$T: the flood's newcomers past --new-keys share the aggregate bucket"
	fi
	# ... as sluicectl shows it: the newcomers with no key of their own are
	# charged to their /48 (the sources new_keys admitted have their own).
	agg=$(rx_ctl -i "$IF_RX" -j top -n 100 | grep -o '"key":"2001:2::/48 (aggregate)"[^}]*')
	if grep -q '"aggregate":true' <<<"$agg"; then
		ok "$T: top lists the flood's /48 aggregate key"
	else
		not_ok "$T: top lists the flood's /48 aggregate key"
		diag "$(rx_ctl -i "$IF_RX" top -n 5)"
	fi
}
OFF=0
for T in ${TABLES:-lru sets}; do
	one_table "$T" || not_ok "$T: the run of this table stopped early"
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
	OFF=$((OFF + 10))
done
tap_done

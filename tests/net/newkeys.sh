#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A flood from many random IPv6 sources, far more than the key table holds,
# with --new-keys set: past the new-key rate the newcomers share their /48's
# bucket instead of churning the table, so a source already held at its
# limit stays held (its bucket is never evicted and re-created full).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "new keys"
netns_need_sluice "new keys"

RATE=1000 BURST=1000 SECS=3 KEYS=60000 MAXKEYS=8192

FLOODNET=2001:2:0:8000::/49

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach --rate $RATE/s --burst $BURST --new-keys 500/s --max-keys $MAXKEYS" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" --new-keys 500/s \
	--max-keys "$MAXKEYS" || exit 1

# A source held at its limit (a fresh /64 each try) while the flood runs.
measure() {
	local held=2001:2:0:$1::10
	rx_counter_add "held$1" ip6 saddr "$held" || return 1
	gen_bg held -s "$held" -d "$ADDR6_RX" -r $((RATE * 20)) -t "$SECS"
	gen_bg flood -s "$FLOODNET" --keys "$KEYS" -d "$ADDR6_RX" -r 200000 -t "$SECS"
	gen_wait held && gen_wait flood || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "held$1") HELD_SECS=$held_seconds HELD_LAG=$held_lag
	diag "under a flood of $flood_packets packets from $KEYS sources:"
}
held_check "a held source stays held within 2% while $KEYS new sources flood" \
	$BURST $RATE measure

aggregated=$(sluice_stat aggregated) new_keys=$(sluice_stat new_keys)
diag "new keys admitted: $new_keys, packets of new sources charged to their /48: $aggregated"
if [ "$aggregated" -gt 0 ] && [ "$new_keys" -lt "$MAXKEYS" ]; then
	ok "the flood's newcomers past --new-keys share the aggregate bucket"
else
	not_ok "the flood's newcomers past --new-keys share the aggregate bucket"
fi
tap_done

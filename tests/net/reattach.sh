#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice attach` on an attached interface (an upgrade, under traffic) keeps
# every bucket: a held source stays held, it gets no fresh burst, and no
# packet slips through unlimited while the program is replaced.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "re-attach"
netns_need_sluice "re-attach"

RATE=1000 BURST=1000 SECS=4

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach --rate $RATE/s --burst $BURST" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" || exit 1

# Each try floods from a fresh source and re-attaches in the middle of it.
measure() {
	local try=$1 flood=198.18.1.$((10 * $1))
	rx_counter_add "flood$try" ip saddr "$flood" || return 1
	gen_bg flood -s "$flood" -d "$ADDR4_RX" -r $((RATE * 20)) -t "$SECS"
	sleep 1.5
	expect_status 0 "sluice attach again while the source floods (try $try)" \
		rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST"
	gen_wait flood || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "flood$try") HELD_SECS=$flood_seconds HELD_LAG=$flood_lag
	diag "across the re-attach (a reset bucket would add $BURST):"
}
held_check "the held source stays held across the re-attach (within 2%)" $BURST $RATE measure
if [ -n "$(xdp_prog_id)" ] && [ -d "$RX_PINS" ]; then
	ok "sluice is still attached and pinned after the re-attach"
else
	not_ok "sluice is still attached and pinned after the re-attach"
fi
tap_done

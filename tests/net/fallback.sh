#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice limits whichever way libxdp attaches it: through its multi-program
# dispatcher where the kernel allows it, or as the single program on the
# interface (LIBXDP_SKIP_DISPATCHER=1 forces that fallback).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "libxdp fallback"
netns_need_sluice "libxdp fallback"

RATE=1000 BURST=1000 SECS=2

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }

SOURCE=0
measure() {
	local flood=198.18.1.$((10 + SOURCE))
	SOURCE=$((SOURCE + 1))
	rx_counter_add "flood$SOURCE" ip saddr "$flood" || return 1
	gen_bg flood -s "$flood" -d "$ADDR4_RX" -r $((RATE * 10)) -t "$SECS"
	gen_wait flood || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "flood$SOURCE") HELD_SECS=$flood_seconds HELD_LAG=$flood_lag
}

# held HOW ENV...: attach with the environment given, check a flood is held, detach.
held() {
	local how=$1
	shift
	expect_status 0 "sluice attach $how" \
		rx_exec env "$@" "$SLUICE" attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" ||
		return 1
	diag "attached $how as: $(ip -n "$NS_RX" link show dev "$IF_RX" | grep -o 'prog/xdp.*')"
	held_check "attached $how, a flood is held to burst + rate x time within 2%" \
		$BURST $RATE measure
	expect_status 0 "sluice detach after attaching $how" rx_sluice detach "$IF_RX"
}

held "with LIBXDP_SKIP_DISPATCHER=1" LIBXDP_SKIP_DISPATCHER=1
held "with libxdp's default" -u LIBXDP_SKIP_DISPATCHER
tap_done

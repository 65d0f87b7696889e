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
FLOOD=198.18.1.10

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add flood ip saddr "$FLOOD" || { not_ok "count at the receiver with nft"; exit 1; }

# held HOW: attach (with the environment given), flood, check, detach.
held() {
	local how=$1 name
	shift
	expect_status 0 "sluice attach $how" \
		rx_exec env "$@" "$SLUICE" attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" ||
		return 1
	diag "attached $how as: $(ip -n "$NS_RX" link show dev "$IF_RX" | grep -o 'prog/xdp.*')"
	rx_counter_reset flood
	gen_bg flood -s "$FLOOD" -d "$ADDR4_RX" -r $((RATE * 10)) -t "$SECS"
	gen_wait flood || { not_ok "send with sluice-gen"; return 1; }
	sleep 0.2
	name="attached $how, a flood is held to burst + rate x time within 2%"
	held_verdict "$(rx_counter flood)" $BURST $RATE "$flood_seconds" "$flood_lag"
	case $? in
	0) ok "$name" ;;
	1) not_ok "$name" ;;
	*) skip "the sender fell behind its schedule (machine busy); no excess seen" "$name" ;;
	esac
	expect_status 0 "sluice detach after attaching $how" rx_sluice detach "$IF_RX"
}

held "with LIBXDP_SKIP_DISPATCHER=1" LIBXDP_SKIP_DISPATCHER=1
held "with libxdp's default" -u LIBXDP_SKIP_DISPATCHER
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice next to another XDP program on one interface. Where the kernel lets
# libxdp run its multi-program dispatcher (Debian 12's 6.1; not 6.18, which
# refuses freplace programs here), xdp-filter (xdp-tools) loads beside
# sluice: both act on every packet, and a `sluice detach` removes sluice only.
# Where it does not, the other program is refused and sluice stays attached
# and limiting.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "next to another XDP program" xdp-filter xdp-loader
netns_need_sluice "next to another XDP program"

N=68 RATE=10 BURST=100
LIMITED=198.18.$N.20 FILTERED=198.18.$N.30
netns_setup mp $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
netns_extra_cleanup() { rx_exec xdp-filter unload "$IF_RX" >/dev/null 2>&1; }
rx_counter_add limited ip saddr "$LIMITED" || { not_ok "count at the receiver with nft"; exit 1; }
rx_counter_add filtered ip saddr "$FILTERED" || { not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate $RATE/s --burst $BURST" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" || exit 1

progs() { rx_exec xdp-loader status "$IF_RX" 2>/dev/null; }
# held: sluice holds a burst from LIMITED to BURST + RATE x its seconds.
held() {
	local got max
	rx_counter_reset limited
	gen_bg burst -s "$LIMITED" -d "$ADDR4_RX" -n 1000 -r 20000
	gen_wait burst || return 1
	sleep 0.2
	got=$(rx_counter limited)
	max=$(awk -v b=$BURST -v r=$RATE -v t="$burst_seconds" 'BEGIN { printf "%d", b + r * t + 1 }')
	diag "$got of 1000 passed (at most $max)"
	[ "$got" -ge "$BURST" ] && [ "$got" -le "$max" ]
}

if ! rx_exec xdp-filter load "$IF_RX" -m native >"$NETNS_TMP/filter.out" 2>&1; then
	diag "$(head -3 "$NETNS_TMP/filter.out")"
	if progs | grep -q sluice_xdp; then ok "xdp-filter refused: sluice is still attached"
	else not_ok "xdp-filter refused: sluice is still attached"; fi
	if held; then ok "and still limits"; else not_ok "and still limits"; fi
	skip "this kernel refuses libxdp's dispatcher: no second program beside sluice" \
		"sluice and xdp-filter on one interface"
	tap_done
	exit 0
fi
if progs | grep -q sluice_xdp && progs | grep -q xdpfilt; then
	ok "sluice and xdp-filter both run on $IF_RX, in libxdp's dispatcher"
else
	not_ok "sluice and xdp-filter both run on $IF_RX, in libxdp's dispatcher"; diag "$(progs)"
fi
if held; then ok "sluice still limits beside xdp-filter"
else not_ok "sluice still limits beside xdp-filter"; fi
rx_exec xdp-filter ip "$FILTERED" -m src >/dev/null 2>&1 || not_ok "xdp-filter ip $FILTERED"
tx_gen -s "$FILTERED" -d "$ADDR4_RX" -n 50 >/dev/null
sleep 0.2
if [ "$(rx_counter filtered)" = 0 ]; then ok "xdp-filter drops what it is told to, beside sluice"
else not_ok "xdp-filter drops what it is told to, beside sluice"; diag "$(rx_counter filtered) passed"; fi
expect_status 0 "sluice detach" rx_sluice detach "$IF_RX"
if ! progs | grep -q sluice_xdp && progs | grep -q xdpfilt; then
	ok "the detach removed sluice only: xdp-filter still runs"
else
	not_ok "the detach removed sluice only: xdp-filter still runs"; diag "$(progs)"
fi
expect_status 0 "sluice attach again beside xdp-filter" rx_sluice attach "$IF_RX" \
	--rate "$RATE/s" --burst "$BURST"
if progs | grep -q sluice_xdp && progs | grep -q xdpfilt; then ok "both run again"
else not_ok "both run again"; diag "$(progs)"; fi
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice detach` removes the program from the interface and its pins from
# bpffs, and traffic then passes unlimited.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "detach"
netns_need_sluice "detach"

FLOOD=198.18.1.10

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add flood ip saddr "$FLOOD" || { not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate 100/s --burst 10" \
	rx_sluice attach "$IF_RX" --rate 100/s --burst 10 || exit 1
pins="$RX_PINS"
if [ -n "$(xdp_prog_id)" ] && [ -e "$pins/sluice_stats" ]; then
	ok "attached: ip link shows an XDP program and $pins holds the maps"
else
	not_ok "attached: ip link shows an XDP program and $pins holds the maps"
	diag "$(ip -n "$NS_RX" link show dev "$IF_RX")"
	diag "$(ls -la "$pins" 2>&1)"
fi

expect_status 0 "sluice detach" rx_sluice detach "$IF_RX"
link=$(ip -n "$NS_RX" -d link show dev "$IF_RX")
if grep -q "xdp" <<<"$link"; then
	not_ok "ip link show shows no XDP program after detach"
	diag "$link"
else
	ok "ip link show shows no XDP program after detach"
fi
if [ -e "$pins" ]; then
	not_ok "the pins are gone after detach"
	diag "$(ls -la "$pins" 2>&1)"
else
	ok "the pins are gone after detach ($pins)"
fi

# Nothing limits any more: 10x what the limit was, and all of it arrives.
# (All of it but for what a starved receiver had no room for, before XDP.)
lost0=$(tx_lost)
gen_bg flood -s "$FLOOD" -d "$ADDR4_RX" -r 1000 -t 1
gen_wait flood || { not_ok "send with sluice-gen"; exit 1; }
sleep 0.2
got=$(rx_counter flood) lost=$(($(tx_lost) - lost0))
if all_passed "$got" "$flood_packets" "$lost"; then
	ok "after detach every packet passes ($got of $flood_packets)"
else
	not_ok "after detach every packet passes"
	diag "the receiver got $got of the $flood_packets packets sent ($lost lost before XDP)"
fi
tap_done

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
FLOOD=198.18.1.10

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add flood ip saddr "$FLOOD" || { not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate $RATE/s --burst $BURST" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" || exit 1

gen_bg flood -s "$FLOOD" -d "$ADDR4_RX" -r $((RATE * 20)) -t "$SECS"
sleep 1.5
expect_status 0 "sluice attach again while the source floods" \
	rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST"
gen_wait flood || { not_ok "send with sluice-gen"; exit 1; }
sleep 0.2

diag "across the re-attach (a reset bucket would add $BURST):"
held_verdict "$(rx_counter flood)" $BURST $RATE "$flood_seconds" "$flood_lag"
case $? in
0) ok "the held source stays held across the re-attach (within 2%)" ;;
1) not_ok "the held source stays held across the re-attach (within 2%)" ;;
*) skip "the sender fell behind its schedule (machine busy); no excess seen" \
	"the held source stays held across the re-attach (within 2%)" ;;
esac
if [ -n "$(xdp_prog_id)" ] && [ -d "/sys/fs/bpf/sluice/$IF_RX" ]; then
	ok "sluice is still attached and pinned after the re-attach"
else
	not_ok "sluice is still attached and pinned after the re-attach"
fi
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Config files and reloads, with real traffic counted at the receiver:
#  - a reload whose rules did not change leaves them in force (a deny rule
#    still denies, a rate rule still holds a fresh source to its burst): the
#    same file again, a file whose `set` line alone changed, `sluice attach
#    --config` on the attached limiter, and `sluicectl -b` of a `set`.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "reload"
netns_need_sluice "reload"

N=58
DENY=198.18.$N.3
netns_setup rl $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
T=$NETNS_TMP
ctl() { rx_ctl -i "$IF_RX" "$@"; }
rx_counter_add deny ip saddr "$DENY" || { not_ok "count at the receiver with nft"; exit 1; }

# conf RATE: the default at RATE, a deny rule, a rate rule keyed per /32.
conf() {
	printf 'set --rate %s --burst 200\nrule add %s/32 --deny\n' "$1" "$DENY"
	printf 'rule add 198.18.%s.64/26 --rate 10/s --burst 10 --prefix 32\n' $N
}
conf 100/s >"$T/f.conf"
expect_status 0 "sluice attach --config (a deny rule, a rate rule of burst 10)" \
	rx_sluice attach "$IF_RX" --config "$T/f.conf" || exit 1

# in_force WHAT: the deny source passes nothing, and a fresh source of the
# rate rule passes its burst (10 of 30), not the default's (200).
SRC=64
in_force() {
	local d r
	SRC=$((SRC + 1))
	rx_counter_add "r$SRC" ip saddr "198.18.$N.$SRC" && rx_counter_reset deny || return 1
	tx_gen -s "$DENY" -d "$ADDR4_RX" -n 30 -r 1000 >/dev/null &&
		tx_gen -s "198.18.$N.$SRC" -d "$ADDR4_RX" -n 30 -r 1000 >/dev/null || return 1
	sleep 0.1
	d=$(rx_counter deny) r=$(rx_counter "r$SRC")
	if [ "$d" = 0 ] && [ "$r" -ge 10 ] && [ "$r" -le 12 ]; then
		ok "$1: the rules are in force (deny 0 of 30, rate 10/s burst 10: $r of 30)"
	else
		not_ok "$1: the rules are in force"
		diag "the deny source passed $d of 30, a fresh source of the rate rule $r of 30" \
			"(want 0, and 10 to 12)"
	fi
}
in_force "after attach --config"
expect_status 0 "reload the same file" rx_sluice reload "$IF_RX" --config "$T/f.conf"
in_force "after a reload of the same file"
conf 150/s >"$T/g.conf"
expect_status 0 "reload a file whose set line alone changed" \
	rx_sluice reload "$IF_RX" --config "$T/g.conf"
in_force "after a reload that changed the set line"
expect_status 0 "sluice attach --config on the attached limiter" \
	rx_sluice attach "$IF_RX" --config "$T/f.conf"
in_force "after attach --config on the attached limiter"
echo "set --rate 120/s" >"$T/set.conf"
expect_status 0 "sluicectl -b with a set line" ctl -b "$T/set.conf"
in_force "after sluicectl -b of a set"
tap_done

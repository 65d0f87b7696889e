#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Two keys at once (--also-prefix4/6, --also-rate, --also-burst) end to end,
# on both key tables, with real traffic counted at the receiver by nft:
#  - 200 sources of one /24, each far under its own limit, are held as a
#    whole to the /24's burst and rate; a source of another /24 passes its
#    own burst; stats counts also_limited;
#  - show ADDR names both keys (its own /32 and the /24), top marks the
#    second key "(also)", rule list has the ALSO column, the policy JSON an
#    "also" object; flush ADDR lets the /24 start full again;
#  - a rule with a second key holds its own /24;
#  - --also-rate off removes it; a new --also-prefix4 is a new tag, a new
#    --also-rate keeps the buckets;
#  - a config file with --also lines: attach --config, the same file again
#    changes nothing, another --also-rate changes the default alone;
#  - what is refused, with exit status 2 and nothing changed.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "also" jq nft
netns_need_sluice "also"

N=93
NET=198.18.$N
OTHER=198.18.$((N + 1))
netns_setup al $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }
rx_counter_add net ip saddr "$NET.0/24" &&
	rx_counter_add other ip saddr "$OTHER.0/24" ||
	{ not_ok "count at the receiver with nft"; exit 1; }
# Routes for the sources the generator makes up (replies are never needed).
stat_of() { ctl -j stats | jq -r ".$1"; }
policy_json() { ctl -j rule list | jq -c ".[] | select(.match == \"$1\")"; }

for table in lru sets; do
	T="[$table]"
	expect_status 0 "$T attach --table $table" rx_sluice attach "$IF_RX" --table "$table" \
		--fresh || continue
	expect_status 0 "$T set --rate 1000/s --burst 1000 --also-rate 20/s --also-burst 100" \
		ctl set --rate 1000/s --burst 1000 --also-rate 20/s --also-burst 100
	row=$(policy_json default)
	check "$T rule list -j: also {prefix4 24, prefix6 48, 20/s burst 100} ($row)" \
		test "$(jq -r '.also | "\(.prefix4) \(.prefix6) \(.packets.rate) \(.packets.burst)"' \
			<<<"$row")" = "24 48 20/s 100"
	ctl rule list | grep -q '/24 /48 20/s burst 100' && ok "$T rule list's ALSO column" ||
		{ not_ok "$T rule list's ALSO column"; diag "$(ctl rule list)"; }
	rx_counter_reset net
	rx_counter_reset other
	src=$NET.250
	tx_gen -s "$src" -d "$ADDR4_RX" -n 1 >/dev/null # its own key: 1 of its 1000
	# 2000 packets from 200 sources of the /24 (about 10 each: every one
	# under its own burst of 1000), then 50 from one source of another.
	gen_bg flood -s "$NET.0/24" --keys 200 -d "$ADDR4_RX" -n 2000 -r 20000
	gen_wait flood || { not_ok "$T the flood ran"; continue; }
	tx_gen -s "$OTHER.7" -d "$ADDR4_RX" -n 50 >/dev/null
	got=$(($(rx_counter net) - 1))
	bound=$(awk -v s="$flood_seconds" 'BEGIN { printf "%d", 99 + 20 * (s + 0.5) + 1 }')
	diag "$T the /24 passed $got of 2000 in $flood_seconds s (bound 100 + 20/s: $bound)"
	check "$T the /24 of 200 sources is held as a whole: $got passed, at least 99, at most $bound" \
		test "$got" -ge 99 -a "$got" -le "$bound"
	check "$T another /24 passes its source's whole 50" test "$(rx_counter other)" = 50
	al=$(stat_of also_limited)
	check "$T stats: also_limited counts the /24's refusals ($al)" \
		test "$al" -ge $((2000 - bound)) -a "$al" -le $((2000 - 99))

	# show: the source's own key and the /24's.
	out=$(ctl -j show "$src")
	check "$T show $src -j: its own key and the second key $NET.0/24 ($(jq -c '[.bucket.key, .also.key, .also.found]' <<<"$out"))" \
		test "$(jq -r '"\(.bucket.key) \(.also.key) \(.also.found)"' <<<"$out")" = "$src/32 $NET.0/24 true"
	ctl show "$src" | grep -q "^also .*$NET.0/24" && ok "$T show's text has the also line" ||
		{ not_ok "$T show's text has the also line"; diag "$(ctl show "$src")"; }
	out=$(ctl -j show "$NET.0/24")
	check "$T show $NET.0/24 (the second key's length) shows that key alone" \
		test "$(jq -r '"\(.also.key) \(.bucket // "none")"' <<<"$out")" = "$NET.0/24 none"
	check "$T top marks the second key (also)" \
		test "$(ctl -j top | jq -r '[.top[] | select(.also) | .key][0]')" = "$NET.0/24 (also)"
	# flush ADDR: the keys that hold it, the /24's among them.
	ctl flush "$src" >/dev/null
	check "$T flush $src: the /24's bucket is gone (full again)" \
		test "$(ctl -j show "$src" | jq -r .also.found)" = false
	rx_counter_reset net
	tx_gen -s "$NET.0/24" --keys 50 -d "$ADDR4_RX" -n 100 -r 20000 >/dev/null
	got=$(rx_counter net)
	check "$T after the flush the /24 passes its burst again ($got of 100)" \
		test "$got" -ge 95

	# A rule with its own second key (per /25 here).
	expect_status 0 "$T rule add $OTHER.0/24 --rate 100/s --also-prefix 25 --also-rate 1/s --also-burst 10" \
		ctl rule add "$OTHER.0/24" --rate 100/s --also-prefix 25 --also-rate 1/s \
		--also-burst 10
	rx_counter_reset other
	tx_gen -s "$OTHER.0/25" --keys 30 -d "$ADDR4_RX" -n 60 -r 20000 >/dev/null
	tx_gen -s "$OTHER.128/25" --keys 30 -d "$ADDR4_RX" -n 60 -r 20000 >/dev/null
	got=$(rx_counter other)
	check "$T the rule holds each /25 to its burst of 10: $got passed of 120 (20 to 22)" \
		test "$got" -ge 20 -a "$got" -le 22

	# Changes: a new rate keeps the buckets, a new prefix is a new tag,
	# off removes the second key.
	tag=$(policy_json default | jq -r .tag)
	out=$(ctl set --also-rate 30/s 2>&1)
	check "$T set --also-rate 30/s keeps the buckets ($out)" \
		test "$(policy_json default | jq -r .tag)" = "$tag"
	check "$T ... and its burst becomes the rate's default (30)" \
		test "$(policy_json default | jq -r .also.packets.burst)" = 30
	ctl set --also-prefix4 16 >/dev/null
	check "$T set --also-prefix4 16 is a new tag" \
		test "$(policy_json default | jq -r .tag)" != "$tag"
	check "$T ... its prefix is /16, its rate kept" \
		test "$(policy_json default | jq -r '"\(.also.prefix4) \(.also.packets.rate)"')" = "16 30/s"
	ctl set --also-rate off >/dev/null
	check "$T set --also-rate off removes the second key" \
		test "$(policy_json default | jq -r '.also // "none"')" = none
	rx_counter_reset net
	tx_gen -s "$NET.0/24" --keys 200 -d "$ADDR4_RX" -n 600 -r 20000 >/dev/null
	check "$T without it the /24 passes every source's packets ($(rx_counter net) of 600)" \
		test "$(rx_counter net)" = 600

	# Refusals: exit status 2, nothing changed.
	# (the policies: a stray packet of the lab's may move the counters)
	policies() { ctl -j rule list | jq -c '[.[] | del(.passed, .dropped, .passed_bytes, .dropped_bytes, .would_drop, .would_drop_bytes)]'; }
	before=$(policies)
	for bad in "set --also-burst 5" "set --also-rate 10/s --algo fixed-window --rate 10/s" \
		"set --also-rate 10/s --prefix4 24" "set --also-rate 10mbit" \
		"rule add $NET.128/25 --deny --also-rate 1/s"; do
		# shellcheck disable=SC2086
		out=$(ctl $bad 2>&1)
		rc=$?
		check "$T '$bad': exit 2 ($out)" test "$rc" = 2
	done
	check "$T ... and nothing changed" test "$(policies)" = "$before"
	expect_status 0 "$T detach" rx_sluice detach "$IF_RX"
done

# A config file: attach --config, the same file again, another --also-rate.
F=$NETNS_TMP/also.conf
printf 'set --rate 100/s --also-rate 500/s --also-prefix4 20\nrule add %s.0/24 --rate 10/s --also-rate 50/s\n' \
	"$OTHER" >"$F"
expect_status 0 "attach --config with --also lines" rx_sluice attach "$IF_RX" --config "$F" ||
	exit 0
check "the file's second keys are live (default /20 500/s, the rule's /24 50/s)" \
	test "$(ctl -j rule list | jq -r '[.[].also | "\(.prefix4)/\(.packets.rate)"] | join(" ")')" = "24/50/s 20/500/s"
tags=$(ctl -j rule list | jq -c '[.[].tag]')
out=$(rx_sluice reload "$IF_RX" --config "$F" 2>&1)
check "the same file again: nothing changed, same tags ($out)" \
	test "$(ctl -j rule list | jq -c '[.[].tag]')" = "$tags"
sed -i 's|--also-rate 500/s|--also-rate 400/s|' "$F"
out=$(rx_sluice reload "$IF_RX" --config "$F" 2>&1)
check "another --also-rate: the default's second key is 400/s, tags kept ($out)" \
	test "$(ctl -j rule list | jq -r '.[] | select(.match == "default") | .also.packets.rate')" = 400/s -a \
	"$(ctl -j rule list | jq -c '[.[].tag]')" = "$tags"
expect_status 0 "detach" rx_sluice detach "$IF_RX"
tap_done

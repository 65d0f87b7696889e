#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# --key src,dport and --key flow end to end, on both key tables: a policy
# keyed per service holds each service of a source apart (a flood to one
# port leaves the source's other ports their own buckets), show lists every
# key of the source and narrows to one (tcp/443, the flow's spelling), top
# names the wide keys, flush ADDR KEYSPEC forgets one and flush ADDR all of
# them, rule list and the policy JSON say the key, and a new key mode is a
# new tag.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "wide keys" jq
netns_need_sluice "wide keys"

N=71
netns_setup ky $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }
SRC=198.18.$N.1

for table in lru sets; do
	T="[$table]"
	expect_status 0 "$T attach --table $table" rx_sluice attach "$IF_RX" --table "$table" ||
		continue
	# Wide keys are off until an attach with --max-flows turns them on, in
	# place: a rule made before stays.
	expect_status 0 "$T a rule before wide keys" ctl rule add 198.18.250.0/24 --rate 7/s
	out=$(ctl set --key src,dport 2>&1)
	rc=$?
	check "$T --key src,dport while wide keys are off: exit 2, naming --max-flows" \
		test "$rc" = 2 -a -n "$(grep -e '--max-flows' <<<"$out")"
	check "$T stats -j: key_table.wide.on is false before" \
		test "$(ctl -j stats | jq -r .key_table.wide.on)" = false
	expect_status 0 "$T attach again with --max-flows 4096" \
		rx_sluice attach "$IF_RX" --max-flows 4096
	w=$(ctl -j stats | jq -c .key_table.wide)
	check "$T stats -j: key_table.wide is on, holding 4096 ($w)" \
		test "$(jq -r '"\(.on) \(.max)"' <<<"$w")" = "true 4096"
	rx_sluice status "$IF_RX" | grep -q "wide keys: 0 of 4096" &&
		ok "$T status says the wide keys' table" ||
		{ not_ok "$T status says the wide keys' table"; diag "$(rx_sluice status "$IF_RX")"; }
	check "$T the rule made before is kept" \
		test "$(ctl -j rule list | jq -r '.[] | select(.match == "198.18.250.0/24") | .match')" \
		= 198.18.250.0/24
	expect_status 0 "$T attach once more, without --max-flows: wide keys stay on" \
		rx_sluice attach "$IF_RX"
	tag0=$(ctl -j rule list | jq -r '.[] | select(.match == "default") | .tag')
	expect_status 0 "$T set --key src,dport" ctl set --rate 10/s --burst 10 --key src,dport
	row=$(ctl -j rule list | jq -c '.[] | select(.match == "default")')
	check "$T rule list -j says key src,dport" test "$(jq -r .key <<<"$row")" = src,dport
	check "$T a new key mode is a new tag" test "$(jq -r .tag <<<"$row")" != "$tag0"
	ctl rule list | grep -q '/32 /64 src,dport' && ok "$T rule list's KEY says src,dport" ||
		{ not_ok "$T rule list's KEY says src,dport"; diag "$(ctl rule list)"; }

	# 50 packets to port 443, 5 to port 53: 443 is held, 53 passes whole.
	tx_gen -s "$SRC" -d "$ADDR4_RX" -p tcp --dport 443 -n 50 >/dev/null
	tx_gen -s "$SRC" -d "$ADDR4_RX" --dport 53 -n 5 >/dev/null
	out=$(ctl -j show "$SRC")
	keys=$(jq -r '[.keys[].key] | sort | join(",")' <<<"$out")
	check "$T show lists both keys of the source ($keys)" \
		test "$keys" = "$SRC/32 tcp/443,$SRC/32 udp/53"
	d443=$(jq -r '.keys[] | select(.dport == 443) | .dropped' <<<"$out")
	d53=$(jq -r '.keys[] | select(.dport == 53) | .dropped' <<<"$out")
	check "$T tcp/443 held to its burst (dropped $d443 of 50), udp/53 not (dropped $d53)" \
		test "${d443:-0}" -ge 30 -a "${d53:-1}" = 0
	check "$T show -j names the fields: proto tcp, key_mode src,dport" \
		test "$(jq -r '.keys[] | select(.dport == 443) | "\(.proto) \(.key_mode)"' \
			<<<"$out")" = "tcp src,dport"
	ctl show "$SRC" tcp/443 | grep -q "^key *$SRC/32 tcp/443" &&
		! ctl show "$SRC" tcp/443 | grep -q "udp/53" &&
		ok "$T show ADDR tcp/443 narrows to that key" ||
		{ not_ok "$T show ADDR tcp/443 narrows to that key"; diag "$(ctl show "$SRC" tcp/443)"; }
	ctl top | grep -q "$SRC/32 tcp/443" && ok "$T top names the wide key" ||
		{ not_ok "$T top names the wide key"; diag "$(ctl top)"; }
	check "$T top -j: the row's dport is 443" \
		test "$(ctl -j top | jq -r '.top[0].dport')" = 443
	fl=$(ctl -j flush "$SRC" tcp/443)
	check "$T flush ADDR tcp/443 forgets that key alone" \
		test "$(jq -r .wide_buckets <<<"$fl")" = 1
	check "$T ... and udp/53 is still there" \
		test "$(ctl -j show "$SRC" | jq -r '[.keys[].key] | join(",")')" = "$SRC/32 udp/53"
	tx_gen -s "$SRC" -d "$ADDR4_RX" -p tcp --dport 443 -n 3 >/dev/null
	fl=$(ctl -j flush "$SRC")
	check "$T flush ADDR forgets every key of the source, wide ones included" \
		test "$(jq -r .wide_buckets <<<"$fl")" = 2
	check "$T ... none left" test "$(ctl -j show "$SRC" | jq -r '.keys | length')" = 0

	# flow: one bucket per source port
	expect_status 0 "$T set --key flow" ctl set --key flow
	tx_gen -s "$SRC" -d "$ADDR4_RX" -p tcp --sport 40000 --dport 443 -n 20 >/dev/null
	tx_gen -s "$SRC" -d "$ADDR4_RX" -p tcp --sport 40001 --dport 443 -n 5 >/dev/null
	out=$(ctl show "$SRC" "> $ADDR4_RX tcp/40000>443")
	grep -q "^key *$SRC/32 > $ADDR4_RX tcp/40000>443" <<<"$out" &&
		! grep -q "40001" <<<"$out" &&
		ok "$T flow: show ADDR '> DST tcp/40000>443' narrows to that flow" ||
		{ not_ok "$T flow: show ADDR '> DST tcp/40000>443' narrows to that flow"; diag "$out"; }
	check "$T flow: two flows of the source" \
		test "$(ctl -j show "$SRC" | jq -r '.keys | length')" = 2
	check "$T flow: the second flow lost nothing" \
		test "$(ctl -j show "$SRC" | jq -r '.keys[] | select(.sport == 40001) | .dropped')" = 0
	# (the sender's own IPv6 neighbour discovery may have keys too)
	fl=$(ctl -j flush)
	check "$T flush of everything flushes the wide keys ($fl)" \
		test "$(jq -r .wide_buckets <<<"$fl")" -ge 2
	check "$T ... the source has none left" \
		test "$(ctl -j show "$SRC" | jq -r '.keys | length')" = 0
	expect_status 0 "$T detach" rx_sluice detach "$IF_RX"
done
tap_done

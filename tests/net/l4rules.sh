#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Rules that match on the transport header, as an operator uses them, on a
# limiter attached to a veth: rule add with --proto and --dport, rule list
# in the order the datapath evaluates them, UDP floods from sluice-gen held
# by the rule of their port (counters per rule, show's keys, stats
# --prometheus labels, status's count); every bad value refused with exit 2
# and nothing changed; the same rule add twice keeps its buckets; rule del
# of a match; a config file reloaded twice (the second changes nothing, the
# buckets stay), then with a rule changed (diffed); attach again over the
# state: the rules stay in force; rule flush removes both kinds; a new
# default policy holds a new source, and still does after an attach over a
# state pinned without sluice_policies (where the datapath reads every
# policy) and the L4 maps. Once per key table (--table lru, sets).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "l4rules" jq
netns_need_sluice "l4rules"

netns_setup l4r 41 || { not_ok "build the namespaces and the veth pair"; exit 1; }
netns_extra_cleanup() { :; }

SRC=198.18.41.7 NET=198.18.41.0/24
DNS="$NET --proto udp --dport 53" UDP="198.18.0.0/15 --proto udp"
CONF=$NETNS_TMP/l4.conf

T=
ok() { echo "ok - ${T:+$T: }$*"; }
not_ok() { echo "not ok - ${T:+$T: }$*"; TAP_FAILED=$((TAP_FAILED + 1)); }

list_j() { rx_ctl -i "$IF_RX" -j rule list; }
# field MATCH JQ: a field of one row of 'rule list -j'.
field() { list_j | jq -r --arg m "$1" ".[] | select(.match == \$m) | $2"; }
# the rules and their tags, to tell "nothing changed" (counters left out)
rules_now() { list_j | jq -c '[.[] | {match, tag, action, packets}]'; }
send() { # send N DPORT: N frames from SRC to DPORT, sent and delivered
	tx_gen -s "$SRC" -d "$ADDR4_RX" --dport "$2" -n "$1" >/dev/null 2>&1
}

one_table() {
	local before out tag st

	expect_status 0 "attach --table $T" rx_sluice attach "$IF_RX" --table "$T" \
		--rate 10000/s --burst 10000 || return 1
	expect_status 0 "rule add $DNS --rate 1/h --burst 5" \
		rx_ctl -i "$IF_RX" rule add $DNS --rate 1/h --burst 5
	expect_status 0 "rule add $UDP --rate 1/h --burst 50" \
		rx_ctl -i "$IF_RX" rule add $UDP --rate 1/h --burst 50
	expect_status 0 "rule add $NET --deny (a rule of the CIDR alone)" \
		rx_ctl -i "$IF_RX" rule add "$NET" --deny
	out=$(list_j | jq -r '[.[].match] | join("|")')
	if [ "$out" = "$DNS|$UDP|$NET|default" ]; then
		ok "rule list is in evaluation order: the narrower match, the wider, the CIDR alone, the default"
	else
		not_ok "rule list is in evaluation order"; diag "$out"
	fi
	[ "$(field "$DNS" '.l4.proto + " " + (.l4.dport.from | tostring) + " " + .cidr')" = "udp 53 $NET" ] &&
		ok "rule list -j names the match's fields (l4.proto, l4.dport) and its cidr" ||
		not_ok "rule list -j names the match's fields and its cidr"

	# ---- traffic: each flood held by the rule of its port ----
	send 20 53 && send 30 54 || { not_ok "send with sluice-gen"; return 1; }
	out="$(field "$DNS" '"\(.passed) \(.dropped)"') $(field "$UDP" '"\(.passed) \(.dropped)"') $(field "$NET" '"\(.passed) \(.dropped)"')"
	if [ "$out" = "5 15 30 0 0 0" ]; then
		ok "20 frames to port 53 meet its rule (5 passed, 15 dropped), 30 to port 54 the udp rule; the CIDR's deny sees none"
	else
		not_ok "each flood is held by the rule of its port"; diag "passed dropped per rule: $out"
	fi
	out=$(rx_ctl -i "$IF_RX" show "$SRC")
	grep -q "^l4 rule   $DNS: limit token-bucket 1/h burst 5" <<<"$out" &&
		grep -q '0 of 5 packets left' <<<"$out" && grep -q '^dropped   15' <<<"$out" &&
		ok "show names the rules with a match that hold the source, and its key under each (0 of 5 left, 15 dropped)" ||
		{ not_ok "show names the rules with a match and the source's key under each"; diag "$out"; }
	out=$(rx_ctl -i "$IF_RX" stats --prometheus)
	grep -qF "sluice_policy_dropped_total{interface=\"$IF_RX\",policy=\"$DNS\"} 15" <<<"$out" &&
		grep -qF "sluice_rules{interface=\"$IF_RX\"} 3" <<<"$out" &&
		ok "stats --prometheus labels the rule by its CIDR and match, and counts 3 rules" ||
		{ not_ok "stats --prometheus labels the rule by its CIDR and match"; diag "$(grep -E 'policy_dropped|sluice_rules' <<<"$out")"; }
	rx_sluice status "$IF_RX" | grep -q 'rules: 3$' && ok "status counts 3 rules" ||
		not_ok "status counts 3 rules"

	# ---- bad values: exit 2, nothing changed ----
	before=$(rules_now)
	for bad in "--proto udp --dport 65536" "--proto tcp --tcp-flags syn,bogus/syn" \
		"--dport 53" "--proto icmpv6 --icmp-type 128" "--proto tcp --dport 9-1" \
		"--proto udp --tcp-flags syn" "--proto 256"; do
		# shellcheck disable=SC2086
		expect_status 2 "rule add $NET $bad --rate 1/s: exit status 2" \
			rx_ctl -i "$IF_RX" rule add "$NET" $bad --rate 1/s
	done
	[ "$(rules_now)" = "$before" ] && ok "after the refusals the rules are as they were" ||
		not_ok "after the refusals the rules are as they were"
	expect_status 1 "rule del of a match no rule has: exit status 1" \
		rx_ctl -i "$IF_RX" rule del "$NET" --proto udp --dport 54

	# ---- the same command twice: buckets kept ----
	tag=$(field "$DNS" .tag)
	expect_status 0 "the same rule add again" \
		rx_ctl -i "$IF_RX" rule add $DNS --rate 1/h --burst 5
	grep -q 'buckets kept' <<<"$OUT" && [ "$(field "$DNS" .tag)" = "$tag" ] &&
		ok "the same rule add again says 'buckets kept' and keeps the tag" ||
		{ not_ok "the same rule add again keeps the buckets"; diag "$OUT"; }

	# ---- a config file: reload twice, then a change ----
	printf '%s\n' "set --rate 10000/s --burst 10000" "rule add $DNS --rate 1/h --burst 5" \
		"rule add $UDP --rate 1/h --burst 50" "rule add $NET --deny" >"$CONF"
	expect_status 0 "reload from the file of the live rules" rx_sluice reload "$IF_RX" --config "$CONF"
	grep -q '0 rules added, 0 removed, 0 changed, 3 unchanged; default policy unchanged, settings unchanged' <<<"$OUT" &&
		ok "that reload changes nothing, and says so" || { not_ok "that reload changes nothing"; diag "$OUT"; }
	rx_ctl -i "$IF_RX" show "$SRC" | grep -q '0 of 5 packets left' &&
		ok "the source's bucket under the rule is kept across the reload" ||
		not_ok "the source's bucket under the rule is kept across the reload"
	sed -i "s|rule add $UDP --rate 1/h --burst 50|rule add $UDP --rate 2/h --burst 50|" "$CONF"
	expect_status 0 "reload with the udp rule's rate changed" rx_sluice reload "$IF_RX" --config "$CONF"
	grep -q '0 rules added, 0 removed, 1 changed, 2 unchanged' <<<"$OUT" &&
		[ "$(field "$UDP" .packets.rate)" = "2/h" ] &&
		ok "that reload changes the one rule, and says so" || { not_ok "that reload changes the one rule"; diag "$OUT"; }

	# ---- attach again over the state: the rules stay in force ----
	expect_status 0 "attach again over the state" rx_sluice attach "$IF_RX" --table "$T" \
		--rate 10000/s --burst 10000
	send 10 53 || not_ok "send with sluice-gen"
	[ "$(field "$DNS" .dropped)" = 25 ] && ok "after the attach the port-53 rule still drops (25)" ||
		{ not_ok "after the attach the port-53 rule still drops"; diag "dropped $(field "$DNS" .dropped)"; }

	# ---- rule del of a match, rule flush of both kinds ----
	expect_status 0 "rule del $DNS" rx_ctl -i "$IF_RX" rule del $DNS
	[ "$(list_j | jq -r '[.[].match] | join("|")')" = "$UDP|$NET|default" ] &&
		ok "rule del removes that rule alone" || not_ok "rule del removes that rule alone"
	expect_status 0 "rule flush" rx_ctl -i "$IF_RX" rule flush
	[ "$(list_j | jq -r '[.[].match] | join("|")')" = "default" ] &&
		ok "rule flush removes the rules of both kinds" || not_ok "rule flush removes the rules of both kinds"
	send 10 53 || not_ok "send with sluice-gen"
	st=$(rx_ctl -i "$IF_RX" -j rule list | jq -r '.[0].passed')
	[ "$st" -ge 10 ] 2>/dev/null && ok "then the default policy passes the port-53 frames" ||
		not_ok "then the default policy passes the port-53 frames"

	# ---- the default policy, which the datapath reads from sluice_policies
	# as it does every policy: a change of it, and a state pinned without
	# that map and the L4 ones (by an older sluice) ----
	expect_status 0 "set --rate 1/h --burst 5 (the default policy)" \
		rx_ctl -i "$IF_RX" set --rate 1/h --burst 5
	# held: the source's key under the default, 5 let through of 10 (the
	# default's counters also count what else the veth carries: IPv6 ND)
	held() {
		tx_gen -s "$1" -d "$ADDR4_RX" --dport 53 -n 10 >/dev/null 2>&1 || not_ok "send with sluice-gen"
		out=$(rx_ctl -i "$IF_RX" show "$1")
		grep -q '^policy    default' <<<"$out" && grep -q '0 of 5 packets left' <<<"$out" &&
			grep -q '^dropped   5$' <<<"$out"
	}
	held 198.18.41.8 &&
		ok "the new default holds a new source at its burst (5 of 10 passed)" ||
		{ not_ok "the new default holds a new source at its burst"; diag "$out"; }
	rm -f "$RX_PINS/sluice_l4bm" "$RX_PINS/sluice_l4rules" "$RX_PINS/sluice_l4pol" \
		"$RX_PINS/sluice_policies"
	expect_status 0 "attach over a state pinned without sluice_policies and the L4 maps (an upgrade)" \
		rx_sluice attach "$IF_RX" --table "$T"
	[ -e "$RX_PINS/sluice_policies" ] && [ -e "$RX_PINS/sluice_l4pol" ] &&
		ok "the upgrade pins sluice_policies and sluice_l4pol" ||
		not_ok "the upgrade pins sluice_policies and sluice_l4pol"
	held 198.18.41.9 &&
		ok "after the upgrade the default still limits (sluice_policies filled at attach: 5 of 10 passed)" ||
		{ not_ok "after the upgrade the default still limits"; diag "$out"; }
	expect_status 0 "detach" rx_sluice detach "$IF_RX"
}

for T in lru sets; do
	one_table || not_ok "the run of this table stopped early"
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
done
T=
tap_done

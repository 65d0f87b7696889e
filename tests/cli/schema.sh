#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# One JSON shape for a policy: sluice status -j, sluicectl rule list -j,
# show -j, set -j and rule add -j write the same policy object (one writer,
# fmt.c), fleet flag included; stats' text lines are named as its JSON paths
# (fleet_sync_errors, not fleet_errors); the outage share is named for what
# it is (outage_share, not shared); and every JSON field any command writes
# is listed in the JSON OUTPUT sections of sluice(8) and sluicectl(8).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "one JSON schema" jq
netns_need_sluice "one JSON schema"

N=45
netns_setup sc $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }
# same NAME A B: two JSON values are equal (key order aside)
same() {
	if [ -n "$2" ] && [ "$(jq -S . <<<"$2")" = "$(jq -S . <<<"$3")" ]; then
		ok "$1"
	else
		not_ok "$1"; diag "one:   $2"; diag "other: $3"
	fi
}
# the policy object of a rule list row: the row without its counters
COUNTERS='del(.passed, .dropped, .passed_bytes, .dropped_bytes, .would_drop, .would_drop_bytes, .counters_shared_by)'
row() { ctl -j rule list | jq -c --arg m "$1" ".[] | select(.match == \$m) | $COUNTERS"; }

expect_status 0 "attach" rx_sluice attach "$IF_RX" || exit 1
expect_status 0 "set --fleet on (a fleet-wide default)" ctl set --rate 1000/s --fleet on
tx_gen -s 198.18.$N.9 -d "$ADDR4_RX" -n 5 >/dev/null

# ---- the default policy, four ways ----
st=$(rx_sluice status -j "$IF_RX" | jq -c '.interfaces[0].policy')
same "status -j's policy is rule list's default row" "$st" "$(row default)"
same "show -j's policy (a source no rule matches) is the same" \
	"$(ctl -j show 198.18.$N.9 | jq -c .policy)" "$st"
same "set -j's policy is the same" "$(ctl -j set --rate 1000/s --fleet on | jq -c .policy)" \
	"$(rx_sluice status -j "$IF_RX" | jq -c '.interfaces[0].policy')"
[ "$(jq -r .fleet <<<"$st")" = true ] && ok "status -j's policy says fleet: true" ||
	{ not_ok "status -j's policy says fleet: true"; diag "$st"; }
[ "$(jq -r .packets.rate <<<"$st")" = 1000/s ] && [ "$(jq -r .packets.burst <<<"$st")" = 1000 ] &&
	ok "status -j's policy: packets.rate and packets.burst, as rule list's" ||
	{ not_ok "status -j's policy: packets.rate and packets.burst, as rule list's"; diag "$st"; }
jq -e 'has("rate") or has("byte_rate") or has("burst")' <<<"$st" >/dev/null &&
	{ not_ok "status -j's policy has no flat rate/burst/byte_rate"; diag "$st"; } ||
	ok "status -j's policy has no flat rate/burst/byte_rate"

# ---- a rule's policy, three ways ----
ra=$(ctl -j rule add 198.18.$N.0/24 --rate 10/s --rate 1mbit --burst 3000 | jq -c .policy)
same "rule add -j's policy is rule list's row" "$ra" "$(row 198.18.$N.0/24)"
same "show -j's policy of a source of the rule is the same" \
	"$(ctl -j show 198.18.$N.9 | jq -c .policy)" "$(row 198.18.$N.0/24)"
ra=$(ctl -j rule add 198.18.$N.128/25 --algo sliding-window --rate 10/s --window 1.5s | jq -c .policy)
same "a window rule: rule add -j's policy is rule list's row" "$ra" "$(row 198.18.$N.128/25)"

# ---- stats: the text says what the JSON says, under the JSON's names ----
sj=$(ctl -j stats)
st_text=$(ctl stats)
jnames=$(jq -r 'paths(type != "object" and type != "array") | map(tostring) | join("_")' \
	<<<"$sj" | sort)
tnames=$(awk '{ print $1 }' <<<"$st_text" | sort)
if [ "$jnames" = "$tnames" ]; then
	ok "stats: every text line is a JSON path joined by _, and every path a line ($(wc -l <<<"$tnames"))"
else
	not_ok "stats: every text line is a JSON path joined by _, and every path a line"
	diag "$(diff <(echo "$jnames") <(echo "$tnames"))"
fi
for n in fleet_state fleet_outage_share fleet_sync_errors fleet_keys_pushed key_table_ipv4_used; do
	grep -q "^$n " <<<"$st_text" && ok "stats: the text line $n" || not_ok "stats: the text line $n"
done
for n in fleet_errors fleet_pushed fleet_share fleet_error; do
	grep -q "^$n " <<<"$st_text" && not_ok "stats: no old name $n" || ok "stats: no old name $n"
done
same "stats: a value in text and JSON (key_table_max)" \
	"$(awk '$1 == "key_table_max" { print $2 }' <<<"$st_text")" "$(jq .key_table.max <<<"$sj")"

# ---- the outage share, named for what it is ----
all=$( (rx_sluice status -j "$IF_RX"; ctl -j stats; ctl -j show 198.18.$N.9; ctl -j rule list) |
	jq -r '[paths | .[-1] | strings] | .[]' | sort -u)
grep -qx shared <<<"$all" && not_ok "no JSON field is called 'shared'" || ok "no JSON field is called 'shared'"
grep -qx outage_share <<<"$all" && ok "the fleet object says outage_share" ||
	not_ok "the fleet object says outage_share"
has_prom() { grep -q "^$1{" <<<"$(ctl stats --prometheus)"; }
has_prom sluice_fleet_outage_share && ! has_prom sluice_fleet_shared &&
	ok "metrics: sluice_fleet_outage_share (not sluice_fleet_shared)" ||
	not_ok "metrics: sluice_fleet_outage_share (not sluice_fleet_shared)"

# ---- every field is documented ----
ctl set --new-keys 100/s >/dev/null
tx_gen -s 198.18.$N.70 -d "$ADDR4_RX" -n 300 >/dev/null
fields=$( (rx_sluice status -j; ctl -j stats; ctl -j rule list; ctl -j show 198.18.$N.9;
	ctl -j show 198.18.$N.200; ctl -j show 198.18.$N.70; ctl -j top; ctl -j set --rate 1000/s;
	ctl -j rule add 198.18.$N.64/26 --deny; ctl -j flush 198.18.$N.9; ctl -j frob) 2>/dev/null |
	jq -r '[paths | .[-1] | strings] | .[]' | sort -u)
docs=$(sed -n '/^\.SH JSON OUTPUT/,/^\.SH /p' man/sluice.8 man/sluicectl.8)
missing=
for f in $fields; do
	grep -qE "(^|[ (\"])$f([ ,.;:)\"]|$)" <<<"$docs" || missing="$missing $f"
done
[ -z "$missing" ] && ok "the man pages' JSON OUTPUT list every field written ($(wc -w <<<"$fields"))" ||
	not_ok "the man pages' JSON OUTPUT list every field written: not$missing"

tap_done

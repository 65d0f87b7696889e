#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A fleet-wide policy's second key (--also-rate ... --fleet on): three boxes
# share one real redis-server (a unix socket in a temporary directory), as in
# tests/net/fleet.sh. The default policy of every box is
#
#   --rate 1000/s --burst 1000 --also-prefix4 24 --also-rate 100/s --also-burst 300 --fleet on
#
# a loose limit per source and a tight one per /24. 200 sources of one /24
# (sluice-gen --keys 200), each far under its own limit, are sprayed over the
# three boxes. Counted by nft in each box's ingress hook (after XDP, what
# sluice passed, counted by another), the /24 as a whole is held to the
# fleet's bound with the second key's limit (docs/fleet.md, "Second keys"):
#
#   admitted <= burst + rate x t + (N - 1) x rate x (2 S + RTT) + N x theta
#
# burst and rate the second key's, S the sync interval (its worst case on a
# loaded 2-core machine, twice the interval, as fleet.sh takes it), RTT the
# largest of the boxes' last round trips, N x theta = THETA x burst (the
# usage the boxes may hold back); and it gets at least 0.9 x (burst + rate x
# t): one burst for the fleet, not burst/N. Its drops are the second key's
# (also_limited), not the sources' own, and Redis holds the /24's key under
# its name, "sluice:{FLEET}:a:198.18.64.0/24". Then a /24 of its own whose
# sources reach one box only gets the whole second-key limit there (at least
# 0.9 x rate x t, at most burst + rate x t + rate x S), as a source does
# (fleet.sh, 3). Last, a CIDR rule inside a /24 with a second key of its
# own beside the default's: the /24's two keys have two names in Redis, the
# rule's by its CIDR, whatever slot each box gave the rule. The burst is 300, a second deep on each box (burst/N at
# 100/s), so that a sender held off the CPU for up to a second forfeits
# nothing; a count below the floor is measured again with a fresh /24 when
# the sender says it fell further behind, and a spray beyond the bound while
# an agent missed syncs (the machine broke the bound's terms, not the fleet)
# with a fresh one too. No check times anything: states are waited for with
# generous polls, and t is the generators' own span of their frames.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh

netns_need_root "fleet-also" jq redis-server redis-cli nft
netns_need_sluice "fleet-also"

OWN_RATE=1000 OWN_BURST=1000          # each source's own limit: never reached here
ALSO_RATE=100 ALSO_BURST=300 ALSO_PREFIX=24 # the /24's
SPRAY_NETS="198.18.64 198.18.66 198.18.68" # a fresh /24 a try
ONE_NETS="198.18.65 198.18.67 198.18.69"
KEYS=200 PPS=300 SECS=3 N=3 SYNC_MS=100
THETA=0.25 # --sync-threshold's default
FLEET=fa$$
P=fa$$
NS_G="fleet-also-g-$$"
GEN_PIDS=()
REDIS_PID= NAMES_PID=
D=$(mktemp -d /tmp/sluice-fleet-also.XXXXXX) || exit 1
SOCK=$D/redis.sock

boxes_stop() {
	boxes_kill "${GEN_PIDS[@]}" "${RUNP[@]}" "$REDIS_PID" $NAMES_PID
}
boxes_trap

calc() { awk "BEGIN { printf \"%.1f\", $* }"; }
stats() { ctl "$1" stats -j; }

# count_net NET BOX...: count from now what each BOX passes from NET.0/24.
count_net() {
	local net=$1 i name=n${1//./_}
	shift
	for i in "$@"; do
		bx "$i" nft add counter netdev fleet "$name" &&
			bx "$i" nft add rule netdev fleet in ip saddr "$net.0/24" counter name "$name" ||
			return 1
	done
}
# counted_net NET BOX: what BOX passed from NET.0/24 since count_net.
counted_net() {
	bx "$2" nft list counter netdev fleet "n${1//./_}" |
		awk '$1 == "packets" { print $2; found = 1 } END { if (!found) exit 1 }'
}

# snap: every box's syncs, drops and second-key refusals now (S_*[I]).
declare -a S_syncs S_dropped S_also
snap() {
	local i s
	for i in 1 2 3; do
		s=$(stats "$i")
		S_syncs[$i]=$(jq .fleet.syncs <<<"$s")
		S_dropped[$i]=$(jq .dropped <<<"$s")
		S_also[$i]=$(jq .also_limited <<<"$s")
	done
}

# send NET BOX...: KEYS sources of NET.0/24 to each BOX at PPS for SECS, and
# wait for them: GEN_T the largest span, GEN_LAG the largest lag (ms),
# ADMITTED what nft counted at the boxes, PER_BOX per box; LATE 1 when an
# agent missed more than one sync of the flood; D_DROPPED and D_ALSO the
# boxes' drops and second-key refusals of it.
send() {
	local net=$1 i pid st=0 s n
	shift
	count_net "$net" "$@" || return 1
	snap
	GEN_PIDS=()
	for i in "$@"; do
		nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" \
			-s "$net.0/24" --keys "$KEYS" -d "198.18.$i.2" -r "$PPS" -t "$SECS" -j \
			>"$D/gen$i.json" 2>"$D/gen$i.err" &
		GEN_PIDS+=($!)
	done
	for pid in "${GEN_PIDS[@]}"; do
		wait "$pid" || st=1
	done
	GEN_PIDS=()
	[ $st = 0 ] || { diag "sluice-gen failed: $(cat "$D"/gen*.err)"; return 1; }
	# The last frames through the boxes' NAPI.
	sleep 0.5
	GEN_T=0 GEN_LAG=0 ADMITTED=0 PER_BOX='' LATE=0 D_DROPPED=0 D_ALSO=0
	for i in "$@"; do
		GEN_T=$(jq -s --argjson t "$GEN_T" '[.[0].seconds, $t] | max' "$D/gen$i.json")
		GEN_LAG=$(jq -s --argjson l "$GEN_LAG" '[.[0].max_lag_ms, $l] | max' "$D/gen$i.json")
		n=$(counted_net "$net" "$i") || return 1
		ADMITTED=$((ADMITTED + n))
		PER_BOX+="box$i $n "
		s=$(stats "$i")
		D_DROPPED=$((D_DROPPED + $(jq .dropped <<<"$s") - S_dropped[i]))
		D_ALSO=$((D_ALSO + $(jq .also_limited <<<"$s") - S_also[i]))
	done
	for i in "$@"; do
		s=$(($(stats "$i" | jq .fleet.syncs) - S_syncs[i]))
		awk -v d="$s" -v t="$GEN_T" -v s="$SYNC_MS" \
			'BEGIN { exit !(d < int(t * 1000 / s) - 1) }' && LATE=1
	done
	return 0
}

max_rtt_ms() {
	local i m=0 r
	for i in 1 2 3; do
		r=$(fleet_of "$i" | jq .rtt_ms)
		m=$(awk -v a="$m" -v b="$r" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$m"
}

boxes_lab 3 fleet-also && boxes_ingress 3 ||
	{ not_ok "build the generator and three box namespaces"; exit 1; }
redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' --appendonly no \
	--daemonize no >"$D/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do
	redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG ||
	{ not_ok "start redis-server on $SOCK: $(tail -3 "$D/redis.log")"; exit 1; }

for i in 1 2 3; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" >/dev/null &&
		ctl "$i" set --rate "$OWN_RATE/s" --burst "$OWN_BURST" \
			--also-prefix4 "$ALSO_PREFIX" --also-rate "$ALSO_RATE/s" \
			--also-burst "$ALSO_BURST" --fleet on >"$D/set$i" 2>&1 ||
		{ not_ok "attach box $i, and a fleet policy with a second key"; \
			diag "$(cat "$D/set$i")"; exit 1; }
	box_run "$i" --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms"
done
ok "set --fleet on --also-rate $ALSO_RATE/s --also-prefix4 $ALSO_PREFIX is taken on 3 boxes"
row=$(ctl 1 rule list -j | jq -c '.[] | select(.match == "default")')
pass_if "rule list -j: the default is fleet-wide, with its second key" \
	jq -e ".fleet == true and .also.prefix4 == $ALSO_PREFIX and
		.also.packets.rate == \"$ALSO_RATE/s\"" <<<"$row" >/dev/null ||
	diag "$row"

WAIT_OK=0
for _ in $(seq 200); do
	good=1
	for i in 1 2 3; do
		fleet_of "$i" | jq -e '.state == "synced" and .boxes == 3' >/dev/null 2>&1 ||
			{ good=0; break; }
	done
	[ $good = 1 ] && { WAIT_OK=1; break; }
	sleep 0.05
done
if [ $WAIT_OK = 1 ]; then
	ok "every box: fleet synced, 3 boxes"
else
	not_ok "every box: fleet synced, 3 boxes"
	for i in 1 2 3; do diag "box $i: $(fleet_of "$i"); $(tail -3 "${RUNLOG[$i]}")"; done
	exit 1
fi

# ---- 1. one /24 of 200 sources sprayed over the three boxes ----
for net in $SPRAY_NETS; do
	send "$net" 1 2 3 || { not_ok "sprayed: the generators ran"; exit 1; }
	RTT_MS=$(max_rtt_ms)
	bound=$(calc "$ALSO_BURST + $ALSO_RATE * $GEN_T +" \
		"($N - 1) * $ALSO_RATE * (2 * $SYNC_MS + $RTT_MS) / 1000 + $THETA * $ALSO_BURST")
	le "$ADMITTED" "$bound" || [ "$LATE" = 0 ] || {
		diag "$net.0/24: $ADMITTED beyond $bound while an agent missed syncs: again"
		continue
	}
	break
done
floor=$(calc "0.9 * ($ALSO_BURST + $ALSO_RATE * $GEN_T)")
delivered=$(jq -s 'map(.delivered) | add' "$D"/gen1.json "$D"/gen2.json "$D"/gen3.json)
echo "# fleet-also ratio: $(awk -v a="$ADMITTED" -v b="$bound" 'BEGIN { printf "%.4f", a / b }')"
diag "$net.0/24 ($KEYS sources) sprayed: $ADMITTED of $delivered admitted ($PER_BOX; nft)," \
	"t $GEN_T s; bound $ALSO_BURST + $ALSO_RATE/s x $GEN_T s + ($N - 1) x $ALSO_RATE/s x" \
	"(2 x $SYNC_MS + $RTT_MS) ms + $THETA x $ALSO_BURST = $bound; floor $floor;" \
	"drops $D_DROPPED, of them the second key's $D_ALSO"
pass_if "sprayed: the /24 is held to the fleet bound of its second key" le "$ADMITTED" "$bound"
pass_if "sprayed: the /24 gets at least 0.9 x (burst + rate x t)" le "$floor" "$ADMITTED"
all_also() { [ "$D_ALSO" -gt 0 ] && [ "$D_ALSO" = "$D_DROPPED" ]; }
pass_if "sprayed: the drops are the second key's (also_limited), no source's own" all_also
name="sluice:{$FLEET}:a:$net.0/24"
pass_if "Redis holds the /24's key: $name" \
	[ "$(redis-cli -s "$SOCK" --raw exists "$name")" = 1 ] ||
	diag "keys: $(redis-cli -s "$SOCK" --raw keys "sluice:{$FLEET}:*" | head -5 | tr '\n' ' ')"
own=$(redis-cli -s "$SOCK" --raw keys "sluice:{$FLEET}:p:$net.*" | grep -c .)
diag "the sources' own keys in Redis: $own (each holds back its few packets)"

# ---- 2. a /24 of its own on one box only: the whole second-key limit ----
for net in $ONE_NETS; do
	send "$net" 1 || { not_ok "one box: the generator ran"; break; }
	lo=$(calc "0.9 * $ALSO_RATE * $GEN_T")
	hi=$(calc "$ALSO_BURST + $ALSO_RATE * $GEN_T + $ALSO_RATE * $SYNC_MS / 1000")
	diag "one box: $net.0/24 ($KEYS sources) admitted $ADMITTED (nft), want $lo to $hi" \
		"(t $GEN_T s, sender at most $GEN_LAG ms late)"
	le "$ADMITTED" "$hi" || break
	le "$lo" "$ADMITTED" && break
	awk -v l="$GEN_LAG" 'BEGIN { exit !(l > 1000) }' || break
done
pass_if "one box: at most burst + rate x t + rate x S" le "$ADMITTED" "$hi"
pass_if "one box: the whole second-key rate (at least 0.9 x rate x t)" le "$lo" "$ADMITTED"

# ---- 3. two policies' second keys over one /24: two keys in Redis ----
# A rule 198.18.70.0/28 with a second key of its own /24, fleet-wide, beside
# the default's: the /24's sources in the /28 are charged to the rule's
# second key, the others to the default's; locally two buckets (two tags),
# in Redis two names, the rule's by its CIDR. Box 2 has a rule more first
# (never met here), so that the rule sits on another slot there: the name
# must not depend on it.
ctl 2 rule add 198.18.71.0/24 --rate 10/s >/dev/null ||
	{ not_ok "add a rule of box 2's own"; exit 1; }
for i in 1 2 3; do
	ctl "$i" rule add 198.18.70.0/28 --rate "$OWN_RATE/s" --burst "$OWN_BURST" \
		--also-prefix "$ALSO_PREFIX" --also-rate "$ALSO_RATE/s" --also-burst "$ALSO_BURST" \
		--fleet on >"$D/rule$i" 2>&1 ||
		{ not_ok "rule add ... --also-rate ... --fleet on on box $i"; \
			diag "$(cat "$D/rule$i")"; exit 1; }
done
ok "rule add CIDR --also-rate --also-prefix 24 --fleet on is taken on 3 boxes"
slot() { ctl "$1" rule list -j | jq -r '.[] | select(.match == "198.18.70.0/28") | .slot'; }
s1=$(slot 1) s2=$(slot 2)
diag "the rule's slot: box 1 $s1, box 2 $s2"
differ() { [ -n "$1" ] && [ "$1" != null ] && [ "$1" != "$2" ]; }
pass_if "the rule sits on another slot on box 2" differ "$s1" "$s2"
# A key lives in Redis while its fleet bucket is in debt: one under its
# limit (the rule's /28 is a few of the 200 sources) may be gone by the
# time the flood ends. So the names are read while it runs, every 200 ms.
(
	while :; do
		redis-cli -s "$SOCK" --raw keys "sluice:{$FLEET}:a:198.18.70.*"
		sleep 0.2
	done
) >"$D/names" 2>/dev/null &
NAMES_PID=$!
send 198.18.70 1 2 3 || { not_ok "two policies: the generators ran"; exit 1; }
kill "$NAMES_PID" 2>/dev/null
wait "$NAMES_PID" 2>/dev/null
NAMES_PID=
names=$(sort -u "$D/names" | grep . | tr '\n' ' ')
def="sluice:{$FLEET}:a:198.18.70.0/24" rule="sluice:{$FLEET}:a:198.18.70.0/24@198.18.70.0/28"
diag "two policies: $ADMITTED of the /24 admitted ($PER_BOX); Redis during the flood: $names"
pass_if "Redis held the default's second key of the /24: $def" grep -qxF -- "$def" "$D/names"
pass_if "and the rule's, named by its CIDR: $rule" grep -qxF -- "$rule" "$D/names"
pass_if "and no other key of the /24's second keys" [ "$(sort -u "$D/names" | grep -c .)" = 2 ]

[ "$TAP_FAILED" = 0 ] || for i in 1 2 3; do diag "run $i: $(tail -5 "${RUNLOG[$i]}")"; done
exit $((TAP_FAILED > 0))

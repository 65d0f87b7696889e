#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Push only what can move the bound (issue 24, item 1): two boxes share one
# real redis-server (a unix socket in a temporary directory); a spoofed
# flood of one- or two-packet sources (random sources of 198.18.128.0/17,
# 20,000 frames to each box) leaves Redis idle for those keys, while a
# heavy source sprayed over both boxes at the same time is still held to
# the fleet's bound with the threshold's term:
#
#   admitted <= burst + rate x t + (N - 1) x rate x (2 S + RTT) + N x theta
#
# theta the default --sync-threshold (0.25) of a box's share of the burst
# (burst/N), so N x theta = burst / 4. The Redis side is counted by MONITOR
# (every command, the script's GET and SET of each key among them): no flood
# key may appear, the heavy one must. The heavy source's admissions are
# counted by nft in each box's ingress hook (after XDP), not by sluice.
# Then a rule on the transport header, --proto tcp --tcp-flags syn --fleet
# on, beside the default: one source's SYNs are held to the rule's fleet
# bound, its UDP is charged to the default's key (below).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh

netns_need_root "fleet-flood" jq redis-server redis-cli nft
netns_need_sluice "fleet-flood"

RATE=100 BURST=300 N=2 SYNC_MS=100
HEAVY=198.18.0.9 HEAVY_PPS=500 SECS=3
FLOOD=198.18.128.0/17 FLOOD_N=20000 FLOOD_PPS=6000
FLEET=ff$$
P=ff$$
NS_G="fleet-flood-g-$$"
PIDS=()
REDIS_PID= MON_PID=
D=$(mktemp -d /tmp/sluice-fleet-flood.XXXXXX) || exit 1
SOCK=$D/redis.sock

boxes_stop() {
	local pid
	for pid in "${PIDS[@]}" "${RUNP[@]}" "$MON_PID" "$REDIS_PID"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}" "${RUNP[@]}" "$MON_PID" "$REDIS_PID"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
}
boxes_trap

boxes_lab 2 fleet-flood && boxes_ingress 2 && nft_count "$HEAVY" 1 2 ||
	{ not_ok "build the generator and two box namespaces"; exit 1; }
redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' --appendonly no \
	--daemonize no >"$D/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do
	redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG ||
	{ not_ok "start redis-server on $SOCK: $(tail -3 "$D/redis.log")"; exit 1; }

for i in 1 2; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" --rate "$RATE/s" --burst "$BURST" >/dev/null &&
		ctl "$i" set --fleet on ||
		{ not_ok "attach box $i with a fleet policy"; exit 1; }
	box_run "$i" --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms"
done
synced=0
for _ in $(seq 200); do
	a=$(ctl 1 stats -j 2>/dev/null | jq -r '.fleet.state + " " + (.fleet.boxes|tostring)')
	b=$(ctl 2 stats -j 2>/dev/null | jq -r '.fleet.state + " " + (.fleet.boxes|tostring)')
	[ "$a" = "synced 2" ] && [ "$b" = "synced 2" ] && { synced=1; break; }
	sleep 0.05
done
if [ $synced = 1 ]; then
	ok "two boxes synced"
else
	not_ok "two boxes synced"
	diag "$(cat "${RUNLOG[1]}" "${RUNLOG[2]}")"
	exit 1
fi

# Every command Redis runs from now on (a Lua script's too).
redis-cli -s "$SOCK" monitor >"$D/monitor" 2>&1 &
MON_PID=$!
sleep 0.3
for i in 1 2; do
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" -s "$FLOOD" \
		-d "198.18.$i.2" -r "$FLOOD_PPS" -n "$FLOOD_N" -j >"$D/flood$i.json" \
		2>"$D/flood$i.err" &
	PIDS+=($!)
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" -s "$HEAVY" \
		-d "198.18.$i.2" -r "$HEAVY_PPS" -t "$SECS" -j >"$D/heavy$i.json" \
		2>"$D/heavy$i.err" &
	PIDS+=($!)
done
st=0
for pid in "${PIDS[@]}"; do wait "$pid" || st=1; done
PIDS=()
if [ $st != 0 ]; then
	not_ok "the generators ran"
	diag "$(cat "$D"/*.err)"
	exit 1
fi
# The last frames through NAPI, and two more syncs after them.
sleep 0.5
kill "$MON_PID" 2>/dev/null
wait "$MON_PID" 2>/dev/null
MON_PID=

flood_keys=$(grep -oE 'p:198\.18\.(1(2[89]|[3-9][0-9])|2[0-5][0-9])\.[0-9]+/32' "$D/monitor" |
	sort -u | wc -l)
heavy_calls=$(grep -c "p:$HEAVY/32" "$D/monitor")
evals=$(grep -c '"EVALSHA"' "$D/monitor")
sent=$(jq -s 'map(.packets) | add' "$D"/flood1.json "$D"/flood2.json)
diag "flood: $sent frames from $FLOOD; Redis: $evals EVALSHA, $flood_keys flood keys," \
	"$heavy_calls commands naming the heavy key"
pass_if() { local n=$1; shift; if "$@"; then ok "$n"; else not_ok "$n"; fi; }
pass_if "the flood reached the boxes" [ "${sent:-0}" -ge $((FLOOD_N * 2 * 9 / 10)) ]
pass_if "a flood of one- or two-packet sources costs Redis no key" [ "$flood_keys" = 0 ]
pass_if "the heavy source is pushed (its key is in Redis)" [ "$heavy_calls" -gt 0 ]

held=$(grep -oE '[0-9]+ keys held' "${RUNLOG[1]}" | awk '{ if ($1 > m) m = $1 } END { print m + 0 }')
diag "box 1's run said up to $held keys held"

t=$(jq -s 'map(.seconds) | max' "$D"/heavy1.json "$D"/heavy2.json)
rtt=$(ctl 1 stats -j | jq .fleet.rtt_ms)
admitted=$(($(nft_counted "$HEAVY" 1) + $(nft_counted "$HEAVY" 2)))
offered=$(jq -s 'map(.packets) | add' "$D"/heavy1.json "$D"/heavy2.json)
bound=$(awk -v b=$BURST -v r=$RATE -v t="$t" -v n=$N -v s=$SYNC_MS -v rtt="$rtt" \
	'BEGIN { printf "%.1f", b + r * t + (n - 1) * r * (2 * s + rtt) / 1000 + b / 4 }')
diag "heavy $HEAVY: $admitted of $offered admitted (nft at the boxes), t $t s, bound" \
	"$BURST + $RATE x $t + ($N - 1) x $RATE x (2 x $SYNC_MS + $rtt) ms + $BURST/4 = $bound"
echo "# fleet-flood ratio: $(awk -v a="$admitted" -v b="$bound" 'BEGIN { printf "%.4f", a / b }')"
pass_if "the sprayed heavy source is held to the bound with N x theta" le "$admitted" "$bound"
pass_if "the heavy source gets at least 0.9 x (burst + rate x t)" \
	le "$(awk -v b=$BURST -v r=$RATE -v t="$t" 'BEGIN { print 0.9 * (b + r * t) }')" "$admitted"

# A rule on the transport header shared by the fleet (issue 22, item 6):
# one source sends SYNs and UDP, sprayed over both boxes. Its SYNs meet the
# SYN rule, its UDP the default: two policies, two keys in Redis, named by
# the rule's match ("p:tcp,tcp-flags=syn:SRC/32") and as before
# ("p:SRC/32"). Box 2 has a rule more (not the fleet's, never met here)
# ahead of it, so that the SYN rule sits on another slot there: the name
# must not depend on it. SYNs are held to the SYN rule's fleet bound; the
# UDP, well within the default's, all passes (were both charged to one key,
# the SYNs' usage would hold it).
SRC2=198.18.0.10 SYN_RATE=100 SYN_BURST=100 SYN_PPS=300 UDP_PPS=60
ctl 2 rule add 198.18.0.0/15 --proto udp --dport 9 --rate 1000/s >/dev/null ||
	{ not_ok "add a rule of box 2's own"; exit 1; }
for i in 1 2; do
	ctl "$i" rule add 198.18.0.0/15 --proto tcp --tcp-flags syn --rate "$SYN_RATE/s" \
		--burst "$SYN_BURST" --fleet on >"$D/ruleadd$i" 2>&1 ||
		{ not_ok "rule add --proto tcp --tcp-flags syn --fleet on on box $i"; \
			diag "$(cat "$D/ruleadd$i")"; exit 1; }
	bx "$i" nft add counter netdev fleet syn2 &&
		bx "$i" nft add rule netdev fleet in ip saddr "$SRC2" \
			"tcp flags & (syn | ack) == syn" counter name syn2 &&
		bx "$i" nft add counter netdev fleet udp2 &&
		bx "$i" nft add rule netdev fleet in ip saddr "$SRC2" udp dport 5001 \
			counter name udp2 || { not_ok "nft counts on box $i"; exit 1; }
done
ok "rule add CIDR --proto tcp --tcp-flags syn --fleet on is taken"
slot() {
	# the innermost object holding both the SYN match and a slot: the rule
	ctl "$1" rule list -j | jq -r '[.. | objects |
		select([.. | .tcp_flags? // empty] | index("syn") != null) |
		[.. | .slot? // empty] | first // empty] | last // "?"'
}
s1=$(slot 1) s2=$(slot 2)
diag "the SYN rule's slot: box 1 $s1, box 2 $s2"
differ() { [ "$1" != "?" ] && [ "$1" != "$2" ]; }
pass_if "the SYN rule sits on another slot on box 2" differ "$s1" "$s2"
counted() { bx "$2" nft list counter netdev fleet "$1" | awk '$1 == "packets" { print $2 }'; }

redis-cli -s "$SOCK" monitor >"$D/monitor2" 2>&1 &
MON_PID=$!
sleep 0.3
for i in 1 2; do
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" -s "$SRC2" \
		-d "198.18.$i.2" -p tcp --dport 443 -r "$SYN_PPS" -t "$SECS" -j \
		>"$D/syn$i.json" 2>"$D/syn$i.err" &
	PIDS+=($!)
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" -s "$SRC2" \
		-d "198.18.$i.2" --dport 5001 -r "$UDP_PPS" -t "$SECS" -j \
		>"$D/udp$i.json" 2>"$D/udp$i.err" &
	PIDS+=($!)
done
st=0
for pid in "${PIDS[@]}"; do wait "$pid" || st=1; done
PIDS=()
if [ $st != 0 ]; then
	not_ok "the SYN and UDP generators ran"
	diag "$(cat "$D"/syn*.err "$D"/udp*.err)"
	exit 1
fi
sleep 0.5
kill "$MON_PID" 2>/dev/null
wait "$MON_PID" 2>/dev/null
MON_PID=

syn_key="sluice:{$FLEET}:p:tcp,tcp-flags=syn:$SRC2/32"
def_key="sluice:{$FLEET}:p:$SRC2/32"
keys2=$(grep -oE "sluice:\{$FLEET\}:[pb]:[^\" ]*$SRC2/32" "$D/monitor2" | sort | uniq -c)
diag "keys of $SRC2 in Redis (MONITOR):" "$(echo "$keys2" | tr '\n' ';')"
pass_if "the SYN rule's key is named by its match: $syn_key" grep -qF "\"$syn_key\"" "$D/monitor2"
pass_if "its UDP is charged to the default's key: $def_key" grep -qF "\"$def_key\"" "$D/monitor2"
pass_if "no other key of $SRC2" [ "$(echo "$keys2" | grep -c .)" = 2 ]
pass_if "redis-cli KEYS sees the SYN rule's key" \
	[ "$(redis-cli -s "$SOCK" --raw keys "sluice:{$FLEET}:p:tcp,tcp-flags=syn:*")" = "$syn_key" ]

t=$(jq -s 'map(.seconds) | max' "$D"/syn1.json "$D"/syn2.json)
rtt=$(ctl 1 stats -j | jq .fleet.rtt_ms)
syn_in=$(($(counted syn2 1) + $(counted syn2 2)))
syn_sent=$(jq -s 'map(.packets) | add' "$D"/syn1.json "$D"/syn2.json)
udp_in=$(($(counted udp2 1) + $(counted udp2 2)))
udp_sent=$(jq -s 'map(.packets) | add' "$D"/udp1.json "$D"/udp2.json)
bound=$(awk -v b=$SYN_BURST -v r=$SYN_RATE -v t="$t" -v n=$N -v s=$SYNC_MS -v rtt="$rtt" \
	'BEGIN { printf "%.1f", b + r * t + (n - 1) * r * (2 * s + rtt) / 1000 + b / 4 }')
diag "SYNs of $SRC2: $syn_in of $syn_sent admitted (nft), t $t s, bound $bound;" \
	"its UDP: $udp_in of $udp_sent"
pass_if "the sprayed SYNs are held to the SYN rule's fleet bound" le "$syn_in" "$bound"
pass_if "the SYNs get at least 0.9 x (burst + rate x t)" \
	le "$(awk -v b=$SYN_BURST -v r=$SYN_RATE -v t="$t" 'BEGIN { print 0.9 * (b + r * t) }')" \
	"$syn_in"
pass_if "its UDP, within the default's limit, all passes (not held by the SYNs' usage)" \
	le "$((udp_sent * 98 / 100))" "$udp_in"

[ "$TAP_FAILED" = 0 ] || diag "$(tail -5 "${RUNLOG[1]}")"
exit $((TAP_FAILED > 0))

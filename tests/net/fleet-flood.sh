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
[ "$TAP_FAILED" = 0 ] || diag "$(tail -5 "${RUNLOG[1]}")"
exit $((TAP_FAILED > 0))

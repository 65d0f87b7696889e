#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The fleet agent against one local Redis and a three-shard Redis Cluster:
# keys synced per second, the time one sync takes, the agent's CPU, and
# Redis's calls and CPU per sync and per key, at 10k, 100k and 1M active
# keys (issue 11, item 6; issue 24, item 5). Rows, each a load on a Redis:
#   today   every key one packet a sync, --sync-threshold 0: every key with
#           usage pushed at every sync, as before thresholds
#   heavy   every key 50 packets a sync (past the default threshold): all
#           pushed, under the default --sync-threshold
#   flood   a spoofed flood: 1,000,000 keys of one packet each, written
#           once, and 1,000 heavy ones refilled every sync, at the default
#           interval (100 ms) and threshold, over 150 syncs (15 s and more:
#           the held keys' --sync-max-age push, at 10 s, is in the span)
# on "one" (a unix socket, as before) or "cluster" (three primaries,
# redis-server --cluster-enabled yes joined by redis-cli --cluster create,
# on 198.18.250.1:7001-7003 in the agent's namespace; the agent given
# --redis-cluster). Redis's figures are the sums over its nodes.
#
# One redis-server of its own (a unix socket in a temporary directory, no
# persistence), one veth in a namespace of its own with sluice attached
# (--fleet-keys N + N/4, the default policy made fleet-wide), and the real
# agent: `sluice run IFACE --redis unix:SOCK --fleet NAME --sync-interval I
# --sync-keys N`. Traffic cannot make a million keys active every sync here,
# so `sluice-bench fleetfill` writes usage into N keys of sluice_fleet_use
# after every sync (tools/bench/fleetfill.c: the keys are the datapath's,
# map keys only), and marks the syncs measured. Over those:
#   keys/s          keys pushed / seconds between the first and last sync's end
#   sync ms         the agent's own last_rtt_ns of each sync (the Redis part:
#                   one pipelined round trip of N / 256 EVALSHA calls), mean
#   agent CPU       utime + stime of the `sluice run` process, % of one core
#   Redis CPU       INFO cpu used_cpu_sys + used_cpu_user, % of one core, and
#                   us per key pushed
#   calls / sync    INFO commandstats: EVALSHA calls / syncs, and the commands
#                   the script ran (GET + SET per key; TIME, ZADD, PERSIST,
#                   ZRANGEBYSCORE, ZCARD, HSET per call) / syncs
# Usage: fleet.sh OUTDIR (root; BUILD and BENCH from run.sh; FLEET_N, default
# "10000 100000 1000000", the sizes of the today and heavy rows; FLEET_LOADS,
# default "today heavy flood"; FLEET_REDIS, default "one cluster"; FLEET_SYNCS,
# syncs measured per size). Writes OUTDIR/fleet.md and OUTDIR/fleet.json.
set -euo pipefail

OUT=$1
BUILD=${BUILD:-build}
BENCH=${BENCH:-$BUILD/sluice-bench}
SIZES=${FLEET_N:-10000 100000 1000000}
LOADS=${FLEET_LOADS:-today heavy flood}
REDISES=${FLEET_REDIS:-one cluster}
FLOOD_ONE=1000000 FLOOD_HEAVY=1000
CIP=198.18.250.1
CPORTS="7001 7002 7003"
SLUICE=$BUILD/sluice
SLUICECTL=$BUILD/sluicectl
export SLUICE SLUICECTL BUILD

for t in redis-server redis-cli jq; do
	command -v "$t" >/dev/null || {
		echo "fleet: $t is missing: run 'sudo make deps'" >&2
		exit 1
	}
done

# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh
# shellcheck source=tests/lib/netns.sh
source tests/lib/netns.sh
netns_setup bf 61 >/dev/null || { echo "fleet: could not build the lab" >&2; exit 1; }
# No frame reaches the receiver: the only active keys are fleetfill's.
ip -n "$NS_TX" link set "$IF_TX" down
T=$NETNS_TMP
SOCK=$T/redis.sock
FLEET=bench$$
AGENT=
# Before netns_cleanup's own (which stops redis-server, a netns_bg job):
# best effort, every step whatever the one before did.
netns_extra_cleanup() {
	set +e
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	[ -n "${FILL:-}" ] && kill "$FILL" 2>/dev/null
}

netns_bg redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' \
	--appendonly no --daemonize no --logfile "$T/redis.log"
for _ in $(seq 100); do
	redis-cli -s "$SOCK" ping >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -s "$SOCK" ping >/dev/null || { echo "fleet: redis-server did not start:" \
	"$(tail -3 "$T/redis.log")" >&2; exit 1; }
redis_version=$(redis-cli -s "$SOCK" info server | awk -F: '/^redis_version/ { print $2 }' |
	tr -d '\r')

# The cluster: three primaries in the agent's namespace (the cluster bus is
# TCP: no unix socket), a shard down not stopping the others.
rx_exec ip link set lo up
rx_exec ip addr add "$CIP/32" dev lo
case " $REDISES " in *" cluster "*)
	for p in $CPORTS; do
		mkdir -p "$T/n$p"
		netns_bg nsenter --net="/var/run/netns/$NS_RX" redis-server --bind "$CIP" \
			--port "$p" --protected-mode no --save '' --appendonly no --dir "$T/n$p" \
			--cluster-enabled yes --cluster-config-file "$T/n$p/nodes.conf" \
			--cluster-require-full-coverage no --daemonize no --logfile "$T/n$p.log"
	done
	for p in $CPORTS; do
		for _ in $(seq 100); do
			rx_exec redis-cli -h "$CIP" -p "$p" ping >/dev/null 2>&1 && break
			sleep 0.05
		done
	done
	# shellcheck disable=SC2046 # one word a node
	rx_exec redis-cli --cluster create $(for p in $CPORTS; do echo "$CIP:$p"; done) \
		--cluster-yes >"$T/create.log" 2>&1 || {
		echo "fleet: the cluster was not created: $(tail -3 "$T/create.log")" >&2
		exit 1
	}
	for _ in $(seq 200); do
		[ "$(for p in $CPORTS; do rx_exec redis-cli -h "$CIP" -p "$p" cluster info; done |
			grep -c cluster_state:ok)" = 3 ] && break
		sleep 0.05
	done
	;;
esac

# rall KIND CMD...: CMD on every node of Redis KIND (one, cluster), its output
rall() {
	local kind=$1 p
	shift
	if [ "$kind" = one ]; then
		redis-cli -s "$SOCK" "$@"
	else
		for p in $CPORTS; do rx_exec redis-cli -h "$CIP" -p "$p" "$@"; done
	fi
}

# interval_of N: the sync interval, long enough for a sync of N keys and a
# refill with room to spare; timeout_of N: the agent's --redis-timeout.
interval_of() {
	if [ "$1" -le 20000 ]; then echo 100ms
	elif [ "$1" -le 200000 ]; then echo 1s
	else echo 10s; fi
}
timeout_of() {
	if [ "$1" -le 20000 ]; then echo 1s
	elif [ "$1" -le 200000 ]; then echo 5s
	else echo 30s; fi
}
# syncs_of N: syncs measured; warm_of N: syncs before (the first makes the
# keys in Redis)
syncs_of() {
	if [ -n "${FLEET_SYNCS:-}" ]; then echo "$FLEET_SYNCS"
	elif [ "$1" -le 20000 ]; then echo 30
	elif [ "$1" -le 200000 ]; then echo 5
	else echo 4; fi
}
warm_of() { if [ "$1" -le 200000 ]; then echo 2; else echo 1; fi; }

# redis_snap KIND FILE: Redis's CPU and command counters, "name calls"
# lines, summed over its nodes.
redis_snap() {
	local f=$2
	rall "$1" info all | tr -d '\r' | awk -F'[:,=]' '
		/^used_cpu_(sys|user):/ { cpu += $2 }
		/^cmdstat_/ { sub(/^cmdstat_/, "", $1); calls[$1] += $3 }
		END { for (c in calls) print c, calls[c]; printf "cpu %.6f\n", cpu }' >"$f"
	if ! grep -q '^evalsha ' "$f" || ! grep -q '^cpu ' "$f"; then
		echo "fleet: Redis's INFO had no EVALSHA counter or no CPU time:" \
			"$(tr '\n' ' ' <"$f")" >&2
		exit 1
	fi
}
# redis_delta A B NAME...: the calls of the commands NAME... from A to B
redis_delta() {
	local a=$1 b=$2
	shift 2
	awk -v names=" $* " 'FNR == NR { a[$1] = $1 == "cpu" ? $2 : int($2); next }
		index(names, " " $1 " ") { s += $2 - a[$1] }
		END { printf "%.6f\n", s }' "$a" "$b"
}

rows=()
# row LOAD KIND N: one row of the table (see the top)
row() {
	local load=$1 kind=$2 n=$3 iv to syncs fk thr=() fillo=() where=() warm
	local line got starts kv fleetj evalsha keyops other rcpu
	iv=$(interval_of "$n")
	to=$(timeout_of "$n")
	syncs=$(syncs_of "$n")
	warm=$(warm_of "$n")
	fk=$((n + n / 4))
	case $load in
	today) thr=(--sync-threshold 0) ;;
	heavy) fillo=(-k 50) ;;
	flood)
		iv=100ms to=30s syncs=${FLEET_SYNCS:-150} warm=2
		fillo=(-k 50 -o "$FLOOD_ONE")
		;;
	esac
	if [ "$kind" = one ]; then where=(--redis "unix:$SOCK"); else
		where=(--redis-cluster "$CIP:7001"); fi
	echo "fleet: $load on $kind Redis: $n active keys, sync every $iv" >&2
	rx_sluice attach "$IF_RX" --rate 100/s --burst 10 --fleet-keys "$fk" >/dev/null
	rx_ctl -i "$IF_RX" set --fleet on >/dev/null
	rall "$kind" flushall >/dev/null
	# The agent; its own reports once a minute (none in the span).
	# (nsenter execs sluice: $! is the agent's own PID, as fleetfill reads it)
	# today: --sync-threshold 0, every key pushed at every sync (fleetfill's
	# one packet a key stays under the default threshold).
	nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$IF_RX" "${where[@]}" \
		--fleet "$FLEET" --sync-interval "$iv" --redis-timeout "$to" --sync-keys "$n" \
		"${thr[@]}" --interval 1m >"$T/run-$n.log" 2>&1 &
	AGENT=$!
	coproc FILLER { exec nsenter --net="/var/run/netns/$NS_RX" "$BENCH" fleetfill \
		-i "$IF_RX" -n "$n" -p "$AGENT" -w "$warm" -s "$syncs" -T 90 "${fillo[@]}" \
		2>"$T/fill-$n.err"; }
	FILL=$FILLER_PID
	# bash drops FILLER once fleetfill exits: read through a copy
	exec {FROM_FILL}<&"${FILLER[0]}"
	# "start" (again when a span was spoiled), then the results
	got='' starts=0
	while read -r line <&"$FROM_FILL"; do
		if [ "$line" = start ]; then
			redis_snap "$kind" "$T/r0"
			starts=$((starts + 1))
		else
			redis_snap "$kind" "$T/r1"
			got=1
			break
		fi
	done
	exec {FROM_FILL}<&-
	if ! wait "$FILL" || [ -z "$got" ]; then
		echo "fleet: fleetfill at $n keys: $(cat "$T/fill-$n.err")" >&2
		tail -5 "$T/run-$n.log" >&2
		exit 1
	fi
	FILL=
	if [ "$starts" -gt 1 ]; then
		echo "fleet: $n keys: the span started $starts times:" >&2
		cat "$T/fill-$n.err" >&2
	fi
	fleetj=$(rx_ctl -i "$IF_RX" stats -j | jq -c .fleet)
	[ "$(jq .agent_pid <<<"$fleetj")" = "$AGENT" ] || {
		echo "fleet: the agent's PID is $(jq .agent_pid <<<"$fleetj"), not $AGENT:" \
			"its CPU was read from the wrong process" >&2
		exit 1
	}
	kill -INT "$AGENT"
	wait "$AGENT" || true
	AGENT=
	rx_sluice detach "$IF_RX" >/dev/null
	# key=value pairs of fleetfill's line into f_KEY
	for kv in $line; do
		printf -v "f_${kv%%=*}" %s "${kv#*=}"
	done
	evalsha=$(redis_delta "$T/r0" "$T/r1" evalsha evalsha_ro)
	keyops=$(redis_delta "$T/r0" "$T/r1" get set)
	other=$(redis_delta "$T/r0" "$T/r1" time zadd zremrangebyscore pexpire zcard)
	rcpu=$(redis_delta "$T/r0" "$T/r1" cpu)
	# One TSV row: n interval timeout syncs keys seconds keys/s syncs/s
	# keys/s-in-a-sync rtt rtt_max agent% agent_ms/sync redis% redis_ms/sync
	# refill% refill_ms evalsha/sync keyops/sync other/sync spans-started-again
	rows+=("$(awk -v load="$load" -v kind="$kind" -v n="$n" -v iv="$iv" -v to="$to" -v syncs="$f_syncs" -v keys="$f_keys" \
		-v secs="$f_seconds" -v rtt="$f_rtt_ms" -v rttmax="$f_rtt_max_ms" \
		-v acpu="$f_agent_cpu" -v fcpu="$f_fill_cpu" -v fill="$f_fill_ms" \
		-v ev="$evalsha" -v ko="$keyops" -v ot="$other" -v rc="$rcpu" \
		-v again=$((starts - 1)) 'BEGIN {
		OFS = "\t"
		print load, kind, n, iv, to, syncs, keys, sprintf("%.3f", secs),
			sprintf("%.0f", keys / secs),
			sprintf("%.2f", syncs / secs), sprintf("%.0f", keys / syncs / (rtt / 1000)),
			sprintf("%.1f", rtt), sprintf("%.1f", rttmax),
			sprintf("%.1f", 100 * acpu / secs), sprintf("%.0f", 1000 * acpu / syncs),
			sprintf("%.1f", 100 * rc / secs), sprintf("%.0f", 1000 * rc / syncs),
			sprintf("%.1f", 100 * fcpu / secs), sprintf("%.1f", fill),
			sprintf("%.0f", ev / syncs), sprintf("%.0f", ko / syncs),
			sprintf("%.0f", ot / syncs), again, sprintf("%.2f", 1e6 * rc / keys) }')")
	echo "fleet: $n keys: ${rows[-1]}" >&2
	echo "fleet: agent state after: $fleetj" >&2
}
for load in $LOADS; do
	for kind in $REDISES; do
		[ "$load" = today ] && [ "$kind" != one ] && continue
		if [ "$load" = flood ]; then
			row "$load" "$kind" $((FLOOD_ONE + FLOOD_HEAVY))
		else
			for n in $SIZES; do row "$load" "$kind" "$n"; done
		fi
	done
done

kernel=$(uname -r)
when=$(date -u +%Y-%m-%dT%H:%MZ)
{
	printf '{"kernel":"%s","cpus":%d,"redis":"%s","date":"%s","rows":[' "$kernel" "$(nproc)" \
		"$redis_version" "$when"
	sep=
	for r in "${rows[@]}"; do
		IFS=$'\t' read -r load kind n iv to syncs keys secs kps sps cap rtt rttmax acpu ams \
			rcpu rms fcpu fill ev ko ot again rus <<<"$r"
		printf '%s{"load":"%s","redis_kind":"%s","redis_us_per_key":%s,' "$sep" "$load" \
			"$kind" "$rus"
		printf '"keys":%s,"interval":"%s","redis_timeout":"%s","syncs":%s,"pushed":%s,' \
			"$n" "$iv" "$to" "$syncs" "$keys"
		printf '"seconds":%s,"keys_per_s":%s,"syncs_per_s":%s,"keys_per_s_in_sync":%s,' \
			"$secs" "$kps" "$sps" "$cap"
		printf '"rtt_ms":%s,"rtt_max_ms":%s,"agent_cpu_pct":%s,"agent_cpu_ms_per_sync":%s,' \
			"$rtt" "$rttmax" "$acpu" "$ams"
		printf '"redis_cpu_pct":%s,"redis_cpu_ms_per_sync":%s,"fill_cpu_pct":%s,' \
			"$rcpu" "$rms" "$fcpu"
		printf '"fill_ms":%s,"evalsha_per_sync":%s,"key_ops_per_sync":%s,' "$fill" "$ev" "$ko"
		printf '"other_ops_per_sync":%s,"spans_started_again":%s}' "$ot" "$again"
		sep=,
	done
	printf ']}\n'
} >"$OUT/fleet.json"
# The table: tools/bench/render.py, from the JSON.
tools/bench/render.py fleet "$OUT/fleet.json" "$OUT/fleet.md"
cat "$OUT/fleet.md"

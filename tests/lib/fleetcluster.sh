# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
# A Redis Cluster beside two fleet boxes (tests/net/fleet-cluster.sh,
# fleet-failover.sh): source it after fleetboxes.sh. The script names the
# cluster's namespace NS_R, its address RIP, the fleet FLEET, its arrays
# PIDS (generators), RPIDS and RPID (the nodes' pids, the latter by port),
# and for bound() RATE, BURST, N, SYNC_MS and RTT, before it calls these.
#
#   rx CMD...            CMD in the cluster's namespace
#   rcli ARGS            redis-cli -h RIP ARGS there
#   cluster_lab NAME     the gateway, two boxes (boxes_lab 2 NAME) with their
#                        nft ingress, and NS_R reached from each box
#   node_up PORT         a cluster node on RIP:PORT (cluster-node-timeout
#                        1000 ms: a shard down is known, and a replica
#                        promoted, about 2 s after its primary dies)
#   LIVE                 the node the helpers below ask (7001; a script that
#                        kills it names another)
#   key_name KEY         a fleet key as the agent names it in the cluster
#   key_slot KEY         its slot
#   owner SLOT           the port of the slot's primary now
#   primaries            the ports of the primaries now
#   replica_of PORT      the port of the replica of the primary at PORT
#   spray_at SRC BOX PPS PPS from SRC for SECS from the gateway to BOX
#   spray SRC BOX...     the same, PPS to each BOX
#   gens_done            wait for the generators; 1 if one failed
#   counted SRC BOX...   what nft counted from SRC at those boxes
#   secs_of SRC          the generators' span for SRC, the longest
#   bound T EXTRA        the synced fleet bound over T seconds, EXTRA more:
#                        burst + rate x t + (N - 1) x rate x (2 S + RTT) + burst / 4

rx() { nsenter --net="/var/run/netns/$NS_R" "$@"; }
rcli() { rx redis-cli -h "$RIP" "$@"; }

cluster_lab() {
	boxes_lab 2 "$1" && boxes_ingress 2 || return 1
	boxes_redis_ns "$NS_R" "$RIP" 2
}

# A shard down must not stop the others (cluster-require-full-coverage no).
node_up() {
	local port=$1
	mkdir -p "$D/n$port"
	# nsenter itself, not rx: $! is then redis-server's own pid (nsenter
	# execs it), the one to kill -9
	nsenter --net="/var/run/netns/$NS_R" redis-server --bind "$RIP" --port "$port" \
		--protected-mode no --save '' --appendonly no --dir "$D/n$port" \
		--cluster-enabled yes --cluster-config-file "$D/n$port/nodes.conf" \
		--cluster-node-timeout 1000 --cluster-require-full-coverage no \
		--daemonize no >"$D/redis$port.log" 2>&1 &
	RPIDS+=($!)
	# shellcheck disable=SC2034 # the script's, by port
	RPID[$port]=$!
}

LIVE=7001
# A fleet key's group is CRC16 of its name mod 1024 (= its own slot mod
# 1024), its slot that of the hash tag {FLEET#gG} (user/lib/redis_cluster.c).
key_group() { echo $(($(rcli -p "$LIVE" cluster keyslot "$1") % 1024)); }
key_name() { echo "sluice:{$FLEET#g$(key_group "$1")}:$1"; }
key_slot() { rcli -p "$LIVE" cluster keyslot "$(key_name "$1")"; }
owner() {
	rcli -p "$LIVE" cluster slots | awk -v s="$1" '
		{ v[++n] = $0 }
		END {
			for (i = 1; i + 3 <= n; i++)
				if (v[i] ~ /^[0-9]+$/ && v[i + 1] ~ /^[0-9]+$/ && v[i + 2] ~ /\./ &&
				    v[i + 3] ~ /^[0-9]+$/ && s >= v[i] + 0 && s <= v[i + 1] + 0) {
					print v[i + 3]; exit
				}
		}'
}
primaries() {
	rcli -p "$LIVE" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ {
		sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2 }' | sort
}
replica_of() {
	local id
	id=$(rcli -p "$1" cluster myid)
	rcli -p "$LIVE" cluster nodes | awk -v id="$id" '$3 ~ /slave/ && $4 == id {
		sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2; exit }'
}

spray_at() {
	gx "$SLUICE_GEN" -i "${IFT[$2]}" -s "$1" -d "198.18.$2.2" -r "$3" -t "$SECS" -j \
		>"$D/gen-$1-$2.json" 2>"$D/gen-$1-$2.err" &
	PIDS+=($!)
}
spray() {
	local src=$1 i
	shift
	for i in "$@"; do spray_at "$src" "$i" "$PPS"; done
}
gens_done() {
	local st=0 pid
	for pid in "${PIDS[@]}"; do wait "$pid" || st=1; done
	PIDS=()
	[ $st = 0 ] || { diag "$(cat "$D"/gen*.err)"; return 1; }
}
counted() {
	local src=$1 i s=0
	shift
	for i in "$@"; do s=$((s + $(nft_counted "$src" "$i"))); done
	echo $s
}
secs_of() { jq -s 'map(.seconds) | max' "$D"/gen-"$1"-*.json; }
bound() {
	awk -v b="$BURST" -v r="$RATE" -v t="$1" -v n="$N" -v s="$SYNC_MS" -v rtt="$RTT" -v x="$2" \
		'BEGIN { printf "%.1f", b + r * t + (n - 1) * r * (2 * s + rtt) / 1000 + b / 4 + x }'
}

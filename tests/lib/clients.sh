# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A web server, a legitimate client and a flood, for tests/net/clients.sh and
# the bench's clients part (tools/bench/clients.sh); source it after
# tests/lib/netns.sh and netns_setup PREFIX N.
#
#   clients_lab          turns the lab into four namespaces on one switch:
#       NS_RX   the server, 198.18.N.2 on IF_RX (where a limiter attaches);
#       NS_TX   the switch: a bridge (IF_BR) whose ports are IF_TX and the
#               switch ends of the client's and the flood's veths;
#       NS_CLI  the client, 198.18.N.1 on IF_CLI (the lab's ADDR4_TX);
#       NS_FLD  the flood, 198.18.N.3 on IF_FLD: it sends from spoofed
#               sources, and the server's route to 198.18.0.0/15 (no
#               default route) points at it, so the server's answers to those
#               sources (SYN-ACKs, port unreachables) end there, dropped: the
#               flood namespace forwards nothing.
#     The namespaces join NETNS_DEL: the lab's cleanup kills what runs in them
#     and deletes them.
#   clients_nginx        nginx (Debian's) in NS_RX, in the foreground of a
#                        background job, on ADDR4_RX:80 (one connection per
#                        request: keepalive_timeout 0, so every request is a
#                        SYN) and ADDR4_RX:8080 (keep-alive, for wrk); waits
#                        until it answers
#   clients_curl N RATE  curl in NS_CLI: N requests to port 80 at RATE a second,
#                        each a new connection, each given 3 s; prints
#                        "COMPLETED N MEDIAN_MS P99_MS" (latency of the completed
#                        ones: connect + request + answer)
#   clients_syn_flood COUNT PPS SRC3   trafgen in NS_FLD, in the background
#                        (CLIENTS_SYN_PID): COUNT SYNs to ADDR4_RX:80 at PPS, each
#                        from SRC3.X (SRC3 three bytes, "198.19.N"), X random per
#                        packet (256 sources), source port and sequence random
#   clients_syn_stop     stops it now (it reports what it sent until then)
#   clients_syn_wait     waits for it; CLIENTS_SYN_SENT is what trafgen sent,
#                        CLIENTS_SYN_SECS from its start to its end (wall clock: its
#                        own report counts the time of its sender, which sleeps)
#   clients_udp_flood ARGS   sluice-gen out of IF_FLD to ADDR4_RX, to the
#                        server's MAC through the switch, source port 53, in the
#                        background (gen_bg udp): ARGS are sluice-gen's (-s, -r, -t,
#                        --keys); gen_wait udp afterwards

CLIENTS_SYN_PID=
CLIENTS_SYN_SENT=
CLIENTS_SYN_SECS=
CLIENTS_SYN_T0=

clients_lab() {
	local n=${ADDR4_RX#198.18.} p
	n=${n%.2}
	NS_CLI="${NS_TX%-tx-*}-cli-$$"
	NS_FLD="${NS_TX%-tx-*}-fld-$$"
	p=${IF_TX%t"$$"}
	IF_BR="${p}b$$"
	IF_CLI="${p}c$$"
	IF_FLD="${p}f$$"
	ADDR4_FLD="198.18.$n.3"
	ip netns add "$NS_CLI" && NETNS_DEL+=("$NS_CLI") || return 1
	ip netns add "$NS_FLD" && NETNS_DEL+=("$NS_FLD") || return 1
	# The switch: IF_TX loses the lab's address (the client has it now).
	ip -n "$NS_TX" addr flush dev "$IF_TX" &&
		ip -n "$NS_TX" link add "$IF_BR" type bridge &&
		ip -n "$NS_TX" link set "$IF_TX" master "$IF_BR" || return 1
	ip link add "${IF_CLI}s" netns "$NS_TX" type veth peer name "$IF_CLI" netns "$NS_CLI" &&
		ip link add "${IF_FLD}s" netns "$NS_TX" type veth peer name "$IF_FLD" \
			netns "$NS_FLD" || return 1
	ip -n "$NS_TX" link set "${IF_CLI}s" master "$IF_BR" &&
		ip -n "$NS_TX" link set "${IF_FLD}s" master "$IF_BR" || return 1
	# sluice-gen's frames reach the switch's end of IF_FLD only while it runs
	# NAPI: GRO on (see tests/lib/netns.sh).
	ip netns exec "$NS_TX" ethtool -K "${IF_FLD}s" gro on >/dev/null 2>&1
	ip -n "$NS_CLI" addr add "$ADDR4_TX/24" dev "$IF_CLI" &&
		ip -n "$NS_FLD" addr add "$ADDR4_FLD/24" dev "$IF_FLD" || return 1
	for p in "$NS_CLI" "$NS_FLD"; do
		ip netns exec "$p" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
		ip -n "$p" link set lo up || return 1
	done
	ip netns exec "$NS_TX" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
	for p in "$IF_BR" "${IF_CLI}s" "${IF_FLD}s"; do
		ip -n "$NS_TX" link set "$p" up || return 1
	done
	ip -n "$NS_CLI" link set "$IF_CLI" up && ip -n "$NS_FLD" link set "$IF_FLD" up &&
		ip -n "$NS_RX" route add 198.18.0.0/15 via "$ADDR4_FLD" dev "$IF_RX" || return 1
	MAC_RX=$(ip -n "$NS_RX" -br link show dev "$IF_RX" | awk '{ print $3 }')
	MAC_FLD=$(ip -n "$NS_FLD" -br link show dev "$IF_FLD" | awk '{ print $3 }')
	[ -n "$MAC_RX" ] && [ -n "$MAC_FLD" ]
}

clients_nginx() {
	local _
	cat >"$NETNS_TMP/nginx.conf" <<-EOF
		daemon off;
		master_process on;
		worker_processes 1;
		user root;
		pid $NETNS_TMP/nginx.pid;
		error_log $NETNS_TMP/nginx-error.log warn;
		events { worker_connections 4096; }
		http {
			access_log off;
			client_body_temp_path $NETNS_TMP/nginx-body;
			proxy_temp_path $NETNS_TMP/nginx-proxy;
			fastcgi_temp_path $NETNS_TMP/nginx-fastcgi;
			uwsgi_temp_path $NETNS_TMP/nginx-uwsgi;
			scgi_temp_path $NETNS_TMP/nginx-scgi;
			default_type text/plain;
			server {
				listen $ADDR4_RX:80 backlog=4096;
				keepalive_timeout 0;
				location / { return 200 "sluice\n"; }
			}
			server {
				listen $ADDR4_RX:8080 backlog=4096;
				keepalive_timeout 60s;
				keepalive_requests 100000000;
				location / { return 200 "sluice\n"; }
			}
		}
	EOF
	netns_bg ip netns exec "$NS_RX" nginx -p "$NETNS_TMP" -c "$NETNS_TMP/nginx.conf" \
		-e "$NETNS_TMP/nginx-error.log"
	for _ in $(seq 50); do
		ip netns exec "$NS_CLI" curl -s -m 1 -o /dev/null "http://$ADDR4_RX:8080/" &&
			ip netns exec "$NS_CLI" curl -s -m 1 -o /dev/null "http://$ADDR4_RX/" &&
			return 0
		sleep 0.1
	done
	cat "$NETNS_TMP/nginx-error.log" >&2 2>/dev/null
	return 1
}

clients_curl() {
	local n=$1 rate=$2
	# One curl, N URLs: --rate starts them at RATE a second, one at a time,
	# and goes on past a failed one (its code is 000).
	ip netns exec "$NS_CLI" curl -s --rate "$rate/s" -m 3 -o /dev/null \
		-w '%{http_code} %{time_total}\n' "http://$ADDR4_RX/[1-$n]" 2>/dev/null |
		awk -v n="$n" '
			$1 == 200 { lat[++ok] = $2 * 1000 }
			END {
				for (i = 2; i <= ok; i++) {
					v = lat[i]
					for (j = i - 1; j >= 1 && lat[j] > v; j--) lat[j + 1] = lat[j]
					lat[j + 1] = v
				}
				med = ok ? lat[int(ok / 2) + 1] : -1
				i = int(ok * 0.99) + 1
				if (i > ok) i = ok
				p99 = ok ? lat[i] : -1
				printf "%d %d %.2f %.2f\n", ok, n, med, p99
			}'
}

clients_syn_flood() {
	local count=$1 pps=$2 src=$3 mac_d mac_s
	mac_d=$(sed 's/^/0x/; s/:/, 0x/g' <<<"$MAC_RX")
	mac_s=$(sed 's/^/0x/; s/:/, 0x/g' <<<"$MAC_FLD")
	# An IPv4 header and a TCP SYN, checksums computed per packet (the
	# source changes): sources SRC3.X, X random, ports and sequence random.
	cat >"$NETNS_TMP/syn.cfg" <<-EOF
		{
			$mac_d, $mac_s, c16(0x0800),
			0x45, 0x00, c16(40), drnd(2), 0x40, 0x00, 64, 6, csumip(14, 33),
			${src//./, }, drnd(1),
			${ADDR4_RX//./, },
			drnd(2), c16(80), drnd(4), c32(0), 0x50, 0x02, c16(64240),
			csumtcp(14, 34), c16(0)
		}
	EOF
	# --no-sock-mem: leave the machine's socket memory sysctls as they are
	# (0.6.8 does not take its short form, -A); --notouch-irq: its IRQs.
	ip netns exec "$NS_FLD" trafgen --no-sock-mem --notouch-irq -P 1 -o "$IF_FLD" \
		-i "$NETNS_TMP/syn.cfg" -n "$count" -b "${pps}pps" >"$NETNS_TMP/trafgen.out" 2>&1 &
	CLIENTS_SYN_PID=$!
	CLIENTS_SYN_T0=$EPOCHREALTIME
	NETNS_PIDS+=("$CLIENTS_SYN_PID")
}

# trafgen's sender is a child it forks per CPU (-P 1: one): both are told.
clients_syn_stop() {
	pkill -INT -P "$CLIENTS_SYN_PID" 2>/dev/null
	kill -INT "$CLIENTS_SYN_PID" 2>/dev/null
}

clients_syn_wait() {
	wait "$CLIENTS_SYN_PID"
	# Its report starts each line with a carriage return.
	CLIENTS_SYN_SENT=$(tr -d '\r' <"$NETNS_TMP/trafgen.out" |
		awk '$2 == "packets" && $3 == "outgoing" { n = $1 } END { print n }')
	CLIENTS_SYN_SECS=$(awk -v a="$CLIENTS_SYN_T0" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%.3f", b - a }')
	[ -n "$CLIENTS_SYN_SENT" ] || { cat "$NETNS_TMP/trafgen.out" >&2; return 1; }
}

clients_udp_flood() {
	NS_TX=$NS_FLD IF_TX=$IF_FLD gen_bg udp -d "$ADDR4_RX" --dst-mac "$MAC_RX" \
		--sport 53 "$@"
}

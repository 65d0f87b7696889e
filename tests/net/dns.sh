#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A real DNS server behind a rule on its port: dnsmasq (Debian's) answers a
# test zone in the receiver's namespace, sluice on its veth holds
# '0.0.0.0/0 --proto udp --dport 53 --rate 50/s --burst 50' (a bucket per
# source). A well-behaved client (Python's socket: 20 queries a second for
# 4 s, each waited for; the completion rate and the median and 99th
# percentile latency are in the TAP lines) keeps getting every answer while
# one source floods the port at 1000 packets a second: the flood's source is
# held to its share, counted under the rule, and the client's own key never
# drops. (The SYN-flood half of the issue's proof, with TCP clients, is
# tests/net/clients.sh; nftables and hashlimit beside it, the bench's clients
# part.)
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "dns" dnsmasq python3 jq
netns_need_sluice "dns"

netns_setup dns 48 || { not_ok "build the namespaces and the veth pair"; exit 1; }
netns_extra_cleanup() { [ -n "${DNSMASQ_PID:-}" ] && kill "$DNSMASQ_PID" 2>/dev/null; }

FLOODER=198.18.48.99 RULE="0.0.0.0/0 --proto udp --dport 53"
ip netns exec "$NS_RX" dnsmasq --keep-in-foreground --no-resolv --no-hosts --no-poll \
	--bind-interfaces --listen-address="$ADDR4_RX" --port 53 --user=root \
	--address=/www.sluice.test/198.18.48.80 --pid-file="$NETNS_TMP/dnsmasq.pid" \
	--log-facility="$NETNS_TMP/dnsmasq.log" &
DNSMASQ_PID=$!

# query N PPS: N queries for www.sluice.test at PPS a second from ADDR4_TX,
# each waited for up to 0.5 s; prints "answered of N, median and p99 ms".
query() {
	ip netns exec "$NS_TX" python3 - "$ADDR4_TX" "$ADDR4_RX" "$1" "$2" <<'PY'
import socket, struct, sys, time
src, dst, n, pps = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
s.settimeout(0.5)
name = b"".join(bytes([len(p)]) + p for p in b"www.sluice.test".split(b".")) + b"\0"
lat, ok = [], 0
t0 = time.monotonic()
for i in range(n):
    q = struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + struct.pack("!HH", 1, 1)
    t = time.monotonic()
    s.sendto(q, (dst, 53))
    try:
        while True:
            r = s.recv(512)
            if struct.unpack("!H", r[:2])[0] == i:
                break
        if struct.unpack("!H", r[6:8])[0] >= 1 and r.endswith(bytes([198, 18, 48, 80])):
            ok += 1
            lat.append((time.monotonic() - t) * 1000)
    except socket.timeout:
        pass
    nxt = t0 + (i + 1) / pps
    time.sleep(max(0, nxt - time.monotonic()))
lat.sort()
med = lat[len(lat) // 2] if lat else -1
p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else -1
print("%d %d %.2f %.2f" % (ok, n, med, p99))
PY
}

for i in $(seq 50); do
	[ -n "$(query 1 10 | awk '$1 == 1')" ] && break
	sleep 0.1
done
read -r got n med p99 <<<"$(query 20 20)"
[ "$got" = 20 ] && ok "dnsmasq answers the client with no limiter ($got of $n, median $med ms, p99 $p99 ms)" ||
	{ not_ok "dnsmasq answers the client with no limiter ($got of $n)"; diag "$(cat "$NETNS_TMP/dnsmasq.log" 2>/dev/null)"; exit 1; }

expect_status 0 "attach" rx_sluice attach "$IF_RX" --rate 100000/s --burst 100000 || exit 1
expect_status 0 "rule add $RULE --rate 50/s --burst 50" \
	rx_ctl -i "$IF_RX" rule add $RULE --rate 50/s --burst 50 || exit 1

# The flood: 1000 queries a second (garbage to dnsmasq, a packet to sluice)
# from one source for the client's 4 s and a little more.
gen_bg flood -s "$FLOODER" -d "$ADDR4_RX" --dport 53 -r 1000 -t 5
sleep 0.3
read -r got n med p99 <<<"$(query 80 20)"
gen_wait flood || not_ok "send the flood with sluice-gen"
if [ "$got" = "$n" ]; then
	ok "under a 20x flood the well-behaved client gets every answer: $got of $n, median $med ms, p99 $p99 ms"
else
	not_ok "under a 20x flood the well-behaved client gets every answer ($got of $n)"
fi
row=$(rx_ctl -i "$IF_RX" -j rule list | jq -c --arg m "$RULE" '.[] | select(.match == $m) | {passed, dropped}')
passed=$(jq -r .passed <<<"$row") dropped=$(jq -r .dropped <<<"$row")
# The flooder's share over 5 s: a burst of 50 and 50/s; the client's 80 pass.
if [ "$dropped" -ge 4000 ] 2>/dev/null && [ "$passed" -le $((80 + 50 + 50 * 6)) ]; then
	ok "the rule holds the flooding source to its share (passed $passed with the client's 80, dropped $dropped)"
else
	not_ok "the rule holds the flooding source to its share"; diag "rule counters: $row"
fi
out=$(rx_ctl -i "$IF_RX" show "$ADDR4_TX")
grep -q "^l4 rule   $RULE" <<<"$out" && grep -q '^dropped   0' <<<"$out" &&
	ok "the client's own key under the rule never dropped" ||
	{ not_ok "the client's own key under the rule never dropped"; diag "$out"; }
rx_sluice detach "$IF_RX" >/dev/null 2>&1
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice in a lab, in about 20 seconds: `sudo make demo` (builds first).
#
# Two network namespaces joined by a veth pair, addresses from the
# benchmarking range 198.18.0.0/15 only, no route anywhere else. sluice runs
# on the receiving end; sluice-gen floods it from one source while a second,
# quiet source keeps talking. Everything made here is removed on exit,
# Ctrl-C included.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
source tests/lib/tap.sh
source tests/lib/netns.sh

RATE=1000 BURST=200
FLOOD=198.18.1.10 QUIET=198.18.1.20
FLOOD_PPS=20000 QUIET_PPS=200

if [ -t 1 ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD= PLAIN=; fi
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
die() { echo "demo: $*" >&2; exit 1; }
# ctl ARGS: show the sluicectl command as a user would type it, run it in
# the receiver's namespace.
ctl() { printf '$ sluicectl %s\n' "$*"; rx_ctl "$@" | sed 's/^/  /'; }

[ "$(id -u)" = 0 ] || die "the demo builds network namespaces and loads XDP: run 'sudo make demo'"
for b in "$SLUICE" "$SLUICECTL" "$SLUICE_GEN"; do
	[ -x "$b" ] || die "$b is missing: run 'make' first (or 'sudo make demo', which builds)"
done
for t in ip nsenter bpftool nft; do
	command -v "$t" >/dev/null || die "'$t' is not installed: run 'sudo make deps'"
done

step "1. A lab: two namespaces and a veth pair"
netns_setup demo || die "could not build the lab (see the message above)"
cat <<EOF
  sender    namespace $NS_TX  $IF_TX  $ADDR4_TX/24
  receiver  namespace $NS_RX  $IF_RX  $ADDR4_RX/24   <- sluice runs here
  Traffic comes from sluice-gen, which injects valid UDP frames on $IF_TX
  (BPF_PROG_TEST_RUN live frames): they reach $IF_RX's XDP hook as a NIC
  would deliver them. Sources: $FLOOD (the flood), $QUIET (quiet).
EOF
# Count at the receiver what got past XDP, per source (nft, netdev ingress).
rx_counter_add flood ip saddr "$FLOOD" && rx_counter_add quiet ip saddr "$QUIET" ||
	die "could not set up the receiver's nft counters"

step "2. sluice run: attach with a limit of $RATE packets/s per source (burst $BURST)"
echo "  Each line below is sluice's report for one second: packets in, passed,"
echo "  dropped, and the sources it dropped most."
# Directly through nsenter (which execs): $! is sluice itself, so the cleanup
# can stop it with SIGINT like a Ctrl-C, and it detaches.
nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$IF_RX" --rate "$RATE/s" \
	--burst "$BURST" --interval 1 > >(sed -u 's/^/  | /') 2>&1 &
RUN_PID=$!
NETNS_PIDS+=("$RUN_PID")
for _ in $(seq 50); do
	[ -e "$RX_PINS/sluice_stats" ] && [ -n "$(xdp_prog_id)" ] && break
	kill -0 "$RUN_PID" 2>/dev/null || die "sluice run exited early (see its output above)"
	sleep 0.1
done
[ -n "$(xdp_prog_id)" ] || die "sluice did not attach to $IF_RX within 5 s"

step "3. The quiet source alone: $QUIET_PPS packets/s for 3 s, well under the limit"
gen_bg quiet1 -s "$QUIET" -d "$ADDR4_RX" -r "$QUIET_PPS" -t 3
gen_wait quiet1 || die "sluice-gen failed"

step "4. A flood from $FLOOD at $FLOOD_PPS packets/s (20x the limit) for 5 s;" \
	"the quiet one goes on"
rx_counter_reset flood >/dev/null
rx_counter_reset quiet >/dev/null
gen_bg flood -s "$FLOOD" -d "$ADDR4_RX" -r "$FLOOD_PPS" -t 5
gen_bg quiet -s "$QUIET" -d "$ADDR4_RX" -r "$QUIET_PPS" -t 5
gen_wait flood && gen_wait quiet || die "sluice-gen failed"
sleep 1.2 # one more report line, after the flood

step "5. What happened"
flood_rx=$(rx_counter flood) quiet_rx=$(rx_counter quiet)
expected=$(awk -v b=$BURST -v r=$RATE -v t="$flood_seconds" 'BEGIN { printf "%d", b + r * t }')
printf '  flood  %s: sent %7d, passed %6d   (at most burst %d + %d/s x %.2f s = %d)\n' \
	"$FLOOD" "$flood_packets" "$flood_rx" "$BURST" "$RATE" "$flood_seconds" "$expected"
printf '  quiet  %s: sent %7d, passed %6d   (nothing lost)\n' "$QUIET" "$quiet_packets" "$quiet_rx"
echo
ctl -i "$IF_RX" top -n 3
echo
ctl -i "$IF_RX" stats
echo
echo "The same counters with bpftool (named fields, one struct per CPU):"
printf '$ bpftool map dump pinned %s/sluice_stats\n' "$RX_PINS"
bpftool map dump pinned "$RX_PINS/sluice_stats" | sed 's/^/  /'

step "6. Clean up: sluice detaches on Ctrl-C (SIGINT); the lab goes away"
kill -INT "$RUN_PID" 2>/dev/null
wait "$RUN_PID" 2>/dev/null
sleep 0.1 # let the report's last lines through
if [ -z "$(xdp_prog_id)" ] && [ ! -e "$RX_PINS" ]; then
	echo "  sluice detached from $IF_RX and its pins are gone."
else
	echo "  sluice was still attached to $IF_RX: the cleanup detaches it."
fi
echo "  Namespaces $NS_TX and $NS_RX are removed on exit."

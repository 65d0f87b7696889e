#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A `sluice run` left running does not grow (issue 20, A3): every report
# asks whether the limiter is still attached, and that question must open
# nothing it keeps. The libxdp of Debian 12 (1.3.1) kept one program fd per
# question, so a run at --interval 100ms under 'prlimit --nofile=80' died
# ("no longer attached ... detached") within seconds and the interface was
# left unlimited. Here:
#   1. that run keeps reporting and limiting;
#   2. thousands of reports (SLUICE_TEST_INTERVAL, a test hook under the
#      100 ms floor of --interval), with the counters scraped in a loop, the
#      config reloaded by SIGHUP and 'sluice status' and sluicectl asking:
#      the run's fds stay the same and its RSS flat;
#   3. the same through a libxdp dispatcher (the kernel here refuses a real
#      one, so it is made by hand: libxdp's own xdp-dispatcher.o attached,
#      sluice's program pinned as its component where libxdp pins them);
#   4. the fleet agent syncing every 10 ms through a Redis outage.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "run leaks" curl
netns_need_sluice "run leaks"

N=26
# A small key table: a scrape, status and stats count its keys by walking
# it, and the set table's walk reads every way (1M a family at the default:
# about 30 ms a scrape), which would make the thousands below slow, not
# leaky.
KEYS="--max-keys 4096"
netns_setup rl $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
SRC=198.18.$N.7
XDPFS=
netns_extra_cleanup() {
	[ -n "$XDPFS" ] && rm -rf "$XDPFS"
	[ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null
	# the hand-made dispatcher of part 3, if a failure left it
	ip -n "$NS_RX" link set dev "$IF_RX" xdpgeneric off 2>/dev/null
}
rx_counter_add src ip saddr "$SRC" || { not_ok "count at the receiver with nft"; exit 1; }

# fds: the run's open fds, the least of five looks 0.1 s apart (a scrape's
# connection or a reload's files may be open for a moment).
fds() {
	local i n least=
	for i in 1 2 3 4 5; do
		n=$(ls "/proc/$RUN_PID/fd" 2>/dev/null | wc -l)
		[ -z "$least" ] || [ "$n" -lt "$least" ] && least=$n
		[ $i = 5 ] || sleep 0.1
	done
	echo "$least"
}
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$RUN_PID/status" 2>/dev/null; }
alive() { kill -0 "$RUN_PID" 2>/dev/null; }
# run_bg NAME ENV... -- ARGS: `sluice run ARGS` in the receiver's namespace
# with ENV, in the background (env, nsenter and prlimit exec: RUN_PID is
# sluice's own pid).
run_bg() {
	local name=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	RUN_OUT=$NETNS_TMP/$name.out
	env "${envs[@]}" nsenter --net="/var/run/netns/$NS_RX" "$@" >"$RUN_OUT" 2>&1 &
	RUN_PID=$!
	NETNS_PIDS+=("$RUN_PID")
}
stop_run() {
	kill -INT "$RUN_PID" 2>/dev/null
	run_exit 10
}
# flat NAME BASE_FDS BASE_RSS: the run is alive, has no more than BASE_FDS
# fds, and its RSS grew by at most 1 MiB since BASE_RSS (KiB).
flat() {
	local f r
	f=$(fds) r=$(rss)
	diag "$1: fds $2 -> $f, RSS $3 -> $r KiB, $(reports) reports"
	if alive && [ -n "$f" ] && [ "$f" -le "$2" ]; then
		ok "$1: the run's fds stay at $2"
	else
		not_ok "$1: the run's fds stay at $2"
		diag "$(grep -v ' pps;' "$RUN_OUT" | tail -5)"
	fi
	if alive && [ -n "$r" ] && [ "$r" -le $(($3 + 1024)) ]; then
		ok "$1: the run's RSS stays flat (within 1 MiB)"
	else
		not_ok "$1: the run's RSS stays flat (within 1 MiB)"
	fi
}
# limits NAME: a flood of 1000 packets in 0.5 s from SRC is held near
# burst 100 + 100/s x 0.5 s (the policy of the runs here).
limits() {
	local got
	rx_counter_reset src
	tx_gen -s "$SRC" -d "$ADDR4_RX" -n 1000 -r 2000 >/dev/null 2>&1
	sleep 0.2
	got=$(rx_counter src)
	diag "$got of 1000 passed (expected about 150)"
	if [ -n "$got" ] && [ "$got" -ge 100 ] && [ "$got" -le 250 ]; then ok "$1"
	else not_ok "$1"; fi
}

# ---- 1. under 80 fds, at --interval 100ms ----

run_bg prlimit -- prlimit --nofile=80:80 "$SLUICE" run "$IF_RX" $KEYS --rate 100/s --interval 100ms
run_reporting 1 || { not_ok "sluice run under prlimit reports"; diag "$(cat "$RUN_OUT")"; }
base=$(fds)
sleep 8
diag "under prlimit --nofile=80: fds $base -> $(fds) after $(reports) reports"
if alive && ! grep -q "no longer attached" "$RUN_OUT"; then
	ok "under prlimit --nofile=80 the run goes on reporting for 8 s (80 reports)"
else
	not_ok "under prlimit --nofile=80 the run goes on reporting for 8 s (80 reports)"
	diag "$(grep -v ' pps;' "$RUN_OUT" | tail -5)"
fi
if [ -n "$(xdp_prog_id)" ]; then ok "the run's limiter is still attached"
else not_ok "the run's limiter is still attached"; fi
limits "and it still limits (a flood from $SRC held to about burst + rate x t)"
stop_run
[ "$RUN_ST" = 0 ] || { not_ok "the run under prlimit exits 0 on SIGINT"; diag "exit $RUN_ST"; }

# ---- 2. thousands of reports, scraped, reloaded, asked ----

CONF=$NETNS_TMP/run.conf
printf 'set --rate 100/s --burst 100\nrule add 198.18.%s.128/25 --rate 10/s\n' "$N" >"$CONF"
run_bg busy SLUICE_TEST_INTERVAL=2ms -- "$SLUICE" run "$IF_RX" $KEYS --config "$CONF" \
	--metrics 127.0.0.1:0 --interval 100ms
run_reporting 1 || { not_ok "sluice run --metrics reports"; diag "$(cat "$RUN_OUT")"; exit 1; }
URL=$(sed -n 's/^serving the counters at //p' "$RUN_OUT")
scrape() { rx_exec curl -sf -o /dev/null --max-time 5 "$URL"; }
# load K: K scrapes (fails when one fails), then K/10 SIGHUPs, then K/20
# status and sluicectl calls. (Apart: a scrape during a reload may be
# answered 500, "the rules kept changing while they were read"; that is
# the reload's business, not this test's.)
load() {
	local k=$1 i bad=0
	for ((i = 0; i < k; i++)); do
		scrape || bad=$((bad + 1))
	done
	for ((i = 0; i < k / 10; i++)); do
		kill -HUP "$RUN_PID"
		sleep 0.01
	done
	for ((i = 0; i < k / 20; i++)); do
		rx_sluice status "$IF_RX" >/dev/null 2>&1
		rx_ctl -i "$IF_RX" stats >/dev/null 2>&1
	done
	[ $bad = 0 ] || diag "$bad of $k scrapes failed"
	[ $bad = 0 ]
}
# Warm up: the first scrapes and reloads make MHD's thread's arena and the
# allocator's pools, once.
load 300 || not_ok "warm-up: every scrape answers"
sleep 0.5
base_fds=$(fds) base_rss=$(rss) base_reports=$(reports)
if load 1500; then ok "1500 scrapes answer (then 150 reloads and 75 status calls)"
else not_ok "1500 scrapes answer (then 150 reloads and 75 status calls)"; fi
# and reports alone, until thousands more
for ((i = 0; i < 300; i++)); do
	[ "$(reports)" -ge $((base_reports + 3000)) ] && break
	sleep 0.1
done
sleep 0.5
if [ "$(reports)" -ge $((base_reports + 3000)) ]; then
	ok "the run made 3000 reports more ($(($(reports) - base_reports)))"
else
	not_ok "the run made 3000 reports more ($(($(reports) - base_reports)))"
fi
if grep -q "reloaded $IF_RX from" "$RUN_OUT"; then ok "SIGHUP reloaded the config"
else not_ok "SIGHUP reloaded the config"; diag "$(grep -v ' pps;' "$RUN_OUT" | tail -5)"; fi
flat "thousands of reports, scrapes, reloads and status calls" "$base_fds" "$base_rss"
stop_run
[ "$RUN_ST" = 0 ] || { not_ok "the busy run exits 0 on SIGINT"; diag "exit $RUN_ST"; }

# ---- 3. through a dispatcher (made by hand) ----

DISPATCHER=/usr/lib/$(gcc -print-multiarch 2>/dev/null)/bpf/xdp-dispatcher.o
[ -f "$DISPATCHER" ] || DISPATCHER=$(ls /usr/lib/*/bpf/xdp-dispatcher.o 2>/dev/null | head -1)
if [ -z "$DISPATCHER" ] || [ ! -f "$DISPATCHER" ] || ! command -v bpftool >/dev/null; then
	skip "libxdp's xdp-dispatcher.o or bpftool is not installed" "a run through a dispatcher"
else
	XDPFS=/sys/fs/bpf/sluice-test-runleak-$$
	mkdir -p "$XDPFS/xdp"
	expect_status 0 "attach --rate 100/s --burst 100" \
		rx_sluice attach "$IF_RX" $KEYS --rate 100/s --burst 100 --mode skb
	ours=$(xdp_prog_id)
	# libxdp's dispatcher at the interface, sluice's program its
	# component 0, pinned where libxdp pins one (LIBXDP_BPFFS/xdp).
	bpftool prog load "$DISPATCHER" "$XDPFS/disp" type xdp >/dev/null 2>&1 &&
		rx_exec ip -force link set dev "$IF_RX" xdpgeneric pinned "$XDPFS/disp"
	disp=$(xdp_prog_id)
	ifindex=$(ip -n "$NS_RX" -j link show dev "$IF_RX" | sed 's/.*"ifindex":\([0-9]*\).*/\1/')
	mkdir -p "$XDPFS/xdp/dispatch-$ifindex-$disp" &&
		bpftool prog pin id "$ours" "$XDPFS/xdp/dispatch-$ifindex-$disp/prog0-prog"
	export LIBXDP_BPFFS=$XDPFS
	st=$(rx_sluice status "$IF_RX" 2>&1)
	if [ -n "$disp" ] && [ "$disp" != "$ours" ] &&
		grep -q "program $ours, in libxdp's dispatcher" <<<"$st"; then
		ok "status finds sluice's program $ours in the dispatcher $disp"
	else
		not_ok "status finds sluice's program $ours in the dispatcher $disp"
		diag "$st"
	fi
	run_bg disp SLUICE_TEST_INTERVAL=2ms -- "$SLUICE" run "$IF_RX"
	run_reporting 200 ||
		{ not_ok "a run through the dispatcher reports"; diag "$(cat "$RUN_OUT")"; }
	base_fds=$(fds) base_rss=$(rss) base_reports=$(reports)
	for ((i = 0; i < 300; i++)); do
		[ "$(reports)" -ge $((base_reports + 3000)) ] && break
		rx_sluice status "$IF_RX" >/dev/null 2>&1
		sleep 0.05
	done
	flat "3000 reports through the dispatcher" "$base_fds" "$base_rss"
	# Its component's link pin removed: no longer attached, said.
	rm -f "$XDPFS/xdp/dispatch-$ifindex-$disp/prog0-prog"
	if run_exit 5 && [ "$RUN_ST" = 1 ] && grep -q "no longer attached" "$RUN_OUT"; then
		ok "with its component gone from the dispatcher the run says so and exits 1"
	else
		not_ok "with its component gone from the dispatcher the run says so and exits 1"
		diag "exit $RUN_ST: $(grep -v ' pps;' "$RUN_OUT" | tail -3)"
	fi
	unset LIBXDP_BPFFS
	ip -n "$NS_RX" link set dev "$IF_RX" xdpgeneric off
	rm -rf "$XDPFS"
	XDPFS=
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
fi

# ---- 4. the fleet agent ----

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	skip "redis-server is not installed" "the fleet agent's fds and memory stay flat"
	tap_done
	exit
fi
SOCK=$NETNS_TMP/redis.sock
redis_up() {
	local i
	redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' \
		--appendonly no >>"$NETNS_TMP/redis.log" 2>&1 &
	REDIS_PID=$!
	for i in $(seq 100); do
		redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.05
	done
	return 1
}
redis_up || { not_ok "start redis-server"; exit 1; }
expect_status 0 "attach a fleet policy" rx_sluice attach "$IF_RX" $KEYS --rate 100/s --burst 100
rx_ctl -i "$IF_RX" set --fleet on || not_ok "set --fleet on"
run_bg fleet SLUICE_TEST_INTERVAL=5ms -- "$SLUICE" run "$IF_RX" --redis "unix:$SOCK" \
	--fleet "leak$$" --sync-interval 10ms
run_reporting 100 || { not_ok "a fleet run reports"; diag "$(cat "$RUN_OUT")"; }
# Keys to sync: 50 sources, a second.
flood() { tx_gen -s "198.18.$N.64/26" -d "$ADDR4_RX" -n "$1" -r 2000 >/dev/null 2>&1; }
flood 2000
# One outage first: the reconnecting path makes its allocations once too.
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null
sleep 0.5
redis_up || not_ok "start redis-server again"
sleep 1
base_fds=$(fds) base_rss=$(rss)
flood 4000
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null
sleep 1
redis_up || not_ok "start redis-server again"
back=$(wc -l <"$RUN_OUT")
flood 4000
# The reports since Redis came back say synced, the latest whole one too
# (the run's output is a file: its last line may be caught half-written).
synced_after() {
	local whole=1
	[ -z "$(tail -c 1 "$RUN_OUT")" ] || whole=2
	tail -n +"$((back + 1))" "$RUN_OUT" | grep -q "fleet leak$$ synced" &&
		tail -n "$whole" "$RUN_OUT" | head -1 | grep -q "fleet leak$$ synced"
}
for i in $(seq 50); do synced_after && break; sleep 0.1; done
if synced_after; then
	ok "the agent syncs again after the outage"
else
	not_ok "the agent syncs again after the outage"
	diag "$(tail -2 "$RUN_OUT")"
fi
flat "the fleet agent, 10 ms syncs and an outage" "$base_fds" "$base_rss"
stop_run
tap_done

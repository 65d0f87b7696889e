#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A stopped writer (here: flock(1) holding the interface's lock, an flock on
# its pin directory, as a writer that was stopped half way would) never
# blocks a reader: rule list, stats, top, show and status finish at once.
# Writers wait at most SLUICE_LOCK_TIMEOUT seconds for it, then exit 1
# naming the holder's pid, having changed nothing; once the holder is gone,
# they work again.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "locks" jq
netns_need_sluice "locks"
if ! command -v flock >/dev/null; then
	skip "'flock' (util-linux) is not installed" "locks"
	exit 0
fi

netns_setup lk 28 || { not_ok "build the namespaces and the veth pair"; exit 1; }

HOLDER=
# stop_holder: end the flock(1) that holds the lock, and its sleep (which
# holds it too: it inherits the locked descriptor).
stop_holder() {
	local kids
	[ -n "$HOLDER" ] || return 0
	kids=$(ps -o pid= --ppid "$HOLDER" 2>/dev/null)
	kill $kids "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null
	HOLDER=
}
netns_extra_cleanup() {
	stop_holder
}
# Where a sluice of before the per-namespace pins put them: the cleanup
# removes them if this test's sluice made them (pins_watch).
pins_watch "/sys/fs/bpf/sluice/$IF_RX" "$NS_RX"

rate_of() { jq -r '.[] | select(.match == "default") | .packets.rate' <<<"$1" 2>/dev/null; }
rate_now() { rate_of "$(rx_ctl -i "$IF_RX" -j rule list 2>/dev/null)"; }

# sluicectl and sluice in the receiver's namespace, as commands (for timeout).
RXC=(nsenter --net="/var/run/netns/$NS_RX" "$SLUICECTL")
RXS=(nsenter --net="/var/run/netns/$NS_RX" "$SLUICE")

# timed LIMIT CMD...: run CMD, killed after LIMIT seconds; sets OUT, ST and
# SECS (how long it took).
timed() {
	local limit=$1 t0
	shift
	t0=$EPOCHREALTIME
	OUT=$(timeout "$limit" "$@" 2>&1)
	ST=$?
	SECS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
}

expect_status 0 "attach --rate 100/s" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
expect_status 0 "rule add 198.18.28.0/24 --rate 10/s" \
	rx_ctl -i "$IF_RX" rule add 198.18.28.0/24 --rate 10/s
tx_gen -s 198.18.28.1 -d "$ADDR4_RX" -n 30 >/dev/null 2>&1

LOCK_DIR=$RX_PINS
if [ ! -d "$LOCK_DIR" ]; then
	diag "no pin directory $RX_PINS: locking where an older sluice pins"
	LOCK_DIR=/sys/fs/bpf/sluice/$IF_RX
fi

# ---- a writer stopped while it holds the lock ----

flock "$LOCK_DIR" sleep 30 &
HOLDER=$!
NETNS_PIDS+=("$HOLDER")
for _ in $(seq 50); do
	flock -n "$LOCK_DIR" true 2>/dev/null || break
	sleep 0.05
done
if ! flock -n "$LOCK_DIR" true 2>/dev/null; then
	ok "flock(1) (pid $HOLDER) holds the lock of $LOCK_DIR"
else
	not_ok "flock(1) (pid $HOLDER) holds the lock of $LOCK_DIR"
fi

# Readers: a reader that took the lock would wait SLUICE_LOCK_TIMEOUT (4 s)
# and fail, or (an older sluice) wait until killed.
reader() {
	local name=$1
	shift
	timed 5 env SLUICE_LOCK_TIMEOUT=4 "$@"
	if [ "$ST" = 0 ] && awk -v s="$SECS" 'BEGIN { exit !(s < 2) }'; then
		ok "$name, the interface's lock held: finishes at once (exit 0, ${SECS} s)"
	else
		not_ok "$name, the interface's lock held: finishes at once (exit 0, < 2 s)"
		diag "exit status $ST after $SECS s: $OUT"
	fi
}
reader "sluicectl rule list" "${RXC[@]}" -i "$IF_RX" rule list
if grep -q "198.18.28.0/24" <<<"$OUT"; then
	ok "rule list read the rules while the lock is held"
else
	not_ok "rule list read the rules while the lock is held"
fi
reader "sluicectl stats" "${RXC[@]}" -i "$IF_RX" stats
reader "sluicectl top" "${RXC[@]}" -i "$IF_RX" top
reader "sluicectl show" "${RXC[@]}" -i "$IF_RX" show 198.18.28.1
reader "sluice status" "${RXS[@]}" status
reader "sluice status -j IFACE" "${RXS[@]}" status -j "$IF_RX"

# Writers: SLUICE_LOCK_TIMEOUT=1, then exit 1 naming the holder.
writer() {
	local name=$1
	shift
	timed 8 env SLUICE_LOCK_TIMEOUT=1 "$@"
	if [ "$ST" = 1 ] && awk -v s="$SECS" 'BEGIN { exit !(s < 5) }'; then
		ok "$name: gives up, exit 1 after SLUICE_LOCK_TIMEOUT=1 (${SECS} s)"
	else
		not_ok "$name: gives up, exit 1 after SLUICE_LOCK_TIMEOUT=1"
		diag "exit status $ST after $SECS s (want 1, within a few seconds): $OUT"
	fi
	if grep -q "pid $HOLDER\b" <<<"$OUT"; then
		ok "$name: names the holder (pid $HOLDER)"
	else
		not_ok "$name: names the holder (pid $HOLDER)"
		diag "$OUT"
	fi
}
writer "sluicectl set --rate 5/s, the interface's lock held" "${RXC[@]}" -i "$IF_RX" set --rate 5/s
writer "sluicectl rule add, the interface's lock held" \
	"${RXC[@]}" -i "$IF_RX" rule add 198.18.29.0/24 --rate 5/s
CONF=$NETNS_TMP/lk.conf
printf '%s\n' "set --rate 7/s" >"$CONF"
writer "sluice reload, the interface's lock held" "${RXS[@]}" reload "$IF_RX" --config "$CONF"
list=$(rx_ctl -i "$IF_RX" -j rule list 2>&1)
if [ "$(rate_of "$list")" = 100/s ] && ! grep -q "198.18.29.0/24" <<<"$list"; then
	ok "the writers that gave up changed nothing (rate 100/s, no new rule)"
else
	not_ok "the writers that gave up changed nothing (rate 100/s, no new rule)"
	diag "$list"
fi

# ---- the holder goes away ----

stop_holder
timed 8 "${RXC[@]}" -i "$IF_RX" set --rate 5/s
if [ "$ST" = 0 ] && [ "$(rate_now)" = 5/s ]; then
	ok "after the holder is gone, sluicectl set --rate 5/s works"
else
	not_ok "after the holder is gone, sluicectl set --rate 5/s works"
	diag "exit status $ST: $OUT"
fi

# A holder that lets go within the timeout is waited for, not failed.
flock "$LOCK_DIR" sleep 1 &
HOLDER=$!
NETNS_PIDS+=("$HOLDER")
for _ in $(seq 50); do
	flock -n "$LOCK_DIR" true 2>/dev/null || break
	sleep 0.02
done
timed 15 env SLUICE_LOCK_TIMEOUT=10 "${RXC[@]}" -i "$IF_RX" rule add 198.18.29.0/24 \
	--rate 5/s
wait "$HOLDER" 2>/dev/null
HOLDER=
if [ "$ST" = 0 ] && grep -q '"198.18.29.0/24"' <<<"$(rx_ctl -i "$IF_RX" -j rule list 2>&1)"
then
	ok "a writer waits for a holder that lets go in time (rule add, exit 0, ${SECS} s)"
else
	not_ok "a writer waits for a holder that lets go in time (rule add, exit 0)"
	diag "exit status $ST after $SECS s: $OUT"
fi
# ---- attach, detach and reload of a namespace serialize on its pin root ----

stop_holder
if [ -d "$RX_NETNS_DIR" ]; then
	flock "$RX_NETNS_DIR" sleep 30 &
	HOLDER=$!
	NETNS_PIDS+=("$HOLDER")
	for _ in $(seq 50); do
		flock -n "$RX_NETNS_DIR" true 2>/dev/null || break
		sleep 0.05
	done
	prog=$(xdp_prog_id)
	writer "sluice detach, the namespace's lock held" "${RXS[@]}" detach "$IF_RX"
	writer "sluice attach, the namespace's lock held" "${RXS[@]}" attach "$IF_RX"
	if [ -n "$prog" ] && [ "$(xdp_prog_id)" = "$prog" ] && [ -e "$RX_PINS/sluice_config" ]
	then
		ok "the detach and attach that gave up left the limiter as it was"
	else
		not_ok "the detach and attach that gave up left the limiter as it was"
		diag "program '$prog' before, '$(xdp_prog_id)' after; $(ls "$RX_PINS" 2>&1)"
	fi
	stop_holder
else
	not_ok "the namespace's pin directory $RX_NETNS_DIR exists"
fi
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Config files and reloads, with real traffic counted at the receiver:
#  - a reload whose rules did not change leaves them in force (a deny rule
#    still denies, a rate rule still holds a fresh source to its burst): the
#    same file again, a file whose `set` line alone changed, `sluice attach
#    --config` on the attached limiter, and `sluicectl -b` of a `set`;
#  - a file rewritten in place (truncated, then written) while reloads run is
#    never applied half written: a reload applies it whole or is refused,
#    naming write-then-rename;
#  - a --config that is a FIFO is refused at once (exit status 2) by reload,
#    attach and run, and on SIGHUP `sluice run` says so and reports on, and
#    SIGTERM stops it;
#  - `sluice reload IF` with no file names --config FILE;
#  - `sluicectl -b -` reads standard input.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "reload" timeout
netns_need_sluice "reload"

N=58
DENY=198.18.$N.3
netns_setup rl $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
T=$NETNS_TMP
ctl() { rx_ctl -i "$IF_RX" "$@"; }
rx_counter_add deny ip saddr "$DENY" || { not_ok "count at the receiver with nft"; exit 1; }

# conf RATE: the default at RATE, a deny rule, a rate rule keyed per /32.
conf() {
	printf 'set --rate %s --burst 200\nrule add %s/32 --deny\n' "$1" "$DENY"
	printf 'rule add 198.18.%s.64/26 --rate 10/s --burst 10 --prefix 32\n' $N
}
conf 100/s >"$T/f.conf"
expect_status 0 "sluice attach --config (a deny rule, a rate rule of burst 10)" \
	rx_sluice attach "$IF_RX" --config "$T/f.conf" || exit 1

# in_force WHAT: the deny source passes nothing, and a fresh source of the
# rate rule passes its burst (10 of 30), not the default's (200).
SRC=64
in_force() {
	local d r
	SRC=$((SRC + 1))
	rx_counter_add "r$SRC" ip saddr "198.18.$N.$SRC" && rx_counter_reset deny || return 1
	tx_gen -s "$DENY" -d "$ADDR4_RX" -n 30 -r 1000 >/dev/null &&
		tx_gen -s "198.18.$N.$SRC" -d "$ADDR4_RX" -n 30 -r 1000 >/dev/null || return 1
	sleep 0.1
	d=$(rx_counter deny) r=$(rx_counter "r$SRC")
	if [ "$d" = 0 ] && [ "$r" -ge 10 ] && [ "$r" -le 12 ]; then
		ok "$1: the rules are in force (deny 0 of 30, rate 10/s burst 10: $r of 30)"
	else
		not_ok "$1: the rules are in force"
		diag "the deny source passed $d of 30, a fresh source of the rate rule $r of 30" \
			"(want 0, and 10 to 12)"
	fi
}
in_force "after attach --config"
expect_status 0 "reload the same file" rx_sluice reload "$IF_RX" --config "$T/f.conf"
in_force "after a reload of the same file"
conf 150/s >"$T/g.conf"
expect_status 0 "reload a file whose set line alone changed" \
	rx_sluice reload "$IF_RX" --config "$T/g.conf"
in_force "after a reload that changed the set line"
expect_status 0 "sluice attach --config on the attached limiter" \
	rx_sluice attach "$IF_RX" --config "$T/f.conf"
in_force "after attach --config on the attached limiter"
echo "set --rate 120/s" >"$T/set.conf"
expect_status 0 "sluicectl -b with a set line" ctl -b "$T/set.conf"
in_force "after sluicectl -b of a set"

# ---- a file rewritten in place while reloads run ----
# Two versions of 5,000 rules, written in place by one process that pauses
# half way (as a slow generator would, longer than the file takes to settle),
# with a pause between versions. A reload that reads the file half written
# would remove the rules it did not see.
big() {
	awk -v r="$1" -v n=$N 'BEGIN {
		printf "set --rate 100/s --burst 200\nrule add 198.18.%d.3/32 --deny\n", n
		for (i = 0; i < 5000; i++) {
			printf "rule add 198.19.%d.%d/32 --rate %s\n", int(i / 256), i % 256, r
			if (i == 2499) { fflush(); system("sleep 0.15") }
		} }'
}
big 10/s >"$T/big.conf"
expect_status 0 "reload 5,001 rules" rx_sluice reload "$IF_RX" --config "$T/big.conf"
rewrite() { while :; do big 20/s >"$T/big.conf"; sleep 0.3; big 10/s >"$T/big.conf"; sleep 0.3; done; }
rewrite &
writer=$!
NETNS_PIDS+=("$writer")
applied=0 refused=0 partial=0
for i in $(seq 10); do
	out=$(rx_sluice reload "$IF_RX" --config "$T/big.conf" 2>&1)
	st=$?
	case $st/$out in
	"0/"*"big.conf: 0 rules added, 0 removed,"*) applied=$((applied + 1)) ;;
	"1/"*"being written"*"rename it into place"*) refused=$((refused + 1)) ;;
	*) partial=$((partial + 1)); diag "reload $i: exit status $st: $out" ;;
	esac
done
kill "$writer"
wait "$writer" 2>/dev/null
if [ $partial = 0 ] && [ $applied -ge 1 ]; then
	ok "a file rewritten in place: no reload applied it half written" \
		"($applied applied whole, $refused refused)"
else
	not_ok "a file rewritten in place: no reload applied it half written"
	diag "$applied applied whole, $refused refused, $partial otherwise"
fi
n=$(($(ctl -j rule list | grep -o '"match":' | wc -l) - 1))
if [ "$n" = 5001 ]; then ok "the 5,001 rules are all there"
else not_ok "the 5,001 rules are all there"; diag "$n rules"; fi

# ---- a FIFO as --config ----
mkfifo "$T/fifo" || { not_ok "mkfifo"; exit 1; }
expect_status 2 "reload --config FIFO: exit status 2, at once" \
	timeout 5 nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" reload "$IF_RX" --config "$T/fifo"
case $OUT in
*"not a regular file (a FIFO)"*) ok "and says it is not a regular file" ;;
*) not_ok "and says it is not a regular file"; diag "$OUT" ;;
esac
expect_status 2 "attach --config FIFO: exit status 2, at once" \
	timeout 5 nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" attach "$IF_RX" --config "$T/fifo"

# ---- reload without a file; sluicectl -b - ----
expect_status 2 "reload with no file: exit status 2" rx_sluice reload "$IF_RX"
case $OUT in
*"/etc/sluice/$IF_RX.conf does not exist"*"--config FILE"*) ok "and names --config FILE" ;;
*) not_ok "and names --config FILE"; diag "$OUT" ;;
esac
expect_status 0 "sluicectl -b - reads standard input" \
	rx_exec "$SLUICECTL" -i "$IF_RX" -b - <<<"rule add 198.18.$N.128/25 --exempt"
if ctl -j rule list | grep -qF "\"198.18.$N.128/25\""; then ok "and applies it"
else not_ok "and applies it"; fi

# ---- sluice run --config: a FIFO at start, and one on SIGHUP ----
expect_status 0 "detach" rx_sluice detach "$IF_RX"
expect_status 2 "run --config FIFO: exit status 2, at once" \
	timeout 5 nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$IF_RX" --config "$T/fifo"
run_start run "$IF_RX" --config "$T/f.conf" --interval 200ms
if run_reporting 1; then ok "run --config FILE attaches and reports"
else not_ok "run --config FILE attaches and reports"; diag "$(cat "$RUN_OUT")"; fi
rm -f "$T/f.conf" && mkfifo "$T/f.conf"
kill -HUP "$RUN_PID"
n0=$(reports)
if run_reporting $((n0 + 3)); then ok "its --config replaced by a FIFO, SIGHUP: run reports on"
else not_ok "its --config replaced by a FIFO, SIGHUP: run reports on"; diag "$(cat "$RUN_OUT")"; fi
if grep -q "f.conf is not a regular file (a FIFO)" "$RUN_OUT"; then ok "and says why it did not reload"
else not_ok "and says why it did not reload"; diag "$(cat "$RUN_OUT")"; fi
kill -TERM "$RUN_PID"
if run_exit 5; then ok "SIGTERM stops it (exit status $RUN_ST)"
else not_ok "SIGTERM stops it"; diag "$(cat "$RUN_OUT")"; fi
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# test: times nothing
# sluicectl on a shaper (sluice shape attach, -i shape:IFACE): set and rule
# add take --delay and --nodelay and keep every key's queue across a change
# of delay, refuse a delay beyond the burst, one on a window algorithm and
# one that reaches the fq horizon; rule list shows the delay (DELAY column,
# JSON delay/nodelay); after a burst of 30 datagrams into a rule of rate 6/m,
# burst 20, delay 5 (21 sent, 15 of them delayed, 9 dropped) show gives the
# source's queue, and stats (text, -j, --prometheus) the shaper's counters,
# which agree with each other. Needs fq: runs in the qemu guest
# (make test-kernels KERNEL_SUITES=shape).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "sluicectl on a shaper" tc jq
netns_need_sluice "sluicectl on a shaper"

N=12
netns_setup sc $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
# The cleanup detaches the limiter; this test's state is the shaper's.
netns_extra_cleanup() { rx_sluice shape detach "$IF_RX" >/dev/null 2>&1; }

S="shape:$IF_RX"
sctl() { rx_ctl -i "$S" "$@"; }
# srow MATCH: the JSON object of one row of the shaper's 'rule list -j'
srow() { sctl -j rule list | jq -c --arg m "$1" '.[] | select(.match == $m)'; }
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "'$2' != '$3'"; fi; }

# A 10 s interval: what the burst queued takes minutes to drain, so the
# views below read the queue the burst left whatever the guest's speed.
expect_status 0 "sluice shape attach with --delay" \
	rx_sluice shape attach "$IF_RX" --rate 6/m --burst 20 --delay 5 --horizon 300s \
		--max-keys 4096 || exit 1
if rx_exec tc qdisc show dev "$IF_RX" | grep -q "^qdisc fq 51ce: root"; then
	ok "the shaper's fq qdisc is the root"
else
	not_ok "the shaper's fq qdisc is the root"
	diag "$(rx_exec tc qdisc show dev "$IF_RX")"
fi

# ---- the policy: --delay and --nodelay, and what rule list shows ----
def=$(srow default)
same "attach --delay 5: the default policy's delay is 5" "$(jq -c '.packets.delay' <<<"$def")" 5
same "attach --delay 5: not nodelay" "$(jq -c '.packets.nodelay' <<<"$def")" false
tag=$(jq '.tag' <<<"$def")
expect_status 0 "set --delay 8" sctl set --delay 8
def=$(srow default)
same "set --delay 8: the delay is 8" "$(jq -c '.packets.delay' <<<"$def")" 8
same "set --delay 8: the burst is kept" "$(jq -c '.packets.burst' <<<"$def")" 20
same "set --delay 8: the tag is kept (every key's queue)" "$(jq '.tag' <<<"$def")" "$tag"
expect_status 0 "set --nodelay" sctl set --nodelay
def=$(srow default)
same "set --nodelay: JSON nodelay true, no delay" \
	"$(jq -c '[.packets.nodelay, .packets.delay]' <<<"$def")" '[true,null]'
same "set --nodelay: the tag is kept" "$(jq '.tag' <<<"$def")" "$tag"
OUT=$(sctl rule list 2>&1)
has "rule list: a DELAY column" "DELAY" "$(head -1 <<<"$OUT")"
has "rule list: the default policy's delay reads nodelay" "nodelay" "$(grep '^default' <<<"$OUT")"
expect_status 0 "set --rate 6/m --burst 20 --delay 5 again" sctl set --rate 6/m --burst 20 --delay 5

expect_status 0 "rule add with --delay" \
	sctl rule add "$ADDR4_RX/32" --rate 6/m --burst 20 --delay 5
rule=$(srow "$ADDR4_RX/32")
same "rule add --delay 5: the rule's delay is 5" "$(jq -c '.packets.delay' <<<"$rule")" 5
OUT=$(sctl rule list 2>&1)
col=$(head -1 <<<"$OUT" | awk '{ for (i = 1; i <= NF; i++) if ($i == "DELAY") print i }')
same "rule list: the rule's DELAY is 5" \
	"$(grep "^$ADDR4_RX/32 " <<<"$OUT" | awk -v c="$col" '{ print $c }')" 5

# ---- refusals: exit status 2, the live policy unchanged ----
expect_usage "delay beyond the burst" "is more than --burst 20" sctl set --delay 21
expect_usage "a window algorithm with a delay" "meter" \
	sctl rule add 198.18.$N.64/26 --algo sliding-window --rate 10/s --delay 1
expect_usage "a delay that reaches the horizon" "--horizon" \
	sctl set --rate 6/m --burst 100 --delay 0
expect_usage "a rule whose delay reaches the horizon" "reaches the fq horizon of 5m" \
	sctl rule add 198.18.$N.64/26 --rate 1/m --burst 10
same "the refusals left the default policy as it was" \
	"$(jq -c '[.packets.burst, .packets.delay, .tag]' <<<"$(srow default)")" "[20,5,$tag]"

# ---- a burst: 30 datagrams from the receiver's namespace out of IF_RX ----
# (the neighbour is set, so none waits for ARP; port 9 discards)
mac=$(tx_exec cat "/sys/class/net/$IF_TX/address")
rx_exec ip neigh replace "$ADDR4_TX" lladdr "$mac" dev "$IF_RX" nud permanent
rx_exec bash -c "for i in \$(seq 30); do printf x >/dev/udp/$ADDR4_TX/9; done" 2>/dev/null
rule=$(sctl -j rule list | jq -c --arg m "$ADDR4_RX/32" '.[] | select(.match == $m)')
same "burst of 30 into burst 20: 21 sent (at once or later)" "$(jq '.passed' <<<"$rule")" 21
same "burst of 30 into burst 20: 9 dropped" "$(jq '.dropped' <<<"$rule")" 9

# show: the source's queue (21 x 10 s of work ahead, draining at 6/m)
OUT=$(sctl show "$ADDR4_RX" 2>&1)
has "show: the policy names the rule and its delay" "$ADDR4_RX/32: shape token-bucket 6/m burst 20 delay 5," "$OUT"
has "show: the key's queue" "packets queued ahead" "$OUT"
if grep -Eq "^next +the next packet (waits|is dropped)" <<<"$OUT"; then
	ok "show: what the next packet gets"
else
	not_ok "show: what the next packet gets"
	diag "$OUT"
fi
js=$(sctl -j show "$ADDR4_RX")
q=$(jq -c '.bucket.state.queue' <<<"$js")
ahead=$(jq '.packets_ahead' <<<"$q")
if [ -n "$ahead" ] && [ "$ahead" != null ] && [ "$ahead" -ge 1 ] && [ "$ahead" -le 21 ]; then
	ok "show -j: 1 to 21 packets ahead ($ahead)"
else
	not_ok "show -j: 1 to 21 packets ahead"
	diag "$js"
fi
# The next one waits what is ahead minus the 5 that go at once, or is
# dropped while more than the burst is ahead.
delay=$(jq '.next_delay_ns' <<<"$q")
if [ "$(jq '.next_accepted' <<<"$q")" = false ] || { [ "$ahead" -gt 5 ] && [ "$delay" -gt 0 ]; }; then
	ok "show -j: the next packet is dropped or waits"
else
	not_ok "show -j: the next packet is dropped or waits"
	diag "$js"
fi

# stats: the shaper's counters, in text, JSON and Prometheus, agreeing
js=$(sctl -j stats)
delayed=$(jq '.shape.delayed' <<<"$js")
if [ "$delayed" != null ] && [ "$delayed" -ge 15 ] && [ "$(jq '.shape.shaped' <<<"$js")" -ge 21 ]; then
	ok "stats -j: 21 shaped, the 15 beyond the delay delayed ($delayed)"
else
	not_ok "stats -j: 21 shaped, the 15 beyond the delay delayed"
	diag "$js"
fi
same "stats -j: the histogram holds every delayed packet" \
	"$(jq '[.shape.delay_histogram[]] | add' <<<"$js")" "$delayed"
same "stats -j: nothing dropped at the horizon" "$(jq '.shape.horizon_dropped' <<<"$js")" 0
if [ "$(jq '.shape.max_delay_ns' <<<"$js")" -gt 0 ] &&
	[ "$(jq '.shape.mean_delay_ns' <<<"$js")" -le "$(jq '.shape.max_delay_ns' <<<"$js")" ]; then
	ok "stats -j: a max delay, and the mean no larger"
else
	not_ok "stats -j: a max delay, and the mean no larger"
	diag "$js"
fi
# The text lines are named as stats -j's paths: shape.delayed is
# shape_delayed (a packet may be shaped between two reads: names, not values).
OUT=$(sctl stats 2>&1)
for f in shaped delayed mean_delay_ns max_delay_ns restamped horizon_dropped; do
	if grep -Eq "^shape_$f +[0-9]+$" <<<"$OUT" && [ "$(jq ".shape.$f" <<<"$js")" != null ]; then
		ok "stats: shape_$f, as stats -j's shape.$f"
	else
		not_ok "stats: shape_$f, as stats -j's shape.$f"; diag "$OUT"
	fi
done
# Only the buckets that hold some are printed: a 6/m rate's delays are
# seconds long, so they may all be in the last one (ge_4194304us).
if grep -Eq '^shape_delay_histogram_(lt|ge)_[0-9]+us +[1-9][0-9]*$' <<<"$OUT"; then
	ok "stats: the histogram's lines"
else
	not_ok "stats: the histogram's lines"
	diag "$OUT"
fi
prom=$(sctl stats --prometheus)
has "--prometheus: the delay histogram" "# TYPE sluice_shape_delay_seconds histogram" "$prom"
same "--prometheus: the histogram's count is the delayed packets" \
	"$(grep "^sluice_shape_delay_seconds_count{interface=\"$S\"}" <<<"$prom" | awk '{ print $2 }')" \
	"$delayed"
same "--prometheus: +Inf holds them all" \
	"$(grep "^sluice_shape_delay_seconds_bucket{interface=\"$S\",le=\"+Inf\"}" <<<"$prom" |
		awk '{ print $2 }')" "$delayed"
if grep -q "XDP_" <<<"$(grep '^# HELP sluice_\(passed\|dropped\)_total' <<<"$prom")"; then
	not_ok "--prometheus: a shaper's passed and dropped do not say XDP"
	diag "$(grep '^# HELP' <<<"$prom" | head -5)"
else
	ok "--prometheus: a shaper's passed and dropped do not say XDP"
fi
promtool_check "promtool check metrics accepts the shaper's metrics" <(printf '%s\n' "$prom")

# --watch: the shaper's counters too, each interval (the totals are those of
# stats -j: nothing is sent meanwhile).
out=$(rx_exec timeout -s INT 3.5 "$SLUICECTL" -i "$S" -j stats --watch 1 2>&1)
w=$(tail -1 <<<"$out")
if [ "$(jq '.shape.delayed' <<<"$w" 2>/dev/null)" = "$delayed" ] &&
	[ "$(jq '.shape.per_second.delayed' <<<"$w" 2>/dev/null)" = 0 ]; then
	ok "stats -j --watch: the shaper's delayed ($delayed), none in the interval"
else
	not_ok "stats -j --watch: the shaper's delayed ($delayed), none in the interval"
	diag "$out"
fi
out=$(rx_exec timeout -s INT 2.5 "$SLUICECTL" -i "$S" stats --watch 1 2>&1)
if grep -Eq "^delayed +$delayed " <<<"$out" && grep -q "^mean_delay " <<<"$out"; then
	ok "stats --watch: the shaper's counters and the interval's mean delay"
else
	not_ok "stats --watch: the shaper's counters and the interval's mean delay"
	diag "$out"
fi

# A change of delay keeps the queue the burst left.
before=$(sctl -j show "$ADDR4_RX" | jq '.bucket.state.queue.packets_ahead')
expect_status 0 "rule add of the same rule with --delay 10" \
	sctl rule add "$ADDR4_RX/32" --rate 6/m --burst 20 --delay 10
after=$(sctl -j show "$ADDR4_RX" | jq '.bucket.state.queue.packets_ahead')
if [ "$before" != null ] && [ "$after" != null ] && [ "$after" -ge 1 ] && [ "$after" -le "$before" ]; then
	ok "a new delay keeps the key's queue ($before, then $after ahead)"
else
	not_ok "a new delay keeps the key's queue"
	diag "before: $before, after: $after"
fi

# A second key (--also-rate) on a shaper: a packet waits for the later of
# its two keys' turns, so the prefix's queue must fit the horizon too.
expect_usage "a second key whose queue reaches the horizon" "reaches the fq horizon of 5m" \
	sctl rule add 198.18.$N.128/26 --rate 10/s --also-rate 1/s --also-burst 400
expect_status 0 "rule add with a second key on the shaper" \
	sctl rule add 198.18.$N.128/26 --rate 10/s --also-rate 100/s --also-burst 50 \
	--also-prefix 24
same "rule list -j: the rule's second key" \
	"$(sctl -j rule list | jq -c --arg m "198.18.$N.128/26" \
		'.[] | select(.match == $m) | [.also.prefix4, .also.packets.burst]')" "[24,50]"
# ... but not on a policy keyed by more than the source: wide keys on (an
# upgrade in place with --max-flows), such a rule with a second key is
# refused, saying why.
expect_status 0 "shape attach again with --max-flows (wide keys on)" \
	rx_sluice shape attach "$IF_RX" --max-flows 4096 --horizon 300s
expect_usage "a second key on a shaper's policy keyed by src,dport" "keyed by the source" \
	sctl rule add 198.18.$N.192/26 --rate 10/s --key src,dport --also-rate 100/s

tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What an operator does with sluicectl works the same on both key tables
# (--table lru, --table sets), with the same traffic: show (text, -j) of a
# source, of a rule's /24 key, of an IPv6 /64, of a source charged to its
# aggregate under --new-keys, of both window algorithms and of a byte limit;
# top (text, -j) lists the same keys with the same drops on both tables;
# flush of an address, a CIDR and everything gives the flushed sources a full
# burst again and leaves the others; stats (text, -j, --prometheus) counts
# the keys the table holds; set (rate, burst, algorithm: fresh buckets) and
# rule add/del change what the next packets get; dry-run counts would-drops
# per key; bpftool reads the set table and the seed by name (BTF).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "ctl-sets" jq bpftool
netns_need_sluice "ctl-sets"

netns_setup cs 31 || { not_ok "build the namespaces and the veth pair"; exit 1; }

# A slow refill (6/m: one packet per 10 s) and a burst of 20: what a key has
# left and lost is the same however long the commands take.
POL=(--rate 6/m --burst 20)
# A small table: bpftool reads every way of it (a million keys take minutes).
MAXKEYS=1024
S4=198.18.31.7        # the default policy, /32
RNET=198.18.32.0/24   # a rule keyed by /24
R1=198.18.32.5 R2=198.18.32.6
V6A=2001:2:0:33::5 V6B=2001:2:0:33::6 V6KEY=2001:2:0:33::/64
FW=198.18.34.5 SW=198.18.35.5 BY=198.18.36.5 # fixed, sliding window, bytes
SL=198.18.38.5 # sliding-log: its own LRU map (sluice_logs) on both tables
AGG1=198.18.37.1 AGG2=198.18.37.2 AGG3=198.18.37.3
S4B=198.18.31.8 DRY=198.18.31.9

# The sender's own IPv6 chatter (DAD from ::, MLD from fe80::) would make keys
# at times of its own: exempt from the attach on (--config), it makes none.
QUIET=$NETNS_TMP/quiet.conf
printf 'rule add fe80::/10 --exempt\nrule add ::/128 --exempt\n' >"$QUIET"

jget() { jq -r "$2" <<<"$1" 2>/dev/null; }
# send SRC N [ARGS]: N packets at once from SRC.
send() {
	local src=$1 n=$2 dst=$ADDR4_RX
	shift 2
	[[ $src == *:* ]] && dst=$ADDR6_RX
	tx_gen -s "$src" -d "$dst" -n "$n" -r 20000 "$@" >/dev/null || diag "sluice-gen from $src failed"
}
show_j() { rx_ctl -i "$IF_RX" -j show "$1"; }
# is NAME GOT WANT
is() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else not_ok "$1"; diag "got '$2', want '$3'"; fi; }
# obs NAME VALUE: what this table saw, compared with the other table at the end.
obs() { echo "$1 $2" >>"$NETNS_TMP/obs.$T"; }
# live_ways MAP: ways of a set map whose identity says LIVE (bit 62), by bpftool.
live_ways() {
	bpftool -j map dump pinned "$RX_PINS/$1" | jq '[.. | objects | select(has("ident")) |
		.ident | select(. >= 4611686018427387904 and (. / 4611686018427387904 | floor) % 2 == 1)] | length'
}
# table_keys: the keys the table holds, counted by bpftool, not by sluicectl.
table_keys() {
	local n l
	l=$(bpftool -j map dump pinned "$RX_PINS/sluice_logs" | jq length)
	if [ "$T" = sets ]; then
		n=$(($(live_ways sluice_sets4) + $(live_ways sluice_sets6)))
	else
		n=$(bpftool -j map dump pinned "$RX_PINS/sluice_buckets" | jq length)
	fi
	echo $((n + l))
}
nft_passed() { rx_counter "$1"; }
# clear_of_boundary: the window checks below count 30 packets in one 1 h
# window of the datapath's clock (CLOCK_MONOTONIC, windows aligned to 0):
# when the next hour boundary is under 30 s away, wait it out, so that no
# check depends on where the machine's uptime falls in the hour. The clock
# is read as the datapath reads it: one packet of a probe source under the
# fixed-window rule, and its window's next_window_ns.
FWPROBE=198.18.34.99
clear_of_boundary() {
	local left
	send "$FWPROBE" 1
	left=$(jget "$(show_j "$FWPROBE")" .bucket.state.next_window_ns)
	if ! [[ $left =~ ^[0-9]+$ ]]; then
		diag "$T: no window for $FWPROBE: $(show_j "$FWPROBE")"
	elif [ "$left" -lt 30000000000 ]; then
		diag "$T: the hour boundary is $((left / 1000000)) ms away: waiting it out"
		sleep "$((left / 1000000000 + 1))"
	fi
}

one_table() {
	local j t p k before after
	: >"$NETNS_TMP/obs.$T"
	expect_status 0 "$T: attach --table $T --max-keys $MAXKEYS ${POL[*]} --config (the chatter exempt)" \
		rx_sluice attach "$IF_RX" --table "$T" --max-keys "$MAXKEYS" "${POL[@]}" --config "$QUIET" ||
		return 1
	rx_counter_add "s4$T" ip saddr "$S4" && rx_counter_add "dry$T" ip saddr "$DRY" &&
		rx_counter_add "s4b$T" ip saddr "$S4B" || return 1

	# ---- show: one key of each kind ----
	expect_status 0 "$T: rule add $RNET --prefix 24" \
		rx_ctl -i "$IF_RX" rule add "$RNET" "${POL[@]}" --prefix 24
	rx_ctl -i "$IF_RX" rule add 198.18.34.0/24 --algo fixed-window --rate 20/h --window 1h &&
		rx_ctl -i "$IF_RX" rule add 198.18.35.0/24 --algo sliding-window --rate 20/h --window 1h &&
		rx_ctl -i "$IF_RX" rule add 198.18.36.0/24 --rate 100/h --burst 50 --rate 8kbit --burst 3000 &&
		rx_ctl -i "$IF_RX" rule add 198.18.38.0/24 --algo sliding-log --rate 20/h --window 1h ||
		{ not_ok "$T: add the window and byte rules"; return 1; }
	clear_of_boundary
	send "$S4" 60
	send "$R1" 30
	send "$R2" 30
	send "$V6A" 30
	send "$V6B" 30
	send "$FW" 30
	send "$SW" 30
	send "$BY" 30 -l 200
	send "$SL" 30
	sleep 0.2
	S4_PASSED=$(nft_passed "s4$T")
	obs s4_passed "$S4_PASSED"

	j=$(show_j "$S4")
	t=$(rx_ctl -i "$IF_RX" show "$S4")
	p=$(jget "$j" '[.bucket.found, .bucket.key, .bucket.dropped, .bucket.state.packets_left, .bucket.state.packets_burst, .policy.match, .policy.algo] | @tsv')
	obs show_s4 "$p"
	if [ "$(jget "$j" .bucket.dropped)" = $((60 - S4_PASSED)) ] && [ "$(jget "$j" .bucket.state.packets_left)" = 0 ] &&
		[ "$(jget "$j" .bucket.state.packets_burst)" = 20 ] && [ "$(jget "$j" '.bucket.state.packets_wait_ns > 0')" = true ] &&
		[ "$(jget "$j" .policy.match)" = default ]; then
		ok "$T: show -j $S4: dropped $((60 - S4_PASSED)) (60 sent, $S4_PASSED passed), 0 of 20 left, a wait, the default policy"
	else
		not_ok "$T: show -j $S4: dropped, 0 of 20 left, a wait, the default policy"
		diag "nft passed $S4_PASSED; $j"
	fi
	if grep -q "^key *$S4/32$" <<<"$t" && grep -q "^state *0 of 20 packets left; the next packet is allowed in " <<<"$t" &&
		grep -q "^dropped *$((60 - S4_PASSED))$" <<<"$t" && grep -q "^policy *default: " <<<"$t"; then
		ok "$T: show $S4: its key, 0 of 20 left, the wait, its drops, the policy"
	else
		not_ok "$T: show $S4: its key, 0 of 20 left, the wait, its drops, the policy"
		diag "$t"
	fi

	j=$(show_j "$R2")
	p=$(jget "$j" '[.bucket.found, .bucket.key, .bucket.dropped, .bucket.state.packets_left, .policy.match] | @tsv')
	obs show_rule "$p"
	is "$T: show -j $R2: the rule's /24 key holds both sources' 60 packets" "$p" \
		"$(printf 'true\t%s\t40\t0\t%s' "$RNET" "$RNET")"
	t=$(rx_ctl -i "$IF_RX" show "$RNET")
	grep -q "^key *$RNET$" <<<"$t" && grep -q "^dropped *40$" <<<"$t" &&
		ok "$T: show $RNET (a key as top prints it)" ||
		{ not_ok "$T: show $RNET (a key as top prints it)"; diag "$t"; }

	j=$(show_j "$V6B")
	p=$(jget "$j" '[.bucket.found, .bucket.key, .bucket.dropped, .bucket.state.packets_left] | @tsv')
	obs show_v6 "$p"
	is "$T: show -j $V6B: the IPv6 /64 key of both sources" "$p" "$(printf 'true\t%s\t40\t0' "$V6KEY")"
	t=$(rx_ctl -i "$IF_RX" show "$V6KEY")
	grep -q "^key *$V6KEY$" <<<"$t" && grep -q "^dropped *40$" <<<"$t" &&
		ok "$T: show $V6KEY" || { not_ok "$T: show $V6KEY"; diag "$t"; }

	j=$(show_j "$FW")
	p=$(jget "$j" '[.bucket.found, .bucket.state.algo, .bucket.state.current, .bucket.state.limit, .bucket.dropped, (.bucket.state.next_window_ns > 0)] | @tsv')
	obs show_fw "$p"
	is "$T: show -j $FW: fixed-window count 20 of 20, 10 dropped" "$p" "$(printf 'true\tfixed-window\t20\t20\t10\ttrue')"
	t=$(rx_ctl -i "$IF_RX" show "$FW")
	grep -q "^state *20 of 20 in this window, which resets in " <<<"$t" &&
		ok "$T: show $FW: the window's count" || { not_ok "$T: show $FW: the window's count"; diag "$t"; }
	j=$(show_j "$SW")
	p=$(jget "$j" '[.bucket.found, .bucket.state.algo, .bucket.state.current, .bucket.state.previous, .bucket.state.limit, .bucket.dropped, .bucket.state.admits_now] | @tsv')
	obs show_sw "$p"
	is "$T: show -j $SW: sliding-window 20 in this window, 0 before, 10 dropped" "$p" \
		"$(printf 'true\tsliding-window\t20\t0\t20\t10\tfalse')"
	t=$(rx_ctl -i "$IF_RX" show "$SW")
	grep -q "^state *20 in this 1h window, 0 in the previous one; estimate 20.0 of 20: the next packet is dropped" <<<"$t" &&
		ok "$T: show $SW: both windows' counts" || { not_ok "$T: show $SW: both windows' counts"; diag "$t"; }

	j=$(show_j "$BY")
	# 3000 bytes of burst are 15 frames of 200; the bytes refill at 1000/s.
	p=$(jget "$j" '[.bucket.found, .bucket.dropped, .bucket.state.packets_left, .bucket.state.packets_burst, .bucket.state.bytes_burst, (.bucket.state.bytes_left | . >= 0 and . < 3000)] | @tsv')
	obs show_bytes "$p"
	is "$T: show -j $BY: both clocks: 15 dropped, 35 of 50 packets, bytes of 3000 left" "$p" \
		"$(printf 'true\t15\t35\t50\t3000\ttrue')"
	t=$(rx_ctl -i "$IF_RX" show "$BY")
	grep -q "^state *35 of 50 packets left" <<<"$t" && grep -Eq "^ +[0-9]+ of 3000 bytes left" <<<"$t" &&
		grep -q "^dropped *15$" <<<"$t" &&
		ok "$T: show $BY: packets and bytes" || { not_ok "$T: show $BY: packets and bytes"; diag "$t"; }

	j=$(show_j "$SL")
	p=$(jget "$j" '[.bucket.found, .bucket.state.algo, .bucket.state.used, .bucket.state.limit, .bucket.dropped] | @tsv')
	obs show_log "$p"
	is "$T: show -j $SL: sliding-log 20 of 20 slots, 10 dropped" "$p" "$(printf 'true\tsliding-log\t20\t20\t10')"

	# --new-keys: one new source a second; the next ones share their /24.
	expect_status 0 "$T: set --new-keys 1/s" rx_ctl -i "$IF_RX" set --new-keys 1/s
	sleep 1.1 # the new-key bucket full: one token
	send "$AGG1" 30
	send "$AGG2" 15
	send "$AGG3" 15
	sleep 0.2
	j=$(show_j "$AGG3")
	p=$(jget "$j" '[.bucket.found, .aggregate.found, .aggregate.key, .aggregate.dropped] | @tsv')
	obs show_agg "$p"
	is "$T: show -j $AGG3: no own key, charged to its /24 aggregate with $AGG2" "$p" \
		"$(printf 'false\ttrue\t198.18.37.0/24\t10')"
	t=$(rx_ctl -i "$IF_RX" show "$AGG3")
	grep -q "^aggregate *198.18.37.0/24$" <<<"$t" && grep -q "^no bucket for $AGG3" <<<"$t" &&
		ok "$T: show $AGG3 names its aggregate" || { not_ok "$T: show $AGG3 names its aggregate"; diag "$t"; }
	p=$(jget "$(show_j "$AGG1")" '[.bucket.found, .bucket.dropped] | @tsv')
	is "$T: show -j $AGG1: the first new source has its own key" "$p" "$(printf 'true\t10')"
	rx_ctl -i "$IF_RX" set --new-keys off >/dev/null

	# ---- top ----
	j=$(rx_ctl -i "$IF_RX" -j top -n 20)
	t=$(rx_ctl -i "$IF_RX" top -n 20)
	jget "$j" '.top[] | [.key, .match, .dropped, .aggregate] | @tsv' | sort >"$NETNS_TMP/top.$T"
	# The text without the state (its waits run on): up to the verdict.
	sed -En 's/ +(dropped|would drop) .*/ \1/p' <<<"$t" | sort >"$NETNS_TMP/toptext.$T"
	obs top_keys "$(jget "$j" .keys_with_drops)"
	missing=
	for k in $S4/32 $RNET $V6KEY 198.18.34.5/32 198.18.35.5/32 $BY/32 $SL/32 $AGG1/32 "198.18.37.0/24 (aggregate)"; do
		grep -qF "$k	" "$NETNS_TMP/top.$T" || missing="$missing [$k]"
	done
	if [ -z "$missing" ] && [ "$(wc -l <"$NETNS_TMP/top.$T")" = 9 ]; then
		ok "$T: top -j lists the 9 keys with drops (a sliding log too), IPv4 and IPv6, by their prefixes"
	else
		not_ok "$T: top -j lists the 9 keys with drops"
		diag "missing:$missing"; diag "$j"
	fi
	d=$(awk -F'\t' -v k="$S4/32" '$1 == k { print $3 }' "$NETNS_TMP/top.$T")
	is "$T: top -j: $S4's drops are show's" "$d" $((60 - S4_PASSED))
	grep -Eq "^$V6KEY +default +token-bucket +40 +dropped" <<<"$t" &&
		grep -Eq "^198.18.37.0/24 \(aggregate\) +default +token-bucket +10 +dropped" <<<"$t" &&
		ok "$T: top: the IPv6 /64 and the aggregate, policy, algorithm, drops" ||
		{ not_ok "$T: top: the IPv6 /64 and the aggregate, policy, algorithm, drops"; diag "$t"; }

	# ---- stats: keys as the table holds them ----
	j=$(rx_ctl -i "$IF_RX" -j stats)
	k=$(table_keys)
	is "$T: stats -j: keys is what the table holds (counted by bpftool)" "$(jget "$j" .keys)" "$k"
	nk=$(sluice_stat new_keys)
	is "$T: stats -j: new_keys is the datapath's" "$(jget "$j" .new_keys)" "$nk"
	ev=$((nk > k ? nk - k : 0))
	is "$T: stats -j: evicted_estimate = new_keys - keys" "$(jget "$j" .evicted_estimate)" "$ev"
	t=$(rx_ctl -i "$IF_RX" stats)
	[ "$(awk '$1 == "keys" { print $2 }' <<<"$t")" = "$k" ] &&
		[ "$(awk '$1 == "evicted_estimate" { print $2 }' <<<"$t")" = "$ev" ] &&
		ok "$T: stats: keys $k, evicted_estimate $ev" ||
		{ not_ok "$T: stats: keys $k, evicted_estimate $ev"; diag "$t"; }
	rx_ctl -i "$IF_RX" stats --prometheus >"$NETNS_TMP/prom.$T"
	grep -q "^sluice_keys{interface=\"$IF_RX\"} $k$" "$NETNS_TMP/prom.$T" &&
		grep -q "^sluice_new_keys_total{interface=\"$IF_RX\"} $nk$" "$NETNS_TMP/prom.$T" &&
		grep -q "^sluice_evicted_estimate{interface=\"$IF_RX\"} $ev$" "$NETNS_TMP/prom.$T" &&
		ok "$T: stats --prometheus: sluice_keys, sluice_new_keys_total, sluice_evicted_estimate" ||
		{ not_ok "$T: stats --prometheus: sluice_keys, sluice_new_keys_total, sluice_evicted_estimate"
			diag "$(grep -E 'keys|evicted' "$NETNS_TMP/prom.$T")"; }
	promtool_check "$T: promtool check metrics accepts stats --prometheus" "$NETNS_TMP/prom.$T"

	# ---- flush ----
	expect_status 0 "$T: flush $S4" rx_ctl -i "$IF_RX" -j flush "$S4"
	is "$T: flush $S4 flushed one bucket" "$(jget "$OUT" .buckets)" 1
	is "$T: ... its key is gone" "$(jget "$(show_j "$S4")" .bucket.found)" false
	is "$T: ... the /24 key of the rule stays" "$(jget "$(show_j "$R1")" .bucket.found)" true
	rx_counter_reset "s4$T"
	send "$S4" 60
	sleep 0.2
	is "$T: ... its next 60 packets get a full burst again" "$(nft_passed "s4$T")" "$S4_PASSED"
	expect_status 0 "$T: flush $RNET" rx_ctl -i "$IF_RX" flush "$RNET"
	grep -q "^flushed 1 bucket and 0 sliding logs of $RNET " <<<"$OUT" &&
		ok "$T: flush $RNET says one bucket" || { not_ok "$T: flush $RNET says one bucket"; diag "$OUT"; }
	is "$T: ... the rule's key is gone" "$(jget "$(show_j "$R2")" .bucket.found)" false
	is "$T: ... $S4 stays" "$(jget "$(show_j "$S4")" .bucket.found)" true
	expect_status 0 "$T: flush $V6KEY" rx_ctl -i "$IF_RX" -j flush "$V6KEY"
	is "$T: flush $V6KEY flushed one bucket" "$(jget "$OUT" .buckets)" 1
	is "$T: ... the /64 key is gone" "$(jget "$(show_j "$V6A")" .bucket.found)" false
	send "$V6A" 30
	sleep 0.1
	p=$(jget "$(show_j "$V6A")" '[.bucket.found, .bucket.dropped] | @tsv')
	is "$T: ... its next 30 packets: a full burst (10 dropped, of 30)" "$p" "$(printf 'true\t10')"
	expect_status 0 "$T: flush $SL" rx_ctl -i "$IF_RX" -j flush "$SL"
	is "$T: flush $SL: no bucket, one sliding log" "$(jget "$OUT" '[.buckets, .logs] | @tsv')" "$(printf '0\t1')"
	is "$T: ... its log is gone" "$(jget "$(show_j "$SL")" .bucket.found)" false
	send "$SL" 5
	sleep 0.1
	before=$(jget "$(rx_ctl -i "$IF_RX" -j stats)" .keys)
	expect_status 0 "$T: flush (every key)" rx_ctl -i "$IF_RX" -j flush
	after=$(jget "$(rx_ctl -i "$IF_RX" -j stats)" .keys)
	left=
	for k in "$S4" "$V6A" "$FW" "$SW" "$BY" "$SL" "$AGG1"; do
		[ "$(jget "$(show_j "$k")" '.bucket.found or .aggregate.found')" = false ] || left="$left $k"
	done
	if [ $(($(jget "$OUT" .buckets) + $(jget "$OUT" .logs))) = "$before" ] && [ "$(jget "$OUT" .keys)" = "$before" ] &&
		[ "$after" = 0 ] && [ "$(table_keys)" = 0 ] && [ -z "$left" ]; then
		ok "$T: flush forgot all $before keys, as it says; the table holds none"
	else
		not_ok "$T: flush forgot all $before keys, as it says; the table holds none"
		diag "$OUT; keys after: $after, by bpftool $(table_keys); still found:$left"
	fi
	obs flushed_all "$before"

	# ---- set: rate and burst live; an algorithm change gives fresh buckets ----
	expect_status 0 "$T: set --rate 6/m --burst 5" rx_ctl -i "$IF_RX" set --rate 6/m --burst 5
	send "$S4B" 10
	sleep 0.1
	p=$(jget "$(show_j "$S4B")" '[.bucket.dropped, .bucket.state.packets_burst, .policy.algo] | @tsv')
	obs set_rate "$p $(nft_passed "s4b$T")"
	is "$T: after set, a new source gets the new burst (10 sent, 5 passed)" "$p $(nft_passed "s4b$T")" \
		"$(printf '5\t5\ttoken-bucket') 5"
	expect_status 0 "$T: set --algo leaky-bucket" rx_ctl -i "$IF_RX" set --algo leaky-bucket --rate 6/m --burst 5
	p=$(jget "$(show_j "$S4B")" '[.bucket.found, .policy.algo] | @tsv')
	is "$T: ... the held source's bucket is fresh under the new algorithm" "$p" "$(printf 'false\tleaky-bucket')"
	rx_counter_reset "s4b$T"
	send "$S4B" 10
	sleep 0.1
	p=$(jget "$(show_j "$S4B")" '[.bucket.found, .bucket.dropped, .bucket.state.algo] | @tsv')
	obs set_algo "$p $(nft_passed "s4b$T")"
	is "$T: ... and it passes a burst again (10 sent, 5 passed, 5 dropped)" "$p $(nft_passed "s4b$T")" \
		"$(printf 'true\t5\tleaky-bucket') 5"
	# rule add/del with traffic
	expect_status 0 "$T: rule add $S4B/32 --exempt" rx_ctl -i "$IF_RX" rule add "$S4B/32" --exempt
	rx_counter_reset "s4b$T"
	send "$S4B" 10
	sleep 0.1
	is "$T: ... an exempt source passes whole" "$(nft_passed "s4b$T")" 10
	expect_status 0 "$T: rule del $S4B/32" rx_ctl -i "$IF_RX" rule del "$S4B/32"
	rx_counter_reset "s4b$T"
	send "$S4B" 10
	sleep 0.1
	is "$T: ... deleted, the default's bucket holds it again (0 passed)" "$(nft_passed "s4b$T")" 0

	# ---- dry-run: nothing dropped, would-drops counted per key ----
	expect_status 0 "$T: set --dry-run on" rx_ctl -i "$IF_RX" set --dry-run on
	send "$DRY" 30
	sleep 0.1
	is "$T: under dry-run a source past its burst passes whole" "$(nft_passed "dry$T")" 30
	p=$(jget "$(show_j "$DRY")" '[.bucket.effective_dry_run, .bucket.dropped, .bucket.would_drop] | @tsv')
	obs dry_show "$p"
	is "$T: show -j: would_drop 25, dropped 0" "$p" "$(printf 'true\t0\t25')"
	p=$(jget "$(rx_ctl -i "$IF_RX" -j top)" ".top[] | select(.key == \"$DRY/32\") | [.effective_dry_run, .dropped, .would_drop] | @tsv")
	is "$T: top -j: would_drop 25, dropped 0" "$p" "$(printf 'true\t0\t25')"
	rx_ctl -i "$IF_RX" top | grep -Eq "^$DRY/32 +default +leaky-bucket +25 +would drop" &&
		ok "$T: top: 'would drop'" || { not_ok "$T: top: 'would drop'"; diag "$(rx_ctl -i "$IF_RX" top)"; }
	rx_ctl -i "$IF_RX" set --dry-run off >/dev/null

	# ---- bpftool reads the table by name ----
	if [ "$T" = sets ]; then
		for m in sluice_sets4 sluice_sets6; do
			t=$(bpftool map dump pinned "$RX_PINS/$m" 2>&1)
			missing=
			for f in ident s0 s1 dropped meta; do
				grep -q "\"$f\": " <<<"$t" || missing="$missing $f"
			done
			[ $m = sluice_sets6 ] && { grep -q '"addr": \[' <<<"$t" || missing="$missing addr"; }
			[ -z "$missing" ] && ok "$T: bpftool map dump pinned .../$m names the way's fields (BTF)" ||
				{ not_ok "$T: bpftool map dump pinned .../$m names the way's fields (BTF)"
					diag "missing:$missing"; diag "$(head -c 800 <<<"$t")"; }
		done
		t=$(bpftool map dump pinned "$RX_PINS/sluice_config" 2>&1)
		grep -Eq '"set_seed": [1-9][0-9]*' <<<"$t" && ok "$T: bpftool: sluice_config shows set_seed" ||
			{ not_ok "$T: bpftool: sluice_config shows set_seed"; diag "$t"; }
	else
		t=$(bpftool map dump pinned "$RX_PINS/sluice_buckets" 2>&1)
		grep -q '"dropped": ' <<<"$t" && grep -q '"prefixlen": ' <<<"$t" &&
			ok "$T: bpftool map dump pinned .../sluice_buckets names its fields (BTF)" ||
			{ not_ok "$T: bpftool map dump pinned .../sluice_buckets names its fields (BTF)"; diag "$(head -c 800 <<<"$t")"; }
	fi
}

for T in ${TABLES:-lru sets}; do
	one_table || not_ok "$T: the run of this table stopped early"
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
	rx_exec nft delete table netdev sluice_test 2>/dev/null
done

# A sets table of one group a family (--max-keys 16): 20 IPv4 sources, 16
# ways; every new source takes the way free soonest (the oldest source's:
# one packet of 6/m keeps a bucket 10 s from full), so 4 are evicted, and
# stats says so.
if [[ " ${TABLES:-lru sets} " == *" sets "* ]]; then
	T=sets
	expect_status 0 "sets: attach --table sets --max-keys 16" \
		rx_sluice attach "$IF_RX" --table sets --max-keys 16 "${POL[@]}" --config "$QUIET"
	for i in $(seq 1 20); do send 198.18.39.$i 1; done
	sleep 0.1
	j=$(rx_ctl -i "$IF_RX" -j stats)
	p=$(jget "$j" '[.keys, .new_keys, .evicted_estimate] | @tsv')
	is "sets: one group, 20 sources: stats -j keys 16, new_keys 20, evicted_estimate 4" "$p" "$(printf '16\t20\t4')"
	is "sets: ... bpftool sees the 16 ways live" "$(table_keys)" 16
	p=$(for i in $(seq 5 20); do jget "$(show_j 198.18.39.$i)" .bucket.found; done | sort -u)
	is "sets: ... the 16 latest sources hold them" "$p" true
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
fi

# The same traffic, the same answers.
if [ -s "$NETNS_TMP/obs.lru" ] && [ -s "$NETNS_TMP/obs.sets" ]; then
	d=$(diff "$NETNS_TMP/obs.lru" "$NETNS_TMP/obs.sets")
	[ -z "$d" ] && ok "lru, sets: show, flush and set say the same for the same traffic" ||
		{ not_ok "lru, sets: show, flush and set say the same for the same traffic"; diag "$d"; }
	d=$(diff "$NETNS_TMP/top.lru" "$NETNS_TMP/top.sets")
	[ -z "$d" ] && ok "lru, sets: top -j lists the same keys, policies and drops" ||
		{ not_ok "lru, sets: top -j lists the same keys, policies and drops"; diag "$d"; }
	d=$(diff "$NETNS_TMP/toptext.lru" "$NETNS_TMP/toptext.sets")
	[ -z "$d" ] && ok "lru, sets: top's text is the same (but for the states' clocks)" ||
		{ not_ok "lru, sets: top's text is the same (but for the states' clocks)"; diag "$d"; }
fi
tap_done

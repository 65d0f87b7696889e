#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End-to-end: sluice-gen injects frames with BPF_PROG_TEST_RUN live frames
# into one end of a veth pair; the other end, in a second namespace, is the
# receiver, as a NIC would deliver to it. For each system below and for one
# and two CPUs (one generator thread per CPU; the veth has a queue per CPU, so
# each CPU also receives what it sends), the receiver's packet rate and CPU
# time are measured over a steady window, and each system's own counters must
# show it dropped what it should, or its row is marked invalid.
#
# Three floods, each with its own ceiling, the same flood into a bare XDP_DROP
# in the same run: the generator's ceiling. A row within 10% of its flood's
# ceiling is generator-bound (render.py flags it): the sender, not the
# receiver, set its rate, and it says nothing about the receiver's cost.
#   one source      198.18.0.1, IPv4
#   256 sources     256 addresses of 198.19.0.0/16, IPv4 (sluice-gen --keys 256)
#   1M sources      2001:2::/48, IPv6, drawn from 1M addresses (--keys 1000000)
#
#   xdp-drop, xdp-drop-256, xdp-drop-random: bare XDP_DROP
#                   (tools/bench/drop.bpf.c), the ceiling of each flood
#   floor, floor-256, floor-random: the floor (tools/bench/floor.bpf.c's
#                   floor_drop): parse, one array lookup at a hash of the
#                   source, a compare, the clock, one CAS, then XDP_DROP: the
#                   least an exact per-source limiter does to drop a packet
#   sluice          sluice dropping one flooding source (1000/s, burst 1000)
#   sluice-256, sluice-sets-256: sluice (both tables) dropping 256 flooding
#                   sources (10/s, burst 10 each)
#   sluice-random   sluice, a flood from 2001:2::/48 drawn from 1M sources
#                   (1/m, burst 1: each source's first packet passes)
#   sluice-newkeys  the same with --new-keys 10000/s: past it, new sources
#                   share their /48's bucket instead of taking a slot each
#   sluice-sets, sluice-sets-random: sluice and sluice-random on the
#                   set-associative table (--table sets --max-keys 1048576:
#                   2^20 keys a family, as many as the LRU table holds in all)
#   sluice-sets-random-2x: sluice-sets-random with --max-keys 2097152: room
#                   for twice the flood's sources (a 4-way set table full to
#                   its capacity keeps about 92% of them, two sets a key: the
#                   rest are evicted, and pass again), in 160 MiB against the
#                   LRU's 112
#   nft-meter       nftables netdev ingress, a dynamic set per source, limit
#                   rate over 1000/s burst 1000 drop
#   hashlimit       iptables-legacy raw PREROUTING hashlimit per source (the
#                   real xt_hashlimit: iptables-nft turns it into an nft meter)
#   no-filter       nothing: the stack takes every packet (UDP, no listener)
#   nft-random, hashlimit-random: the random flood of sluice-random (2 CPUs
#                   only), for their cost and their memory per key
#
# Usage: e2e.sh OUTDIR (root; BUILD, BENCH, PREFIX, BENCH_RUN_ID from run.sh)
# Writes OUTDIR/e2e.tsv (one row per run: its flood, and which way sluice-gen
# sent, "live-frames" or "socket", where the kernel refuses live frames; the
# run's id in every row) and OUTDIR/e2e-mem.tsv (memory per
# key: kernel slab + vmalloc growth over the random flood for nft and hashlimit,
# the maps' own size for sluice, which allocates its whole table at attach).
set -euo pipefail

OUT=$1
BUILD=${BUILD:-build}
BENCH=${BENCH:-$BUILD/bench/sluice-bench}
GEN=$BUILD/sluice-gen
SLUICE=$BUILD/sluice
PREFIX=${PREFIX:-bn$$}
WARM=${E2E_WARM:-1}
MEAS=${E2E_MEAS:-3} # one-second windows; the rate is their median
STATS_T=${E2E_STATS:-1}
STATS_SYSCTL=/proc/sys/kernel/bpf_stats_enabled
STATS_WAS=$(cat "$STATS_SYSCTL")
NSS=${PREFIX}s
NSR=${PREFIX}r
IFS_=${PREFIX}s0
IFR=${PREFIX}r0
KEYS=1000000
NCPU=$(nproc)
RUN_ID=${BENCH_RUN_ID:--}

# pins_watch, pins_release: what is left of the receiver's pins is removed,
# only what this bench made, while its namespace holds its inode.
# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh
# shellcheck source=tests/lib/netns.sh
source tests/lib/netns.sh
cleanup() {
	echo "$STATS_WAS" >"$STATS_SYSCTL"
	ip netns del "$NSS" 2>/dev/null || true
	if [ -e "/var/run/netns/$NSR" ] && [ -x "$SLUICE" ]; then
		nsenter --net="/var/run/netns/$NSR" "$SLUICE" detach "$IFR" >/dev/null 2>&1 || true
	fi
	pins_release || true
	ip netns del "$NSR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

inr() { nsenter --net="/var/run/netns/$NSR" "$@"; }
ins() { nsenter --net="/var/run/netns/$NSS" "$@"; }

ip netns add "$NSS"
ip netns add "$NSR"
NSR_PINS="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NSR")"
pins_watch "$NSR_PINS" "$NSR"
# One queue per CPU on both ends: a sending CPU lands in its own receive queue
# and runs its own NAPI, so two CPUs never share a ring.
ip -n "$NSS" link add "$IFS_" numtxqueues "$NCPU" numrxqueues "$NCPU" type veth \
	peer name "$IFR" netns "$NSR" numtxqueues "$NCPU" numrxqueues "$NCPU"
ip -n "$NSS" addr add 198.18.0.1/24 dev "$IFS_"
ip -n "$NSR" addr add 198.18.0.2/24 dev "$IFR"
ip -n "$NSS" addr add 2001:2::1/64 dev "$IFS_" nodad
ip -n "$NSR" addr add 2001:2::2/64 dev "$IFR" nodad
for ns in "$NSS" "$NSR"; do ip -n "$ns" link set lo up; done
ip -n "$NSS" link set "$IFS_" up
ip -n "$NSR" link set "$IFR" up
# Without an XDP program a veth only takes redirected frames with NAPI on,
# which GRO turns on; XDP rows have their own program.
inr ethtool -K "$IFR" gro on >/dev/null

# ---- one snapshot of everything the receiver counts: key=value lines ----
snapshot() {
	local f=$1
	{
		echo "time=$(date +%s.%N)"
		awk '/^cpu[0-9]/ { s += $8; b += $2 + $3 + $4 + $7 + $8 }
		     END { print "softirq_ticks=" s; print "busy_ticks=" b }' /proc/stat
		awk '/^MemAvailable:/ { print "memavail_kb=" $2 } /^Slab:/ { print "slab_kb=" $2 }
		     /^VmallocUsed:/ { print "vmalloc_kb=" $2 }' /proc/meminfo
		inr ethtool -S "$IFR" | awk -F: '
			/xdp_packets/ { p += $2 } /xdp_drops/ { d += $2 }
			END { print "xdp_packets=" p + 0; print "xdp_drops=" d + 0 }'
		# "name: rx_bytes rx_packets ..." (the colon may touch the bytes)
		inr cat /proc/net/dev | awk -v i="$IFR" '{ sub(/^ +/, ""); split($0, a, ":")
			if (a[1] == i) { split(a[2], f, " "); print "dev_rx=" f[2] + 0 } }'
		# shellcheck disable=SC2016
		inr awk '/^Udp: [0-9]/ { print "udp_noports=" $3 }' /proc/net/snmp
		# shellcheck disable=SC2016
		inr awk '/^Udp6NoPorts/ { print "udp6_noports=" $2 }' /proc/net/snmp6
		inr "$BENCH" xdp read "$IFR" 2>/dev/null | sed 's/^/x_/'
		# A named counter: listing it is instant, unless a set holds a
		# million entries (nft then loads them all first: minutes).
		if [ "$CUR_SYS" = nft-meter ]; then
			{ inr nft list counter netdev "$PREFIX" cdrop 2>/dev/null || true; } |
				awk '$1 == "packets" { print "nft_drops=" $2 }'
		fi
		for t in iptables-legacy ip6tables-legacy; do
			inr "$t" -t raw -nvxL PREROUTING 2>/dev/null |
				awk -v t="$t" '$3 == "DROP" { n += $1 }
					END { print t "_drops=" n + 0 }'
		done
	} >"$f"
}

val() { awk -F= -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
delta() { awk -v a="$(val "$1" "$3")" -v b="$(val "$2" "$3")" 'BEGIN { printf "%.0f", b - a }'; }

CUR_SYS=
NFT_RULE4='update @m4 { ip saddr limit rate over 1000/second burst 1000 packets }'
NFT_RULE4="$NFT_RULE4 counter name \"cdrop\" drop"
NFT_RULE6='update @m6 { ip6 saddr limit rate over 1/minute burst 1 packets }'
NFT_RULE6="$NFT_RULE6 counter name \"cdrop\" drop"

# ---- the systems: set up and tear down ----
setup() {
	case $1 in
	xdp-drop*)
		inr "$BENCH" xdp attach "$IFR" drop ;;
	floor*)
		inr "$BENCH" xdp attach "$IFR" floor ;;
	sluice)
		inr "$SLUICE" attach "$IFR" "${LRU[@]}" --rate 1000/s --burst 1000 --new-keys off \
			>/dev/null ;;
	sluice-256)
		inr "$SLUICE" attach "$IFR" "${LRU[@]}" --rate 10/s --burst 10 --new-keys off \
			>/dev/null ;;
	sluice-sets-256)
		inr "$SLUICE" attach "$IFR" --table sets --max-keys 1048576 --rate 10/s --burst 10 \
			--new-keys off >/dev/null ;;
	sluice-random)
		# A /48 holds 65,536 /64s: key by the whole address for 1M sources.
		inr "$SLUICE" attach "$IFR" "${LRU[@]}" --rate 1/m --burst 1 --prefix6 128 \
			--new-keys off >/dev/null ;;
	sluice-newkeys)
		inr "$SLUICE" attach "$IFR" "${LRU[@]}" --rate 1/m --burst 1 --prefix6 128 \
			--new-keys 10000/s >/dev/null ;;
	sluice-sets)
		inr "$SLUICE" attach "$IFR" --table sets --max-keys 1048576 --rate 1000/s \
			--burst 1000 --new-keys off >/dev/null ;;
	sluice-sets-random)
		inr "$SLUICE" attach "$IFR" --table sets --max-keys 1048576 --rate 1/m --burst 1 \
			--prefix6 128 --new-keys off >/dev/null ;;
	sluice-sets-random-2x)
		inr "$SLUICE" attach "$IFR" --table sets --max-keys 2097152 --rate 1/m --burst 1 \
			--prefix6 128 --new-keys off >/dev/null ;;
	nft-meter)
		inr nft -f - <<-EOF
		table netdev $PREFIX {
			counter cdrop { }
			set m4 { type ipv4_addr; size 1048576; flags dynamic,timeout; timeout 10m; }
			chain ing {
				type filter hook ingress device $IFR priority -500; policy accept;
				ip saddr 198.18.0.0/15 $NFT_RULE4
			}
		}
		EOF
		;;
	nft-random)
		inr nft -f - <<-EOF
		table netdev $PREFIX {
			counter cdrop { }
			set m6 { type ipv6_addr; size 1048576; flags dynamic,timeout; timeout 10m; }
			chain ing {
				type filter hook ingress device $IFR priority -500; policy accept;
				ip6 saddr 2001:2::/48 $NFT_RULE6
			}
		}
		EOF
		;;
	hashlimit)
		inr iptables-legacy -t raw -A PREROUTING -i "$IFR" -s 198.18.0.0/15 -m hashlimit \
			--hashlimit-above 1000/sec --hashlimit-burst 1000 --hashlimit-mode srcip \
			--hashlimit-name "${PREFIX}4" -j DROP ;;
	hashlimit-random)
		inr ip6tables-legacy -t raw -A PREROUTING -i "$IFR" -s 2001:2::/48 -m hashlimit \
			--hashlimit-above 1/min --hashlimit-burst 1 --hashlimit-mode srcip \
			--hashlimit-srcmask 128 --hashlimit-name "${PREFIX}6" \
			--hashlimit-htable-size 1048576 --hashlimit-htable-max 1048576 \
			--hashlimit-htable-expire 120000 -j DROP ;;
	no-filter) ;;
	esac
}

teardown() {
	case $1 in
	xdp-drop* | floor*) inr "$BENCH" xdp detach "$IFR" ;;
	sluice*) inr "$SLUICE" detach "$IFR" >/dev/null ;;
	nft-meter | nft-random) inr nft delete table netdev "$PREFIX" ;;
	hashlimit) inr iptables-legacy -t raw -F PREROUTING ;;
	hashlimit-random) inr ip6tables-legacy -t raw -F PREROUTING ;;
	no-filter) ;;
	esac
}

# How many distinct sources n packets drawn uniformly from K show: K(1 - e^-n/K).
distinct() { awk -v n="$1" -v k="$KEYS" 'BEGIN { printf "%.0f", k * (1 - exp(-n / k)) }'; }

# ---- one run: system, CPUs ----
printf '%s\t' system family cpus mpps rx seconds sent_mpps prog_ns softirq_ns dropped passed \
	valid flood via run >"$OUT/e2e.tsv"
printf 'note\n' >>"$OUT/e2e.tsv"
printf 'system\tkeys\tkb\tbytes_per_key\tbasis\n' >"$OUT/e2e-mem.tsv"

run() {
	local sys=$1 cpus=$2 fam src dst genargs=() s0 s1 s2 s3 t_all
	local rx dt mpps prog_ns soft_ns dropped passed expect valid note sent via flood
	case $sys in
	*-random | sluice-newkeys | sluice-sets-random*)
		fam=6 src=2001:2::/48 dst=2001:2::2 genargs=(--keys "$KEYS") flood=1M ;;
	*-256)
		fam=4 src=198.19.0.0/16 dst=198.18.0.2 genargs=(--keys 256) flood=256 ;;
	*) fam=4 src=198.18.0.1 dst=198.18.0.2 flood=1 ;;
	esac
	s0=$OUT/snap.$sys.$cpus.0 s1=${s0%0}1 s2=${s0%0}2 s3=${s0%0}3
	local b1=${s0%0}b1 b2=${s0%0}b2
	CUR_SYS=$sys
	# Memory rows: let the previous row's tables be freed (deferred) first.
	case $sys in *random) sleep 2 ;; esac
	snapshot "$s0"
	setup "$sys"
	ins "$GEN" -i "$IFS_" -s "$src" -d "$dst" -t "$((WARM + MEAS + STATS_T + 1))" \
		-c "$([ "$cpus" = 1 ] && echo 0 || echo 0-$((cpus - 1)))" "${genargs[@]}" -j \
		>"$OUT/gen.$sys.$cpus.json" &
	local gen_pid=$!
	# bpf_stats costs every program run two clock reads (the generator's
	# too): the rate is measured with it off, run_time_ns in a window after.
	echo 0 >"$STATS_SYSCTL"
	sleep "$WARM"
	snapshot "$s1"
	local w rates=()
	for w in $(seq 1 "$MEAS"); do
		sleep 1
		snapshot "$s1.$w"
	done
	cp "$s1.$MEAS" "$s2"
	echo 1 >"$STATS_SYSCTL"
	snapshot "$b1"
	sleep "$STATS_T"
	snapshot "$b2"
	echo 0 >"$STATS_SYSCTL"
	wait "$gen_pid"
	snapshot "$s3"

	dt=$(awk -v a="$(val "$s1" time)" -v b="$(val "$s2" time)" 'BEGIN { print b - a }')
	# What the receiver took in: frames its XDP hook saw, else the device's.
	local ctr=dev_rx prev=$s1 cur
	case $sys in xdp-drop* | floor* | sluice*) ctr=xdp_packets ;; esac
	rx=$(delta "$s1" "$s2" "$ctr")
	# The median of the one-second rates: a burst of other work on the machine
	# spoils one window, not the row.
	for w in $(seq 1 "$MEAS"); do
		cur=$s1.$w
		rates+=("$(awk -v n="$(delta "$prev" "$cur" "$ctr")" -v a="$(val "$prev" time)" \
			-v b="$(val "$cur" time)" 'BEGIN { printf "%.3f", n / (b - a) / 1e6 }')")
		prev=$cur
	done
	mpps=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{ v[NR] = $1 }
		END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	sent=$(sed -n 's/.*"pps":\([0-9.e+]*\).*/\1/p' "$OUT/gen.$sys.$cpus.json")
	sent=$(awk -v p="${sent:-0}" 'BEGIN { printf "%.3f", p / 1e6 }')
	via=$(sed -n 's/.*"via":"\([a-z-]*\)".*/\1/p' "$OUT/gen.$sys.$cpus.json")
	prog_ns=$(awk -v t="$(delta "$b1" "$b2" x_run_time_ns)" \
		-v n="$(delta "$b1" "$b2" x_run_cnt)" \
		'BEGIN { if (n > 0) printf "%.1f", t / n; else print "-" }')
	# /proc/stat counts in USER_HZ ticks (10 ms): receive work runs as softirq.
	soft_ns=$(awk -v s="$(delta "$s1" "$s2" softirq_ticks)" -v n="$rx" \
		'BEGIN { if (n > 0) printf "%.1f", s * 1e7 / n; else print "-" }')

	# Did the system drop what it should? Counted over the whole run, s0 to s3.
	t_all=$(awk -v a="$(val "$s0" time)" -v b="$(val "$s3" time)" 'BEGIN { print b - a }')
	valid=yes note=""
	local rx_all keys
	case $sys in
	xdp-drop* | floor*)
		rx_all=$(delta "$s0" "$s3" xdp_packets)
		dropped=$(delta "$s0" "$s3" xdp_drops)
		passed=$((rx_all - dropped))
		[ "$passed" -eq 0 ] && [ "$rx_all" -gt 0 ] || valid=no
		note="veth xdp_drops = xdp_packets" ;;
	sluice-256 | sluice-sets-256)
		rx_all=$(delta "$s0" "$s3" x_rx)
		dropped=$(delta "$s0" "$s3" x_dropped)
		passed=$(delta "$s0" "$s3" x_passed)
		expect=$(awk -v t="$t_all" 'BEGIN { printf "%.0f", 256 * (10 * t + 10) }')
		[ "$passed" -le "$expect" ] && [ $((passed + dropped)) -eq "$rx_all" ] &&
			[ "$rx_all" -gt 0 ] || valid=no
		note="passed $passed <= 256 x (10/s x ${t_all%.*}s + 10) = $expect; dropped $dropped"
		note="$note ($(delta "$s0" "$s3" x_contended) of them on CAS contention)" ;;
	sluice | sluice-sets)
		rx_all=$(delta "$s0" "$s3" x_rx)
		dropped=$(delta "$s0" "$s3" x_dropped)
		passed=$(delta "$s0" "$s3" x_passed)
		expect=$(awk -v t="$t_all" 'BEGIN { printf "%.0f", 1000 * t + 1000 }')
		[ "$passed" -le "$expect" ] && [ $((passed + dropped)) -eq "$rx_all" ] &&
			[ "$rx_all" -gt 0 ] || valid=no
		note="passed $passed <= 1000/s x ${t_all%.*}s + 1000 = $expect; dropped $dropped"
		note="$note ($(delta "$s0" "$s3" x_contended) of them on CAS contention)" ;;
	sluice-random | sluice-newkeys | sluice-sets-random*)
		rx_all=$(delta "$s0" "$s3" x_rx)
		dropped=$(delta "$s0" "$s3" x_dropped)
		passed=$(delta "$s0" "$s3" x_passed)
		keys=$(delta "$s0" "$s3" x_new_keys)
		local failed
		failed=$(delta "$s0" "$s3" x_update_failed)
		# One packet per new bucket; a key the full table refused passes
		# (fail-open) and is counted as update_failed.
		[ "$passed" -eq $((keys + failed)) ] && [ $((passed + dropped)) -eq "$rx_all" ] ||
			valid=no
		note="passed $passed = new keys $keys + refused by the table $failed; rest dropped"
		[ "$sys" != sluice-newkeys ] ||
			note="$note; $(delta "$s0" "$s3" x_aggregated) charged to the /48 bucket" ;;
	nft-meter | hashlimit)
		rx_all=$(delta "$s0" "$s3" dev_rx)
		if [ "$sys" = nft-meter ]; then dropped=$(delta "$s0" "$s3" nft_drops)
		else dropped=$(delta "$s0" "$s3" iptables-legacy_drops); fi
		passed=$((rx_all - dropped))
		expect=$(awk -v t="$t_all" 'BEGIN { printf "%.0f", 1000 * t + 1000 }')
		# The device also counts the odd ARP or ICMP reply: a little slack.
		[ "$passed" -le $((expect + 100)) ] && [ "$dropped" -gt 0 ] || valid=no
		note="rx - drops = $passed <= 1000/s x ${t_all%.*}s + 1000 = $expect" ;;
	nft-random | hashlimit-random)
		rx_all=$(delta "$s0" "$s3" dev_rx)
		local want
		if [ "$sys" = nft-random ]; then
			# Emptied first, the set no longer slows the counter's listing.
			inr nft flush set netdev "$PREFIX" m6
			dropped=$(inr nft list counter netdev "$PREFIX" cdrop |
				awk '$1 == "packets" { print $2 }')
			passed=$((rx_all - dropped))
			keys=$passed
		else
			dropped=$(delta "$s0" "$s3" ip6tables-legacy_drops)
			passed=$((rx_all - dropped))
			keys=$(inr cat "/proc/net/ip6t_hashlimit/${PREFIX}6" | wc -l)
		fi
		# Each source passes its first packet (burst 1, 1/minute): the passes
		# must be the sources seen, which for uniform draws is K(1 - e^-n/K).
		want=$(distinct "$rx_all")
		[ "$dropped" -gt 0 ] && [ "$passed" -le $((want + KEYS / 200)) ] &&
			[ "$passed" -ge $((want - KEYS / 200)) ] &&
			[ "$passed" -le $((keys + 100)) ] && [ "$passed" -ge "$keys" ] || valid=no
		note="rx - drops = $passed; sources seen: expected $want, entries $keys"
		local kb
		kb=$(($(delta "$s0" "$s3" slab_kb) + $(delta "$s0" "$s3" vmalloc_kb)))
		local basis="slab + vmalloc growth over the flood" obj
		obj=$(awk '$1 == "xt_hashlimit" { print $4 }' /proc/slabinfo 2>/dev/null)
		[ "$sys" = hashlimit-random ] && [ -n "$obj" ] &&
			basis="$basis (an entry is a $obj-byte xt_hashlimit slab object)"
		printf '%s\t%s\t%s\t%s\t%s\n' "$sys" "$keys" "$kb" \
			"$(awk -v m="$kb" -v k="$keys" 'BEGIN { printf "%.0f", m * 1024 / k }')" \
			"$basis" >>"$OUT/e2e-mem.tsv" ;;
	no-filter)
		rx_all=$(delta "$s0" "$s3" dev_rx)
		passed=$(delta "$s0" "$s3" udp_noports)
		dropped=0
		# Every frame reached UDP (no listener: NoPorts), none was lost on the way.
		[ "$passed" -gt 0 ] && [ "$passed" -le "$rx_all" ] &&
			[ $((rx_all - passed)) -le 100 ] || valid=no
		note="UDP NoPorts $passed of $rx_all received" ;;
	esac
	if [ "$sys" = sluice-random ] && [ "$cpus" = 2 ]; then
		local b m
		b=$(val "$s3" x_buckets_memlock) m=$(val "$s3" x_buckets_max)
		printf '%s\t%s\t%s\t%s\t%s\n' "sluice" "$m" "$((b / 1024))" \
			"$(awk -v b="$b" -v k="$m" 'BEGIN { printf "%.0f", b / k }')" \
			"key table (sluice_buckets), allocated whole at attach" >>"$OUT/e2e-mem.tsv"
		b=$(val "$s3" x_maps_memlock)
		printf '%s\t%s\t%s\t%s\t%s\n' "sluice, all maps" "$m" "$((b / 1024))" \
			"$(awk -v b="$b" -v k="$m" 'BEGIN { printf "%.0f", b / k }')" \
			"every map of the program, over the key table's size" >>"$OUT/e2e-mem.tsv"
	fi
	if [ "$sys" = sluice-sets-random ] && [ "$cpus" = 2 ]; then
		local b m f
		for f in 4 6; do
			b=$(val "$s3" "x_sets${f}_memlock") m=$(val "$s3" "x_sets${f}_keys")
			printf '%s\t%s\t%s\t%s\t%s\n' "sluice --table sets, IPv$f" "$m" \
				"$((b / 1024))" "$(awk -v b="$b" -v k="$m" 'BEGIN { printf "%.0f", b / k }')" \
				"key table (sluice_sets$f), allocated whole at attach" >>"$OUT/e2e-mem.tsv"
		done
	fi
	teardown "$sys"
	printf '%s\tIPv%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" \
		"$fam" "$cpus" "$mpps" "$rx" "$dt" "$sent" "$prog_ns" "$soft_ns" "$dropped" "$passed" \
		"$valid" "$flood" "${via:--}" "$RUN_ID" "$note; 1-s rates ${rates[*]}" >>"$OUT/e2e.tsv"
	printf '  e2e %-21s %d CPU: %7s Mpps received (sent %s via %s), %s\n' "$sys" "$cpus" \
		"$mpps" "$sent" "${via:--}" "$([ "$valid" = yes ] && echo valid || echo "INVALID: $note")" >&2
}

# E2E_SYSTEMS picks systems (all by default).
pick() { [ -z "${E2E_SYSTEMS:-}" ] || case " $E2E_SYSTEMS " in *" $1 "*) ;; *) return 1 ;; esac; }
# The sets rows need a loader with --table (issue 13).
# (Not `| grep -q`: under pipefail, grep leaving early fails the pipe.)
HAVE_SETS=yes
case "$("$SLUICE" attach --help 2>&1)" in *--table*) ;; *) HAVE_SETS= ;; esac
[ -n "$HAVE_SETS" ] || echo "e2e: $SLUICE attach has no --table: no sluice-sets rows" >&2
pick_sets() { case $1 in sluice-sets*) [ -n "$HAVE_SETS" ] ;; esac; }
# The rows without "sets" are the LRU table's: named, since the set table
# became the default (a loader without --table has only the LRU).
LRU=()
[ -z "$HAVE_SETS" ] || LRU=(--table lru)
for cpus in 1 $([ "$NCPU" -ge 2 ] && echo 2); do
	# Each flood's ceiling first, then the floor and sluice on both tables.
	for sys in xdp-drop floor sluice sluice-sets \
		xdp-drop-256 floor-256 sluice-256 sluice-sets-256 \
		xdp-drop-random floor-random sluice-random sluice-newkeys sluice-sets-random \
		sluice-sets-random-2x \
		nft-meter hashlimit no-filter; do
		if pick "$sys" && pick_sets "$sys"; then run "$sys" "$cpus"; fi
	done
done
if [ "$NCPU" -ge 2 ]; then
	for sys in nft-random hashlimit-random; do
		if pick "$sys"; then run "$sys" 2; fi
	done
fi
[ -n "${E2E_KEEP:-}" ] || rm -f "$OUT"/snap.*

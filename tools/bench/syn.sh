#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A SYN flood from spoofed sources (sluice-gen -p tcp) into one end of a veth
# pair; the other end, in a second namespace, is the receiver. Per scenario,
# in one run, the receiver's packet rate with:
#   xdp-drop      bare XDP_DROP (tools/bench/drop.bpf.c): the generator's
#                 ceiling, printed beside every row
#   none          no limiter: every SYN reaches TCP (a closed port)
#   sluice        rule add ::/0 (0.0.0.0/0) --proto tcp --tcp-flags syn
#                 --rate 20/s (burst 20), a bucket per source address
#   sluice-dport  the same rule with --key src,dport (a bucket per source and
#                 port), where this sluicectl has --key
#   nftables      netdev ingress: tcp flags & (syn | ack) == syn, a dynamic
#                 set per source (the meter of `meter ... { ip saddr limit
#                 rate over 20/second }`, sized for 1M sources)
#   hashlimit     iptables-legacy raw PREROUTING -p tcp --syn -m hashlimit
#                 --hashlimit-mode srcip --hashlimit-above 20/sec (burst 20;
#                 the real xt_hashlimit: iptables-nft makes an nft meter)
# Scenarios: 1M sources (IPv6: 2001:2::/48, --keys 1000000; 198.18.0.0/15
# holds only 131,072 IPv4 addresses), where each source sends a few SYNs and
# the limit is about the table, and 1k sources (IPv4, 198.19.0.0/16, --keys
# 1000), where every source is far over 20/s and the limit bites.
# Each system's own counters are checked against its promise over the whole
# run: passed SYNs <= sources x (burst + rate x seconds), and passed + dropped
# = the SYNs it saw; "sources" are the distinct ones the flood drew (all of
# them for 1k; K(1 - e^-n/K) of n draws from K for 1M).
#
# Usage: syn.sh OUTDIR (root; BUILD, BENCH, PREFIX from run.sh). Writes
# OUTDIR/syn.json and OUTDIR/syn.md. SYN_MEAS (5) one-second windows after
# SYN_WARM (1) s: the rate is their median; SYN_SCENARIOS="1M 1k" picks.
set -euo pipefail

OUT=$1
BUILD=${BUILD:-build}
BENCH=${BENCH:-$BUILD/sluice-bench}
GEN=$BUILD/sluice-gen
SLUICE=$BUILD/sluice
CTL=$BUILD/sluicectl
PREFIX=${PREFIX:-bn$$}
WARM=${SYN_WARM:-1}
MEAS=${SYN_MEAS:-5}
SCENARIOS=${SYN_SCENARIOS:-1M 1k}
RATE=20 BURST=20 DPORT=80
NSS=syn-$PREFIX-s
NSR=syn-$PREFIX-r
IFS_=${PREFIX}ys
IFR=${PREFIX}yr
NFT_T=syn$PREFIX

# pins_watch, pins_release: the receiver's pins left, only what this made.
# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh
# shellcheck source=tests/lib/netns.sh
source tests/lib/netns.sh
cleanup() {
	ip netns del "$NSS" 2>/dev/null || true
	if [ -e "/var/run/netns/$NSR" ]; then
		inr "$SLUICE" detach "$IFR" >/dev/null 2>&1 || true
		inr "$BENCH" xdp detach "$IFR" >/dev/null 2>&1 || true
		pins_release || true
		ip netns del "$NSR" 2>/dev/null || true
	fi
}
inr() { nsenter --net="/var/run/netns/$NSR" "$@"; }
ins() { nsenter --net="/var/run/netns/$NSS" "$@"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

for t in nft iptables-legacy ip6tables-legacy ethtool jq; do
	command -v "$t" >/dev/null || { echo "bench syn: '$t' is missing: run 'sudo make deps'" >&2; exit 1; }
done
ip netns add "$NSS"
ip netns add "$NSR"
pins_watch "/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NSR")" "$NSR"
ip -n "$NSS" link add "$IFS_" type veth peer name "$IFR" netns "$NSR"
ip -n "$NSS" addr add 198.18.0.1/24 dev "$IFS_"
ip -n "$NSR" addr add 198.18.0.2/24 dev "$IFR"
ip -n "$NSS" addr add 2001:2::1/64 dev "$IFS_" nodad
ip -n "$NSR" addr add 2001:2::2/64 dev "$IFR" nodad
for ns in "$NSS" "$NSR"; do ip -n "$ns" link set lo up; done
ip -n "$NSS" link set "$IFS_" up
ip -n "$NSR" link set "$IFR" up
# Live frames reach a peer with no XDP program only with NAPI on (GRO).
inr ethtool -K "$IFR" gro on >/dev/null

# The --key src,dport row, where this sluicectl has --key (not --keys).
HAVE_KEY=
CTL_HELP=$("$CTL" rule add --help 2>&1 || true)
grep -qE -- '--key([^a-z-]|$)' <<<"$CTL_HELP" && HAVE_KEY=yes

# ---- the counters of the receiver: key=value lines ----
snapshot() {
	{
		echo "time=$(date +%s.%N)"
		inr ethtool -S "$IFR" | awk -F: '/xdp_packets/ { p += $2 } /xdp_drops/ { d += $2 }
			END { print "xdp_packets=" p + 0; print "xdp_drops=" d + 0 }'
		inr cat /proc/net/dev | awk -v i="$IFR" '{ sub(/^ +/, ""); split($0, a, ":")
			if (a[1] == i) { split(a[2], f, " "); print "dev_rx=" f[2] + 0 } }'
		# shellcheck disable=SC2016
		inr awk '$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) n[$i] = i; h = 1; next }
			$1 == "Tcp:" && h { print "tcp_insegs=" $n["InSegs"] }' /proc/net/snmp
	} >"$1"
}
val() { awk -F= -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
delta() { awk -v a="$(val "$1" "$3")" -v b="$(val "$2" "$3")" 'BEGIN { printf "%.0f", b - a }'; }

# ---- the systems ----
setup() { # SYSTEM FAMILY
	local sys=$1 fam=$2 any=0.0.0.0/0 pfx=32 ip=ip ipt=iptables-legacy mask=32 key=()
	[ "$fam" = 6 ] && any=::/0 pfx=128 ip=ip6 ipt=ip6tables-legacy mask=128
	case $sys in
	xdp-drop) inr "$BENCH" xdp attach "$IFR" drop ;;
	none) ;;
	sluice | sluice-dport)
		# wide keys are off unless attach turns them on: a table for the
		# whole flood's sources
		local flows=()
		[ "$sys" = sluice-dport ] && key=(--key "src,dport") flows=(--max-flows 1048576)
		inr "$SLUICE" attach "$IFR" --rate 1000000/s --burst 1000000 --new-keys off \
			"${flows[@]}" >/dev/null &&
			inr "$CTL" -i "$IFR" rule add "$any" --proto tcp --tcp-flags syn \
				--rate "$RATE/s" --burst "$BURST" --prefix "$pfx" \
				"${key[@]}" >/dev/null ;;
	nftables)
		local t=ipv4_addr
		[ "$fam" = 6 ] && t=ipv6_addr
		inr nft -f - <<-EOF
		table netdev $NFT_T {
			counter csyn { }
			counter cdrop { }
			set m { type $t; size 1048576; flags dynamic,timeout; timeout 1m; }
			chain ing {
				type filter hook ingress device "$IFR" priority 0; policy accept;
				tcp flags & (syn | ack) == syn counter name csyn update @m { $ip saddr limit rate over $RATE/second burst $BURST packets } counter name cdrop drop
			}
		}
		EOF
		;;
	hashlimit)
		# A rule with no target counts every SYN; the second drops.
		inr "$ipt" -t raw -A PREROUTING -i "$IFR" -p tcp --syn &&
			inr "$ipt" -t raw -A PREROUTING -i "$IFR" -p tcp --syn -m hashlimit \
				--hashlimit-mode srcip --hashlimit-srcmask "$mask" \
				--hashlimit-above "$RATE/sec" --hashlimit-burst "$BURST" \
				--hashlimit-name "$NFT_T" --hashlimit-htable-size 1048576 \
				--hashlimit-htable-max 1048576 --hashlimit-htable-expire 120000 -j DROP ;;
	esac
}

teardown() { # SYSTEM FAMILY
	case $1 in
	xdp-drop) inr "$BENCH" xdp detach "$IFR" ;;
	sluice*) inr "$SLUICE" detach "$IFR" >/dev/null ;;
	nftables) inr nft delete table netdev "$NFT_T" ;;
	hashlimit)
		if [ "$2" = 6 ]; then inr ip6tables-legacy -t raw -F PREROUTING
		else inr iptables-legacy -t raw -F PREROUTING; fi ;;
	esac
}

# counted SYSTEM FAMILY: "SEEN PASSED DROPPED KEYS" by the system's own
# counters since its setup (KEYS: its table's entries, - when it has none).
counted() {
	local ipt=iptables-legacy
	[ "$2" = 6 ] && ipt=ip6tables-legacy
	case $1 in
	sluice*)
		local st rl
		st=$(inr "$CTL" -i "$IFR" -j stats)
		rl=$(inr "$CTL" -i "$IFR" -j rule list | jq -c '.[] | select(.l4.tcp_flags == "syn")')
		echo "$(jq -r '.passed + .dropped' <<<"$rl") $(jq -r .passed <<<"$rl")" \
			"$(jq -r .dropped <<<"$rl") $(jq -r .new_keys <<<"$st")" ;;
	nftables)
		local s d
		s=$(inr nft list counter netdev "$NFT_T" csyn | awk '$1 == "packets" { print $2 }')
		d=$(inr nft list counter netdev "$NFT_T" cdrop | awk '$1 == "packets" { print $2 }')
		# Emptied first, the set no longer slows listing it; its count of
		# entries is the flush's to lose, so none is given.
		echo "$s $((s - d)) $d -" ;;
	hashlimit)
		inr "$ipt" -t raw -nvxL PREROUTING | awk -v k="$(inr cat \
			"/proc/net/$([ "$2" = 6 ] && echo ip6t || echo ipt)_hashlimit/$NFT_T" | wc -l)" '
			NR > 2 && $3 == "DROP" { d = $1 } NR > 2 && $3 != "DROP" { s = $1 }
			END { print s + 0, s - d, d + 0, k }' ;;
	esac
}

# distinct N K: sources seen among N uniform draws of K: K(1 - e^-N/K).
distinct() { awk -v n="$1" -v k="$2" 'BEGIN { printf "%.0f", k * (1 - exp(-n / k)) }'; }

ROWS=$OUT/syn.rows
: >"$ROWS"
# The machine's other load moves every row: its 1-min load average is kept.
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
VIA=
run() { # SYSTEM SCENARIO
	local sys=$1 sc=$2 fam src dst keys s0 s3 w ctr rates=() mpps rx_all t_all
	local seen passed dropped tkeys sources bound valid note gj sent via ceil=null
	case $sc in
	1M) fam=6 src=2001:2::/48 dst=2001:2::2 keys=1000000 ;;
	1k) fam=4 src=198.19.0.0/16 dst=198.18.0.2 keys=1000 ;;
	esac
	if [ "$sys" = sluice-dport ] && [ -z "$HAVE_KEY" ]; then
		jq -cn --arg s "$sys" --arg sc "$sc" --argjson f "$fam" --argjson k "$keys" \
			'{system: $s, scenario: $sc, family: $f, sources: $k, available: false,
			  note: "not available in this build: sluicectl rule add has no --key"}' >>"$ROWS"
		echo "  syn $sc $sys: not available in this build (sluicectl rule add has no --key)" >&2
		return
	fi
	s0=$OUT/syn.snap.0
	setup "$sys" "$fam"
	snapshot "$s0"
	gj=$OUT/syn.gen.$sc.$sys.json
	ins "$GEN" -i "$IFS_" -p tcp --dport "$DPORT" -s "$src" --keys "$keys" -d "$dst" \
		-t "$((WARM + MEAS + 1))" -c 0 -j >"$gj" &
	local gen_pid=$!
	sleep "$WARM"
	snapshot "$OUT/syn.snap.w0"
	ctr=dev_rx
	case $sys in xdp-drop | sluice*) ctr=xdp_packets ;; esac
	for w in $(seq 1 "$MEAS"); do
		sleep 1
		snapshot "$OUT/syn.snap.w$w"
		rates+=("$(awk -v n="$(delta "$OUT/syn.snap.w$((w - 1))" "$OUT/syn.snap.w$w" "$ctr")" \
			-v a="$(val "$OUT/syn.snap.w$((w - 1))" time)" -v b="$(val "$OUT/syn.snap.w$w" time)" \
			'BEGIN { printf "%.3f", n / (b - a) / 1e6 }')")
	done
	wait "$gen_pid" || { echo "bench syn: sluice-gen failed ($sc, $sys)" >&2; teardown "$sys" "$fam"; return 1; }
	sleep 0.2
	s3=$OUT/syn.snap.3
	snapshot "$s3"
	mpps=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{ v[NR] = $1 }
		END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	sent=$(jq -r '.pps / 1e6 * 1000 | round / 1000' "$gj")
	via=$(jq -r .via "$gj")
	VIA=$via
	# Over the whole run: the flood's span as the generator measured it.
	t_all=$(jq -r .seconds "$gj")
	rx_all=$(delta "$s0" "$s3" "$ctr")
	sources=$(distinct "$(jq -r .packets "$gj")" "$keys")
	bound=$(awk -v s="$sources" -v t="$t_all" -v r="$RATE" -v b="$BURST" \
		'BEGIN { printf "%.0f", s * (b + r * t) }')
	valid=yes tkeys=-
	case $sys in
	xdp-drop)
		seen=$rx_all dropped=$(delta "$s0" "$s3" xdp_drops) passed=$((rx_all - dropped))
		[ "$passed" -eq 0 ] && [ "$rx_all" -gt 0 ] || valid=no
		note="veth xdp_drops = xdp_packets: none passed" ;;
	none)
		seen=$rx_all passed=$(delta "$s0" "$s3" tcp_insegs) dropped=0
		# Every frame the device took reached TCP as a segment (the odd
		# neighbour discovery packet aside).
		[ "$passed" -gt 0 ] && [ "$passed" -le "$rx_all" ] &&
			[ $((rx_all - passed)) -le 100 ] || valid=no
		note="Tcp InSegs $passed of $rx_all received" ;;
	*)
		read -r seen passed dropped tkeys <<<"$(counted "$sys" "$fam")"
		[ "$passed" -le "$bound" ] && [ $((passed + dropped)) -eq "$seen" ] &&
			[ "$seen" -gt 0 ] && [ $((rx_all - seen)) -le 100 ] || valid=no
		note="passed $passed <= $sources sources x ($BURST + $RATE/s x ${t_all%.*} s) = $bound;"
		note="$note passed + dropped = $((passed + dropped)) SYNs seen (device: $rx_all)"
		[ "$tkeys" = - ] || note="$note; entries in its table: $tkeys" ;;
	esac
	teardown "$sys" "$fam"
	[ "$sys" = xdp-drop ] && eval "CEIL_$sc=$mpps"
	eval "ceil=\${CEIL_$sc:-null}"
	jq -cn --arg s "$sys" --arg sc "$sc" --argjson f "$fam" --argjson k "$keys" \
		--argjson m "$mpps" --argjson c "$ceil" --argjson sent "$sent" --arg via "$via" \
		--argjson rx "$rx_all" --argjson seen "$seen" --argjson p "$passed" \
		--argjson d "$dropped" --argjson src "$sources" --argjson b "$bound" \
		--argjson t "$t_all" --arg v "$valid" --arg n "$note; 1-s rates ${rates[*]}" \
		--arg te "$tkeys" \
		'{system: $s, scenario: $sc, family: $f, sources: $k, available: true, mpps: $m,
		  ceiling_mpps: $c, sent_mpps: $sent, via: $via, received: $rx, seen: $seen,
		  passed: $p, dropped: $d, sources_seen: $src, promise: $b, seconds: $t,
		  table_entries: (if $te == "-" then null else ($te | tonumber) end),
		  valid: ($v == "yes"), note: $n}' >>"$ROWS"
	printf '  syn %-3s %-12s %7s Mpps received (ceiling %s, sent %s, via %s), %s\n' "$sc" \
		"$sys" "$mpps" "$ceil" "$sent" "$via" \
		"$([ "$valid" = yes ] && echo valid || echo "INVALID: $note")" >&2
	sleep 1
}

for sc in $SCENARIOS; do
	for sys in xdp-drop none sluice sluice-dport nftables hashlimit; do
		run "$sys" "$sc"
	done
done

jq -s --arg k "$(uname -r)" --argjson c "$(nproc)" --arg d "$(date -u +%Y-%m-%dT%H:%MZ)" \
	--argjson r "$RATE" --argjson b "$BURST" --arg via "$VIA" --argjson l0 "$LOAD0" \
	--argjson l1 "$(cut -d' ' -f1 /proc/loadavg)" \
	'{kernel: $k, cpus: $c, date: $d, rate: $r, burst: $b, via: $via, sender_cpus: 1,
	  loadavg_start: $l0, loadavg_end: $l1, rows: .}' \
	"$ROWS" >"$OUT/syn.json"
{
	echo "### SYN flood from spoofed sources: receive side of a veth pair (sluice-gen -p tcp)"
	echo
	echo "One sender thread on CPU 0 (sluice-gen -p tcp --dport $DPORT, via $VIA), the receive"
	echo "path on the same CPU. Limit: $RATE/s burst $BURST per source (per source and"
	echo "port for sluice-dport). Mpps: SYNs the receiver took in per second, the median"
	echo "of $MEAS 1-s windows; ceiling: the xdp-drop row of the scenario (bare XDP_DROP: the"
	echo "most this sender delivers). Promise: sources seen x (burst + rate x seconds);"
	echo "passed and dropped are each system's own counters over the whole run."
	jq -r '"Run: \(.kernel), \(.cpus) CPUs, \(.date); load average (1 min) \(.loadavg_start) at" +
		" the start, \(.loadavg_end) at the end: on a shared machine, compare rows of one run."' \
		"$OUT/syn.json"
	echo
	echo "| scenario | system | Mpps | ceiling Mpps | of ceiling | sent Mpps | via | SYNs seen | passed | dropped | promise (passed <=) | valid | check |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	jq -r '.rows[] | "| \(.scenario) sources, IPv\(.family) | \(.system) | " + (if .available then
		"\(.mpps) | \(.ceiling_mpps // "-") | " +
		(if .ceiling_mpps then "\(.mpps / .ceiling_mpps * 100 | round) %" else "-" end) +
		" | \(.sent_mpps) | \(.via) | \(.seen) | \(.passed) | \(.dropped) | \(.promise) | " +
		(if .valid then "yes" else "**INVALID**" end) + " | \(.note) |"
		else "- | - | - | - | - | - | - | - | - | - | \(.note) |" end)' "$OUT/syn.json"
	echo
} >"$OUT/syn.md"
rm -f "$OUT"/syn.snap.* "$ROWS"
cat "$OUT/syn.md"

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Rule sets at blocklist scale: what the control plane and the datapath pay
# for R rules. On a veth pair in two namespaces of its own (no traffic is sent:
# the rules are only loaded and the program is run with BPF_PROG_TEST_RUN):
#   batch     one `sluicectl -b` of R rules (deny, exempt and rate lists of
#             198.18.0.0/15 /32s and 2001:2::/48 /64s), wall time
#   add, del  one `sluicectl rule add` / `rule del` at R rules, median of 5
#   list      `sluicectl -j rule list` at R rules, median of 3
#   ns/pkt    the attached program run on a frame from a source that a rate
#             rule matches, and on one no rule matches (BPF_PROG_TEST_RUN,
#             repeat 1e6): two interfaces attached at once, one with 1,000
#             rules and one with R, their programs timed turn about (median
#             of 7 each)
#   prefixes  the same with R IPv6 /80 prefix rules (one length: all in the
#             rule hash), and with R rules of three lengths, /80 /96 /112
#             (more than two: all in the trie), ns/pkt of a source in a rate
#             rule's /80
# Usage: rules.sh OUTDIR (root; BUILD from run.sh; RULES_R, default 100000)
# Writes OUTDIR/rules.md and OUTDIR/rules.json.
set -euo pipefail

OUT=$1
BUILD=${BUILD:-build}
R=${RULES_R:-100000}
SMALL=1000
SLUICE=$BUILD/sluice
SLUICECTL=$BUILD/sluicectl
export SLUICE SLUICECTL BUILD

# shellcheck source=tests/lib/tap.sh
source tests/lib/tap.sh
# shellcheck source=tests/lib/netns.sh
source tests/lib/netns.sh
netns_setup br 60 >/dev/null || { echo "rules: could not build the lab" >&2; exit 1; }
# A second veth pair between the same namespaces: IF_RX holds the small rule
# set, IF_S the big one, and their programs are timed turn about.
IF_S=${IF_RX}b
ip link add "${IF_TX}b" netns "$NS_TX" type veth peer name "$IF_S" netns "$NS_RX"
ip -n "$NS_RX" link set "$IF_S" up
rx_sluice attach "$IF_RX" >/dev/null
rx_sluice attach "$IF_S" >/dev/null
netns_extra_cleanup() { rx_sluice detach "$IF_S" >/dev/null 2>&1; }
ctl() { rx_ctl -i "$IF_S" "$@"; } # the big set
small() { rx_ctl -i "$IF_RX" "$@"; }
T=$NETNS_TMP

# gen_rules N FILE: N rules. Every tenth a /64 of 2001:2::/48, the others
# /32s of 198.18.128.0 to 198.19.255.255 (clear of the lab's 198.18.60.0/24).
# Half deny, 40% exempt, 10% one rate (198.18.128.9 is the first): three
# policies, so past the 4,095 counter slots the rules share them.
gen_rules() {
	awk -v n="$1" 'BEGIN {
		for (i = 0; i < n; i++) {
			m = i % 10
			if (m == 0) {
				printf "rule add 2001:2:0:%x::/64 --deny\n", int(i / 10) + 256
				continue
			}
			a = 32768 + i - int(i / 10)
			printf "rule add 198.%d.%d.%d/32%s\n", 18 + int(a / 65536),
				int(a / 256) % 256, a % 256,
				m < 5 ? " --deny" : m < 9 ? " --exempt" : " --rate 10/s"
		}
	}' >"$2"
}

now_ms() { date +%s%3N; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# time_ms CMD...: wall milliseconds of one run (its output thrown away)
time_ms() {
	local t0 t1
	t0=$(now_ms)
	"$@" >/dev/null
	t1=$(now_ms)
	echo $((t1 - t0))
}

# A UDP frame from SRC (IPv4) to the receiver, checksums right, as a file.
frame() { # frame SRC FILE
	local -a h
	local s=0 i hex="" ip
	IFS=. read -ra src <<<"$1"
	IFS=. read -ra dst <<<"$ADDR4_RX"
	# IPv4 header: 20 bytes, total length 20 + 8 + 18, TTL 64, UDP
	h=(0x45 0 0 46 0 0 0 0 64 17 0 0 "${src[@]}" "${dst[@]}")
	for ((i = 0; i < 20; i += 2)); do s=$((s + (h[i] << 8) + h[i + 1])); done
	s=$(((s & 0xffff) + (s >> 16)))
	s=$(((s & 0xffff) + (s >> 16)))
	s=$((~s & 0xffff))
	h[10]=$((s >> 8)) h[11]=$((s & 255))
	# Ethernet (to 02:00:00:00:00:02 from ..:01, IPv4), the IP header, UDP
	# 9 -> 9 with 18 bytes and no checksum (0 is "none" for IPv4)
	for ip in 2 0 0 0 0 2 2 0 0 0 0 1 8 0 "${h[@]}" 0 9 0 9 0 26 0 0; do
		hex+=$(printf '\\x%02x' "$ip")
	done
	for ((i = 0; i < 18; i++)); do hex+='\x78'; done
	printf "$hex" >"$2"
}
# gen_prefix_rules N FILE [K]: N IPv6 prefix rules of 2001:2::/48 of K
# lengths, the policies as above: rule i is 2001:2:0:X:Y:Z::/L with L = 80 +
# 4 x (i % K) and Z = (i % K) << 12, so that no rule holds another's sources.
gen_prefix_rules() {
	awk -v n="$1" -v k="${3:-1}" 'BEGIN {
		for (i = 0; i < n; i++) {
			m = i % 10
			l = i % k
			printf "rule add 2001:2:0:%x:%x:%x::/%d%s\n", 256 + int(i / 65536), i % 65536,
				l * 4096, 80 + 4 * l,
				m < 5 ? " --deny" : m < 9 ? " --exempt" : " --rate 10/s"
		}
	}' >"$2"
}

# The same frame over IPv6, from SRC (a full address of 8 groups) to
# 2001:2:0:3c::2 (the program does not check the UDP checksum: 0 here).
frame6() { # frame6 SRC FILE
	local hex="" b g
	local -a groups
	IFS=: read -ra groups <<<"$1"
	for b in 2 0 0 0 0 2 2 0 0 0 0 1 0x86 0xdd 0x60 0 0 0 0 26 17 64; do
		hex+=$(printf '\\x%02x' "$b")
	done
	for g in "${groups[@]}" 2001 2 0 3c 0 0 0 2; do
		hex+=$(printf '\\x%02x\\x%02x' $((0x$g >> 8)) $((0x$g & 255)))
	done
	for b in 0 9 0 9 0 26 0 0; do hex+=$(printf '\\x%02x' "$b"); done
	for ((b = 0; b < 18; b++)); do hex+='\x78'; done
	printf "$hex" >"$2"
}

# A source a rate rule matches and one no rule does.
frame 198.18.128.9 "$T/hit.bin"
frame 198.18.60.1 "$T/miss.bin"
# In rule 9 (a rate rule) of K lengths: 2001:2:0:100:9:Z::1, Z = (9 % K) << 12.
for k in 1 3 8; do frame6 "2001:2:0:100:9:$(printf %x $(((9 % k) * 4096))):0:1" "$T/hit6-$k.bin"; done
S_PINS=$RX_NETNS_DIR/$IF_S
one_ns() { # one_ns PROG FRAME: ns per run, 10^6 runs
	bpftool prog run pinned "$1" data_in "$2" repeat 1000000 2>&1 |
		awk '/duration/ { gsub(/ns/, "", $NF); print $NF }'
}
# run_pair FRAME: "SMALL BIG", the medians of 7 turns of each program
run_pair() {
	local i a=() b=()
	for i in 1 2 3 4 5 6 7; do
		a+=("$(one_ns "$RX_PINS/sluice_prog" "$1")")
		b+=("$(one_ns "$S_PINS/sluice_prog" "$1")")
	done
	echo "$(median "${a[@]}") $(median "${b[@]}")"
}

gen_rules $SMALL "$T/small.conf"
gen_rules "$R" "$T/big.conf"
small -b "$T/small.conf" >/dev/null

batch_ms=$(time_ms ctl -b "$T/big.conf")
n=$(ctl -j rule list | grep -o '"match":' | wc -l)
[ "$n" = $((R + 1)) ] || { echo "rules: rule list has $n entries, want $((R + 1))" >&2; exit 1; }
adds=() dels=() lists=()
for i in 1 2 3 4 5; do
	adds+=("$(time_ms ctl rule add 198.18.61.$i/32 --rate 5/s)")
	dels+=("$(time_ms ctl rule del 198.18.61.$i/32)")
done
for i in 1 2 3; do lists+=("$(time_ms ctl -j rule list)"); done
add_ms=$(median "${adds[@]}")
del_ms=$(median "${dels[@]}")
list_ms=$(median "${lists[@]}")
read -r hit_small hit_big <<<"$(run_pair "$T/hit.bin")"
read -r miss_small miss_big <<<"$(run_pair "$T/miss.bin")"
mem_kb=0
for m in sluice_rules sluice_rulehash sluice_ruletab; do
	b=$(bpftool -j map show pinned "$S_PINS/$m" | jq '.bytes_memlock')
	mem_kb=$((mem_kb + b / 1024))
done

# IPv6 prefix rules of 1, 3 and 8 lengths: a family of 1 or 2 lengths is in
# the rule hash; of 3 or 4, in the hash from 4,096 rules on (the 1,000 in the
# trie); of more, in the trie.
for k in 1 3 8; do
	small rule flush >/dev/null
	ctl rule flush >/dev/null
	gen_prefix_rules $SMALL "$T/small6.conf" $k
	gen_prefix_rules "$R" "$T/big6.conf" $k
	small -b "$T/small6.conf" >/dev/null
	ms=$(time_ms ctl -b "$T/big6.conf")
	[ $k = 1 ] && batch6_ms=$ms
	read -r a b <<<"$(run_pair "$T/hit6-$k.bin")"
	printf -v "hit6_small_$k" %s "$a"
	printf -v "hit6_big_$k" %s "$b"
done

printf '{"rules":%d,"small":%d,"batch_ms":%d,"add_ms":%d,"del_ms":%d,"list_ms":%d,' "$R" "$SMALL" "$batch_ms" \
	"$add_ms" "$del_ms" "$list_ms" >"$OUT/rules.json"
printf '"ns_hit_small":%s,"ns_hit_big":%s,"ns_miss_small":%s,"ns_miss_big":%s,' \
	"$hit_small" "$hit_big" "$miss_small" "$miss_big" >>"$OUT/rules.json"
printf '"batch6_ms":%d,"ns_prefix":[' "$batch6_ms" >>"$OUT/rules.json"
for k in 1 3 8; do
	sm=hit6_small_$k bg=hit6_big_$k
	printf '%s{"lengths":%d,"small":%s,"big":%s}' "$([ $k = 1 ] || echo ,)" $k "${!sm}" \
		"${!bg}" >>"$OUT/rules.json"
done
printf '],"mem_kb":%d}\n' "$mem_kb" >>"$OUT/rules.json"
# The table: tools/bench/render.py, from the JSON.
tools/bench/render.py rules "$OUT/rules.json" "$OUT/rules.md"
cat "$OUT/rules.md"

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Changes reach the datapath whole, and state sluice cannot read is refused:
#  - a source exempted by a rule floods while the rule set is rewritten again
#    and again under a strict default policy (1/s): if any packet saw half a
#    rule set (its rule gone, the new one not yet there), the default would
#    drop it, so not one packet may be limited;
#  - pinned maps of another layout version are refused by sluice attach and
#    sluicectl, with a message naming the versions, instead of being misread.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "atomic"
netns_need_sluice "atomic"
command -v bpftool >/dev/null || { skip "bpftool is not installed: run 'sudo make deps'" atomic; exit 0; }

SRC=198.18.1.10 PPS=20000 SECS=4

netns_setup at || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add src ip saddr "$SRC" || { not_ok "count at the receiver with nft"; exit 1; }
expect_status 0 "sluice attach --rate 1/s --burst 1 (a strict default)" \
	rx_sluice attach "$IF_RX" --rate 1/s --burst 1 || exit 1

# Two rule sets that both exempt SRC's /24 but differ everywhere else, so
# every change rewrites the whole set.
a=$(mktemp) b=$(mktemp)
trap 'rm -f "$a" "$b"; netns_cleanup' EXIT
cat >"$a" <<EOF
rule add 198.18.1.0/24 --exempt
rule add 198.18.1.128/25 --deny
rule add 198.18.1.0/26 --exempt
rule add 2001:2:0:77::/64 --rate 5/s
EOF
cat >"$b" <<EOF
rule del 198.18.1.128/25
rule del 198.18.1.0/26
rule add 198.18.1.0/24 --exempt
rule add 198.18.2.0/24 --deny
EOF
expect_status 0 "batch file A applies" rx_ctl -i "$IF_RX" -b "$a" || exit 1

exempt0=$(sluice_stat exempt) lost0=$(tx_lost)
gen_bg flood -s "$SRC" -d "$ADDR4_RX" -r $PPS -t $SECS
changes=0 failed=0 end=$((SECONDS + SECS))
while [ $SECONDS -lt $end ]; do
	rx_ctl -i "$IF_RX" -b "$b" >/dev/null 2>&1 || failed=$((failed + 1))
	rx_ctl -i "$IF_RX" -b "$a" >/dev/null 2>&1 || failed=$((failed + 1))
	changes=$((changes + 2))
done
gen_wait flood || { not_ok "send with sluice-gen"; exit 1; }
sleep 0.2
exempt=$(($(sluice_stat exempt) - exempt0)) lost=$(($(tx_lost) - lost0))
got=$(rx_counter src)

if [ "$failed" = 0 ] && [ "$changes" -ge 20 ]; then
	ok "$changes whole-rule-set changes applied during the flood"
else
	not_ok "$changes whole-rule-set changes applied during the flood"
	diag "$failed of them failed"
fi
# Other sources (IPv6 neighbour discovery) meet the 1/s default: count only
# SRC, after XDP, and the packets sluice exempted.
if all_passed "$got" "$flood_packets" "$lost" &&
	[ "$exempt" -ge "$got" ]; then
	ok "no packet of the exempt source saw half a rule set ($got of $flood_packets passed)"
else
	not_ok "no packet of the exempt source saw half a rule set"
	diag "the receiver got $got of $flood_packets sent ($lost lost before XDP);" \
		"sluice exempted $exempt"
fi
expect_status 0 "rule list after the changes" rx_ctl -i "$IF_RX" -j rule list
case $OUT in
*198.18.1.128/25*) ok "the last change (file A) is the live rule set" ;;
*) not_ok "the last change (file A) is the live rule set"; diag "$OUT" ;;
esac

# Another layout version in the pinned config: rewrite its first word.
pin=$RX_PINS/sluice_config
bytes=$(bpftool -j map lookup pinned "$pin" key 0 0 0 0 |
	sed 's/.*"value":\[\([^]]*\)\].*/\1/; s/[",]/ /g')
set -- $bytes
if [ $# -lt 8 ]; then
	not_ok "read the pinned config with bpftool"
	exit 1
fi
orig="$*"
shift 4
# shellcheck disable=SC2086 # one argument per byte on purpose
bpftool map update pinned "$pin" key 0 0 0 0 value 0x63 0 0 0 "$@" ||
	{ not_ok "write layout version 99 into the pinned config"; exit 1; }
expect_status 1 "sluice attach refuses pinned maps of layout 99" \
	rx_sluice attach "$IF_RX" --rate 1/s
case $OUT in
*"layout version 99"*"uses"*) ok "its message names both layout versions" ;;
*) not_ok "its message names both layout versions"; diag "$OUT" ;;
esac
expect_status 1 "sluicectl refuses them too" rx_ctl -i "$IF_RX" stats
# shellcheck disable=SC2086
bpftool map update pinned "$pin" key 0 0 0 0 value $orig ||
	not_ok "restore the pinned config"
expect_status 0 "with the layout restored, sluicectl reads it again" rx_ctl -i "$IF_RX" stats
tap_done

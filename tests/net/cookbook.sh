#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs/cookbook.md says what it says: every sluicectl line of its code
# blocks is made live on a limiter attached to a veth, one after the other
# (they all fit together, and rule list then has them all), its config block
# is taken by sluice reload; every nftables and iptables block runs as it
# is, each in a network namespace of its own, and the kernel takes it.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "cookbook" nft iptables ip6tables jq
netns_need_sluice "cookbook"

PAGE=docs/cookbook.md
[ -f "$PAGE" ] || { not_ok "$PAGE is there"; exit 1; }
netns_setup cbk 47 || { not_ok "build the namespaces and the veth pair"; exit 1; }
EXTRA_NS=()
netns_extra_cleanup() {
	local ns
	for ns in "${EXTRA_NS[@]}"; do ip netns del "$ns" 2>/dev/null; done
}

# blocks: each code block of the page, its lines joined by a record
# separator, one block a line.
blocks() {
	awk '/^```/ { if (inb) { print b; b = "" } inb = !inb; next }
	     inb { b = b (b == "" ? "" : "\036") $0 }' "$PAGE"
}

# --max-flows: the wide keys (--key src,dport, flow) of its per-service rules
expect_status 0 "attach" rx_sluice attach "$IF_RX" --rate 1000/s --burst 2000 --max-flows 4096 ||
	exit 1
n=0 conf=
while IFS= read -r b; do
	IFS=$'\036' read -r -a lines <<<"$b"
	case ${lines[0]} in
	sluicectl\ *)
		for l in "${lines[@]}"; do
			# shellcheck disable=SC2086
			set -- ${l#sluicectl }
			expect_status 0 "$l" rx_ctl -i "$IF_RX" "$@" && n=$((n + 1))
		done
		;;
	"# /etc/sluice/"*) conf=$b ;;
	nft\ * | iptables\ * | ip6tables\ *)
		ns="cbk-nf-$$-${#EXTRA_NS[@]}"
		ip netns add "$ns" && EXTRA_NS+=("$ns")
		good=1
		for l in "${lines[@]}"; do
			out=$(ip netns exec "$ns" bash -c "$l" 2>&1) ||
				{ good=0; diag "$l: $out"; }
		done
		if [ "$good" = 1 ]; then ok "the kernel takes: ${lines[-1]}"; else
			not_ok "the kernel takes: ${lines[-1]}"; fi
		;;
	esac
done < <(blocks)

have=$(rx_ctl -i "$IF_RX" -j rule list | jq 'length - 1')
[ "$have" = "$n" ] && [ "$n" -gt 0 ] &&
	ok "rule list has every rule the page's sluicectl lines added ($n)" ||
	not_ok "rule list has every rule the page's sluicectl lines added ($have of $n)"
if [ -n "$conf" ]; then
	tr '\036' '\n' <<<"$conf" >"$NETNS_TMP/cookbook.conf"
	expect_status 0 "sluice reload takes the page's config block" \
		rx_sluice reload "$IF_RX" --config "$NETNS_TMP/cookbook.conf"
	want=$(grep -c '^rule add' "$NETNS_TMP/cookbook.conf")
	have=$(rx_ctl -i "$IF_RX" -j rule list | jq 'length - 1')
	[ "$have" = "$want" ] && ok "after it the rules are the block's ($want)" ||
		not_ok "after it the rules are the block's ($have of $want)"
else
	not_ok "the page has a config block"
fi
rx_sluice detach "$IF_RX" >/dev/null 2>&1
tap_done

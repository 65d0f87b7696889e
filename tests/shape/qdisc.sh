#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# test: times nothing
# The shaper's qdisc: `sluice shape attach` installs fq as the root (handle
# 51ce:) and `sluice shape detach` gives the interface back its default
# (a veth's noqueue), the tc egress program gone too; a root qdisc that
# sluice did not install (a pfifo, or an fq of someone else's) is refused with
# exit status 1 and left in place, with nothing of the shaper behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape qdisc"
shape_need_sluice "shape qdisc"
shape_lab shqd 50 || { not_ok "shape qdisc: lab set up"; exit 1; }
fq_or_skip "shape qdisc"

qdiscs() { tx_exec tc qdisc show dev "$IF_TX"; }
egress_filters() { tx_exec tc filter show dev "$IF_TX" egress 2>/dev/null; }

before=$(qdiscs)
diag "before: $before"
if expect_status 0 "shape attach" tx_sluice shape attach "$IF_TX" --rate 100/s --burst 10; then
	diag "attached: $(qdiscs)"
	if qdiscs | grep -q '^qdisc fq 51ce: root'; then ok "attach: fq 51ce: is the root qdisc"; else
		not_ok "attach: fq 51ce: is the root qdisc"; fi
	if [ -n "$(egress_filters)" ]; then ok "attach: a tc egress program"; else
		not_ok "attach: a tc egress program"; fi
	if expect_status 0 "shape detach" tx_sluice shape detach "$IF_TX"; then
		after=$(qdiscs)
		if [ "$after" = "$before" ]; then ok "detach: the default qdisc is back"; else
			not_ok "detach: the default qdisc is back"; diag "after: $after"; fi
		if [ -z "$(egress_filters)" ]; then ok "detach: no tc egress program"; else
			not_ok "detach: no tc egress program"; fi
		if [ ! -e "$TX_NETNS_DIR/shape:$IF_TX" ]; then ok "detach: the pins are gone"; else
			not_ok "detach: the pins are gone"; fi
	fi
fi

# foreign KIND ARGS...: a root qdisc sluice did not install is refused.
foreign() {
	local what=$1 q
	shift
	tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
	tx_exec tc qdisc add dev "$IF_TX" root handle 1: "$@" || { not_ok "$what: set up"; return; }
	q=$(qdiscs)
	expect_status 1 "a root $what sluice did not install: attach refused (exit 1)" \
		tx_sluice shape attach "$IF_TX" --rate 100/s --burst 10
	diag "$OUT"
	if grep -qi 'qdisc' <<<"$OUT"; then ok "$what: the error names the qdisc"; else
		not_ok "$what: the error names the qdisc"; fi
	if [ "$(qdiscs)" = "$q" ]; then ok "$what: left in place"; else
		not_ok "$what: left in place"; diag "now: $(qdiscs)"; fi
	if [ -z "$(egress_filters)" ] && [ ! -e "$TX_NETNS_DIR/shape:$IF_TX" ]; then
		ok "$what: nothing of the shaper behind"
	else
		not_ok "$what: nothing of the shaper behind"
	fi
}

foreign "pfifo 1:" pfifo limit 500
foreign "fq 1:" fq
tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
tap_done

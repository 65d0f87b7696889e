#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# test: times nothing
# The shaper's loader on a kernel with fq (a test-kernels guest: make
# test-kernels KERNELS=linux-image-amd64 KERNEL_SUITES=shape), on a veth of
# namespaces of our own: sluice shape attach installs its fq as the root qdisc
# with the parameters it derives (or is given) and its filter at egress; status
# (text and JSON) and sluicectl -i shape:IFACE read the state; an operator's
# root qdisc is refused and left in place; a second attach upgrades in place;
# detach --keep-state then attach --resume keeps the policy; detach restores
# the kernel's default qdisc and removes only the clsact sluice made; --key dst
# is recorded; --table sets keeps the keys in the set table. Delays
# themselves are the datapath's tests (tests/shape/*.sh).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "sluice shape: the loader" tc jq
netns_need_sluice "sluice shape: the loader"

N=41
netns_setup shl $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
TX_NETNS_DIR="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS_TX")"
pins_watch "$TX_NETNS_DIR" "$NS_TX"
netns_extra_cleanup() {
	rx_sluice shape detach "$IF_RX" >/dev/null 2>&1
}
if ! tc -n "$NS_RX" qdisc add dev "$IF_RX" root handle 9: fq 2>/dev/null; then
	skip "this kernel has no fq qdisc (CONFIG_NET_SCH_FQ): run it in a guest, 'make test-kernels KERNEL_SUITES=shape'" \
		"sluice shape: the loader"
	exit 0
fi
tc -n "$NS_RX" qdisc del dev "$IF_RX" root

has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "got '$2', want '$3'"; fi; }
# root_qdisc: "KIND HANDLE" of IF_RX's root qdisc; fq_opt KEY: one option of it
root_qdisc() {
	tc -n "$NS_RX" -j qdisc show dev "$IF_RX" |
		jq -r '.[] | select(.root == true) | "\(.kind) \(.handle)"'
}
fq_opt() {
	tc -n "$NS_RX" -j qdisc show dev "$IF_RX" |
		jq -r --arg k "$1" '.[] | select(.root == true) | .options | if has($k) then .[$k] | tostring else "absent" end'
}
has_clsact() { tc -n "$NS_RX" qdisc show dev "$IF_RX" | grep -q '^qdisc clsact'; }
egress_filters() { tc -n "$NS_RX" filter show dev "$IF_RX" egress 2>/dev/null; }
st_json() { rx_sluice -j shape status "$IF_RX"; }
jget() { jq -r ".interfaces[0]$1" <<<"$2"; }
PINS="$RX_NETNS_DIR/shape:$IF_RX"

default_root=$(root_qdisc)
diag "the default root of $IF_RX: $default_root"

# ---- attach: 100/s, a queue of 200: 2 s of work, so horizon 2.5 s ----
# (a small key table: every status counts its keys by walking it, and the
# set table's walk reads every way, slow in an emulated guest)
expect_status 0 "shape attach" rx_sluice shape attach "$IF_RX" --rate 100/s --burst 200 \
	--max-keys 4096 ||
	exit 1
summary=$OUT
has "attach: says where it runs" "sluice shaping $IF_RX at tc egress: program" "$summary"
has "attach: says it replaced the default root" "qdisc: fq 51ce: root, replacing the default" "$summary"
has "attach: says the fq's size" "limit 10000, flow_limit 201, horizon 2.50 s" "$summary"
same "attach: the root qdisc is sluice's fq" "$(root_qdisc)" "fq 51ce:"
same "attach: fq limit (fq's own default)" "$(fq_opt limit)" "10000"
same "attach: fq flow_limit (the burst + 1)" "$(fq_opt flow_limit)" "201"
same "attach: fq horizon (2 s x 1.25, in us)" "$(fq_opt horizon)" "2500000"
same "attach: fq drops beyond the horizon" "$(fq_opt horizon_drop)" "null"
if has_clsact; then ok "attach: clsact added"; else not_ok "attach: clsact added"; fi
f=$(egress_filters)
has "attach: the filter at handle 0x51ce" "handle 0x51ce" "$f"
has "attach: the filter at priority 0x51ce" "pref 20942" "$f"
has "attach: the filter runs sluice_tc" "sluice_tc" "$f"
has "attach: the filter is direct-action" "direct-action" "$f"
prog=$(grep -o ' id [0-9]*' <<<"$f" | head -1 | tr -dc 0-9)
[ -e "$PINS/sluice_prog" ] && ok "attach: program pinned in shape:IFACE" ||
	not_ok "attach: program pinned in shape:IFACE"
[ -e "$PINS/sluice_config" ] && ok "attach: maps pinned in shape:IFACE" ||
	not_ok "attach: maps pinned in shape:IFACE"

# ---- status, text and JSON; sluicectl ----
expect_status 0 "shape status" rx_sluice shape status
st=$OUT
has "status: the shaper and its program" "shape:$IF_RX (ifindex" "$st"
has "status: attached at egress" "shaping at tc egress, program $prog" "$st"
has "status: the qdisc" "qdisc:    fq 51ce: root, limit 10000, flow_limit 201, horizon 2.50 s (drop beyond)" "$st"
has "status: fq's counters" "horizon drops 0, flow limit drops 0" "$st"
has "status: the policy" "token-bucket 100/s burst 200" "$st"
has "status: the key" "key:      the source address" "$st"
has "status: the delay counters" "shaping:  shaped" "$st"
j=$(st_json)
same "status -j: kind" "$(jget .kind "$j")" "shaper"
same "status -j: attached" "$(jget .attached "$j")" "true"
same "status -j: prog_id" "$(jget .prog_id "$j")" "$prog"
same "status -j: mode" "$(jget .mode "$j")" "tc-egress"
same "status -j: qdisc ours" "$(jget .qdisc.ours "$j")" "true"
same "status -j: qdisc flow_limit" "$(jget .qdisc.flow_limit "$j")" "201"
same "status -j: qdisc horizon" "$(jget .qdisc.horizon_us "$j")" "2500000"
same "status -j: recorded horizon" "$(jget .horizon_us "$j")" "2500000"
same "status -j: fq counters" "$(jget .qdisc.fq.horizon_drops "$j")" "0"
same "status -j: key" "$(jget .key "$j")" "src"
same "status -j: shape counters" "$(jget .has_shape_stats "$j")" "true"
expect_status 0 "sluice status lists the shaper" rx_sluice status
has "sluice status: as shape:IFACE" "shape:$IF_RX (ifindex" "$OUT"
expect_status 0 "sluicectl -i shape:IFACE stats" rx_ctl -i "shape:$IF_RX" stats
has "sluicectl stats: reads the counters" "rx" "$OUT"
# UDP datagrams out of IF_RX (through a socket: its egress) pass the shaper's
# program; the first waits for ARP, so look again a few times.
shaped=0
for try in 1 2 3 4 5 6 7 8 9 10; do
	rx_exec bash -c "for i in 1 2 3; do echo sluice >/dev/udp/$ADDR4_TX/9; done" 2>/dev/null
	j=$(st_json)
	shaped=$(jget .shape.shaped "$j")
	[ "${shaped:-0}" -gt 0 ] 2>/dev/null && break
	sleep 0.3
done
if [ "${shaped:-0}" -gt 0 ] 2>/dev/null; then ok "packets sent are counted shaped ($shaped)"; else
	not_ok "packets sent are counted shaped"; diag "$j"; fi

# ---- an operator's root qdisc, on the other end: refused, left alone ----
tc -n "$NS_TX" qdisc add dev "$IF_TX" root handle 7: pfifo limit 50 ||
	not_ok "install a pfifo root qdisc"
before=$(tc -n "$NS_TX" qdisc show dev "$IF_TX")
expect_status 1 "over an operator's qdisc: exit 1" tx_exec "$SLUICE" shape attach "$IF_TX"
has "over an operator's qdisc: says how" "tc qdisc del dev $IF_TX root" "$OUT"
same "over an operator's qdisc: left in place" "$(tc -n "$NS_TX" qdisc show dev "$IF_TX")" "$before"
[ ! -e "$TX_NETNS_DIR/shape:$IF_TX" ] && ok "over an operator's qdisc: nothing pinned" ||
	not_ok "over an operator's qdisc: nothing pinned"

# ---- a second attach: an upgrade in place, new sizes ----
expect_status 0 "second attach" rx_sluice shape attach "$IF_RX" --queue-limit 5000 --horizon 3s
has "second attach: an upgrade" "sluice shaper upgraded on $IF_RX: program $prog replaced by" "$OUT"
has "second attach: resumes the state" "resumed:" "$OUT"
has "second attach: keeps the fq" "qdisc: fq 51ce: root (kept, options set)" "$OUT"
same "second attach: fq limit" "$(fq_opt limit)" "5000"
same "second attach: fq horizon" "$(fq_opt horizon)" "3000000"
same "second attach: still one root fq" "$(root_qdisc)" "fq 51ce:"
prog2=$(egress_filters | grep -o ' id [0-9]*' | head -1 | tr -dc 0-9)
if [ -n "$prog2" ] && [ "$prog2" != "$prog" ]; then ok "second attach: the filter runs the new program"; else
	not_ok "second attach: the filter runs the new program"; diag "$prog -> $prog2"; fi
same "second attach: one filter" "$(egress_filters | grep -c 'handle 0x51ce')" "1"
has "second attach: the policy kept" "token-bucket 100/s burst 200" "$(rx_sluice shape status)"

# ---- detach --keep-state, then attach --resume ----
expect_status 0 "detach --keep-state" rx_sluice shape detach "$IF_RX" --keep-state
has "detach --keep-state: says so" "its state is kept in" "$OUT"
same "detach --keep-state: the default root again" "$(root_qdisc)" "$default_root"
if ! has_clsact; then ok "detach --keep-state: the clsact sluice made is gone"; else
	not_ok "detach --keep-state: the clsact sluice made is gone"; fi
[ -e "$PINS/sluice_config" ] && ok "detach --keep-state: maps kept" ||
	not_ok "detach --keep-state: maps kept"
[ ! -e "$PINS/sluice_prog" ] && ok "detach --keep-state: program unpinned" ||
	not_ok "detach --keep-state: program unpinned"
has "status: kept" "state kept ('sluice shape attach $IF_RX' resumes it)" "$(rx_sluice shape status)"
expect_status 0 "attach --resume" rx_sluice shape attach "$IF_RX" --resume
has "attach --resume: resumed" "resumed: " "$OUT"
has "attach --resume: the policy kept" "token-bucket 100/s burst 200" "$(rx_sluice shape status)"
same "attach --resume: fq again" "$(root_qdisc)" "fq 51ce:"

# ---- detach: the default back, no clsact, no pins ----
expect_status 0 "detach" rx_sluice shape detach "$IF_RX"
same "detach: the default root again" "$(root_qdisc)" "$default_root"
if ! has_clsact; then ok "detach: no clsact"; else not_ok "detach: no clsact"; fi
same "detach: no filter" "$(egress_filters)" ""
[ ! -e "$PINS" ] && ok "detach: no pins" || not_ok "detach: no pins"
expect_status 1 "detach again: nothing attached" rx_sluice shape detach "$IF_RX"

# ---- a clsact that was there: used, and left there ----
tc -n "$NS_RX" qdisc add dev "$IF_RX" clsact || not_ok "add a clsact"
# 10 packets at 1000/s and 64000 bytes at 8mbit: 64 ms at most, so the horizon
# is its floor, 1 s; the byte burst is 1000 packets of 64 bytes.
expect_status 0 "attach over an existing clsact" rx_sluice shape attach "$IF_RX" --key dst \
	--rate 1000/s --burst 10 --rate 8mbit --burst 64000
has "attach over an existing clsact: says so" "on the existing clsact" "$OUT"
same "a short queue: the horizon's floor, 1 s" "$(fq_opt horizon)" "1000000"
same "a byte burst: flow_limit in 64-byte packets + 1" "$(fq_opt flow_limit)" "1001"
same "a byte burst: limit still fq's default" "$(fq_opt limit)" "10000"
has "attach --key dst: says so" "key: the destination address" "$OUT"
same "attach --key dst: status -j" "$(jget .key "$(st_json)")" "dst"
expect_status 0 "detach (the clsact was there)" rx_sluice shape detach "$IF_RX"
if has_clsact; then ok "detach: the clsact that was there stays"; else
	not_ok "detach: the clsact that was there stays"; fi
same "detach: no filter left" "$(egress_filters)" ""
same "detach: the default root again (after --key dst)" "$(root_qdisc)" "$default_root"

# ---- the set-associative key table (--table sets) ----
expect_status 0 "attach --table sets" rx_sluice shape attach "$IF_RX" --table sets \
	--rate 100/s --burst 200 --max-keys 1000
has "attach --table sets: says so" "sets table (--table sets): IPv4 " "$OUT"
j=$(st_json)
same "--table sets: status -j key_table.table" "$(jget .key_table.table "$j")" "sets"
same "--table sets: capacity, --max-keys 1000 is 1008 keys of each family (whole groups of 16)" "$(jget .key_table.max "$j")" "2016"
used=0
for try in 1 2 3 4 5 6 7 8 9 10; do
	rx_exec bash -c "for i in 1 2 3; do echo sluice >/dev/udp/$ADDR4_TX/9; done" 2>/dev/null
	j=$(st_json)
	used=$(jget .key_table.used "$j")
	[ "${used:-0}" -gt 0 ] 2>/dev/null && break
	sleep 0.3
done
if [ "${used:-0}" -gt 0 ] 2>/dev/null && [ "$(jget .shape.shaped "$j")" -gt 0 ]; then
	ok "--table sets: packets sent are shaped, their key in the set table ($used)"
else
	not_ok "--table sets: packets sent are shaped, their key in the set table"; diag "$j"
fi
has "--table sets: sluicectl show finds the key" "$ADDR4_RX" \
	"$(rx_ctl -i "shape:$IF_RX" show "$ADDR4_RX" 2>&1)"
expect_status 1 "--table lru over the running sets shaper: refused" \
	rx_sluice shape attach "$IF_RX" --table lru
same "--table lru refused: the table is still sets" "$(jget .key_table.table "$(st_json)")" "sets"
expect_status 0 "detach (--table sets)" rx_sluice shape detach "$IF_RX"
tap_done

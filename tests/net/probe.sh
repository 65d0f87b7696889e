#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice-probe send -b N (sendmmsg() batches) between two namespaces: every
# packet of every source arrives once, each with its own sequence number
# (none lost, none a duplicate), the report says the batch, -a gives every
# packet of a batch the batch's send time; and the receiver reports the
# packets its socket dropped (SO_RXQ_OVFL), none here. No sluice involved.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

netns_need_root "sluice-probe send -b" jq
if [ ! -x "$SLUICE_PROBE" ]; then
	skip "sluice-probe is not built ($SLUICE_PROBE is missing): run 'make'" "sluice-probe send -b"
	exit 0
fi
shape_lab pb 47 2 || { not_ok "build the namespaces and the veth pair"; exit 1; }

# 1000 packets from each of two sources, 64 a sendmmsg(): 15 full batches
# and one of 40.
N=1000
recv_start rx -t 3 -n $((2 * N)) || { not_ok "the receiver starts"; exit 1; }
if send_burst -s "${SRC4[0]},${SRC4[1]}" -d "$ADDR4_RX" -n $N -b 64 -a; then
	ok "send -b 64 from two sources: exit status 0"
else
	not_ok "send -b 64 from two sources: exit status 0"
fi
recv_wait rx || not_ok "the receiver reports"
j=$NETNS_TMP/send.json
if [ "$(jq -r '[.sent, .errors, .batch] | @tsv' "$j")" = "$((2 * N))	0	64" ]; then
	ok "send -b 64: reports $((2 * N)) sent, no error, batch 64"
else
	not_ok "send -b 64: reports $((2 * N)) sent, no error, batch 64"
	diag "$(jq -c 'del(.sources[].send_us, .sources[].send_end_us)' "$j")"
fi
for s in "${SRC4[0]}" "${SRC4[1]}"; do
	got="$(src_field rx "$s" count) $(src_field rx "$s" lost) $(src_field rx "$s" dup)"
	if [ "$got" = "$N 0 0" ]; then
		ok "source $s: $N of $N arrived, none lost, no duplicate sequence number"
	else
		not_ok "source $s: $N of $N arrived, none lost, no duplicate sequence number"
		diag "count lost dup: $got"
	fi
done
# -a: one send time a batch: 16 distinct values, each shared by the
# packets k..k+63 of its batch.
got=$(jq -r --arg s "${SRC4[0]}" '.sources[] | select(.src == $s) | .send_us
	| [length, (to_entries | group_by(.key / 64 | floor)
		| map(map(.value) | unique | length) | max), unique_by(.) | length] | @tsv' "$j")
if [ "$got" = "$N	1	16" ]; then
	ok "send -b 64 -a: one send time per batch of 64, 16 batches"
else
	not_ok "send -b 64 -a: one send time per batch of 64, 16 batches"
	diag "seqs, most distinct times in one batch, distinct times: $got"
fi
if [ "$(jq -r '.drops' "$NETNS_TMP/rx.json")" = 0 ]; then
	ok "recv reports the socket's drops (SO_RXQ_OVFL): 0"
else
	not_ok "recv reports the socket's drops (SO_RXQ_OVFL): 0"
	diag "$(jq -c 'del(.sources)' "$NETNS_TMP/rx.json")"
fi

# IPv6, a batch larger than the count, with departure times (-T): all arrive.
recv_start rx6 -t 3 -n 50 || { not_ok "the IPv6 receiver starts"; exit 1; }
send_burst -s "${SRC6[0]}" -d "$ADDR6_RX" -n 50 -b 256 -T 10 ||
	not_ok "send -b 256 -T 10 over IPv6: exit status 0"
recv_wait rx6 || not_ok "the IPv6 receiver reports"
got="$(src_field rx6 "${SRC6[0]}" count) $(src_field rx6 "${SRC6[0]}" lost)"
if [ "$got" = "50 0" ]; then ok "IPv6, -b 256 -T 10: 50 of 50 arrived"; else
	not_ok "IPv6, -b 256 -T 10: 50 of 50 arrived"; diag "count lost: $got"; fi
tap_done

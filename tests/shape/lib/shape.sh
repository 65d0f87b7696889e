# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
# A lab for the shaper's tests (tests/shape/*.sh); source it after
# tests/lib/tap.sh and tests/lib/netns.sh.
#
#   shape_need NAME            skip (and exit) unless root, tc, jq, sluice-probe
#                              and a kernel that can make an fq qdisc
#   shape_need_sluice NAME     skip unless sluice and sluicectl are built
#   shape_twice NAME FN S1 S2  FN S1 (a case's checks), and FN S2 in its place when one failed
#   shape_lab PREFIX N [K]     netns_setup PREFIX N, plus K more source addresses on
#                              the sender (SRC4[i] 198.18.N.(11+i)/32, SRC6[i]
#                              2001:2:0:N(11+i)::1/128: each in a /64 of its own,
#                              the shaper's default IPv6 key), permanent neighbours both
#                              ways (no ARP/ND queueing the first packet of a
#                              burst), and a cleanup that detaches the shaper and
#                              removes the sender namespace's pins
#   tx_sluice ARGS / tx_ctl ARGS   $SLUICE / $SLUICECTL in the sender's namespace
#   recv_start NAME ARGS       sluice-probe recv -j ARGS in the receiver's namespace
#                              (through $RECV_EXEC, default rx_exec), in the
#                              background; returns once its socket is bound
#   recv_wait NAME             wait for it; its JSON is then in $NETNS_TMP/NAME.json,
#                              read once (jq is slow to start under emulation):
#                              NAME.fields for src_field, NAME.show for recv_show
#   recv_show NAME             the report without its packets, as TAP comments
#   send_burst ARGS            sluice-probe send -j ARGS in the sender's namespace
#                              (its JSON in $NETNS_TMP/send.json)
#   src_field NAME SRC FIELD   one field of one source's report of recv NAME
#   shape_stat FIELD...        sluice_shape_stats fields of the shaper on IF_TX
#                              (SHAPE_PINS, SHAPE_IF and SHAPE_EXEC name another),
#                              summed over CPUs (max_delay_ns: the max; hist: per
#                              bin, as JSON), on one line, via one bpftool dump
#   ctl_stat FIELD...          fields of `sluicectl -i shape:IF_TX -j stats`, on one line
#   gcra_sim SRC T_US BURST DELAY [MODE...]   the shaper's GCRA replayed on the
#                              send times of the last send_burst -a from SRC, a
#                              line per MODE (send_us, before each sendmsg();
#                              send_end_us, after it; hi, lo: the two mixes):
#                              "accepted delayed dropped" (DELAY: the --delay; a
#                              huge one for --nodelay)
#   delayed_range SRC T_US BURST DELAY   "LO HI": the delayed counts of the four
#                              replays; the program's clock reads in between
#   fcmp EXPR                  awk's verdict on a numeric expression (exit status)

SLUICE_PROBE=${SLUICE_PROBE:-$BUILD/sluice-probe}
PORT=${PORT:-9000}

shape_need() {
	local name=$1
	netns_need_root "$name" tc jq bpftool
	if [ ! -x "$SLUICE_PROBE" ]; then
		skip "sluice-probe is not built ($SLUICE_PROBE is missing): run 'make'" "$name"
		exit 0
	fi
}

shape_need_sluice() {
	local b
	for b in "$SLUICE" "$SLUICECTL"; do
		if [ ! -x "$b" ]; then
			skip "sluice not built ($b is missing): run 'make'" "$1"
			exit 0
		fi
	done
}

# fq_or_skip NAME: after shape_lab; skip unless IF_TX can have an fq root.
fq_or_skip() {
	if ! tx_exec tc qdisc add dev "$IF_TX" root fq 2>/dev/null; then
		skip "this kernel ($(uname -r)) cannot make an fq qdisc (CONFIG_NET_SCH_FQ): tests/run.sh runs the shape suite in a qemu guest then" "$1"
		exit 0
	fi
	tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
}

SRC4=() SRC6=()
shape_lab() {
	local prefix=$1 n=$2 k=${3:-0} i mac_tx mac_rx
	if [ "$n" -gt 99 ] || [ "$k" -gt 88 ]; then
		echo "shape_lab: N $n, K $k: want N <= 99 and K <= 88 (the IPv6 sources' /64s)" >&2
		return 1
	fi
	netns_setup "$prefix" "$n" || return 1
	TX_NETNS_DIR="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS_TX")"
	pins_watch "$TX_NETNS_DIR" "$NS_TX" || return 1
	for ((i = 0; i < k; i++)); do
		SRC4+=("198.18.$n.$((11 + i))")
		SRC6+=("2001:2:0:$n$((11 + i))::1")
		ip -n "$NS_TX" addr add "${SRC4[i]}/32" dev "$IF_TX" &&
			ip -n "$NS_TX" addr add "${SRC6[i]}/128" dev "$IF_TX" nodad || return 1
	done
	mac_tx=$(ip -n "$NS_TX" -br link show dev "$IF_TX" | awk '{print $3}')
	mac_rx=$(ip -n "$NS_RX" -br link show dev "$IF_RX" | awk '{print $3}')
	ip -n "$NS_TX" neigh replace "$ADDR4_RX" lladdr "$mac_rx" dev "$IF_TX" nud permanent &&
		ip -n "$NS_TX" neigh replace "$ADDR6_RX" lladdr "$mac_rx" dev "$IF_TX" nud permanent ||
		return 1
	for i in "$ADDR4_TX" "$ADDR6_TX" "${SRC4[@]}" "${SRC6[@]}"; do
		ip -n "$NS_RX" neigh replace "$i" lladdr "$mac_tx" dev "$IF_RX" nud permanent ||
			return 1
	done
}

netns_extra_cleanup() {
	if [ -x "$SLUICE" ] && ip netns list | grep -qw "$NS_TX"; then
		tx_sluice shape detach "$IF_TX" >/dev/null 2>&1
	fi
	declare -F shape_extra_cleanup >/dev/null && shape_extra_cleanup
	return 0
}

tx_sluice() { tx_exec "$SLUICE" "$@"; }
tx_ctl() { tx_exec "$SLUICECTL" "$@"; }

declare -A RECV_PID
recv_start() {
	local name=$1 i
	shift
	rm -f "$NETNS_TMP/$name.ready"
	${RECV_EXEC:-rx_exec} "$SLUICE_PROBE" recv -j -p "$PORT" -r "$NETNS_TMP/$name.ready" "$@" \
		>"$NETNS_TMP/$name.json" 2>"$NETNS_TMP/$name.err" &
	RECV_PID[$name]=$!
	NETNS_PIDS+=($!)
	for ((i = 0; i < 200; i++)); do
		[ -e "$NETNS_TMP/$name.ready" ] && return 0
		kill -0 "${RECV_PID[$name]}" 2>/dev/null || break
		sleep 0.05
	done
	diag "sluice-probe recv $name did not start: $(cat "$NETNS_TMP/$name.err")"
	return 1
}

# recv_wait NAME: the receiver's end, and its report read once (jq starts in
# about 0.4 s in the emulated guest, and a script reads a dozen fields of each
# report): NAME.fields holds each source's scalar fields (src_field) and
# NAME.show the report without the packet list (recv_show).
recv_wait() {
	local st f=$NETNS_TMP/$1
	wait "${RECV_PID[$1]}"
	st=$?
	rm -f "$f.fields" "$f.show"
	if [ "$st" != 0 ] || ! jq -r '
		if (.total // false) == false then error("no total") else . end
		| ("show\t" + (del(.sources[]?.packets) | tojson)),
		  (.sources[] | .src as $s | to_entries[]
			| select(.value | type | . != "array" and . != "object")
			| "\($s)\t\(.key)\t\(.value)")' "$f.json" >"$f.fields" 2>/dev/null; then
		diag "sluice-probe recv $1 failed (exit status $st): $(cat "$f.err")"
		return 1
	fi
	sed -n 's/^show\t//p' "$f.fields" >"$f.show"
}

send_burst() {
	if ! tx_exec "$SLUICE_PROBE" send -j -p "$PORT" "$@" >"$NETNS_TMP/send.json" \
		2>"$NETNS_TMP/send.err"; then
		diag "sluice-probe send $* failed: $(cat "$NETNS_TMP/send.err")"
		return 1
	fi
}

# src_field NAME SRC FIELD: a scalar field of SRC in the receiver's report
# (0 when it has none), from what recv_wait read.
src_field() {
	local s f v
	[ -e "$NETNS_TMP/$1.fields" ] || return 0
	while IFS=$'\t' read -r s f v; do
		if [ "$s" = "$2" ] && [ "$f" = "$3" ]; then
			case $v in null | false) echo 0 ;; *) echo "$v" ;; esac
			return 0
		fi
	done <"$NETNS_TMP/$1.fields"
	echo 0
}

# recv_show NAME: the receiver's report without the packet list, as TAP comments.
recv_show() {
	diag "$(cat "$NETNS_TMP/$1.show" 2>/dev/null)"
}

# shape_stat FIELD...: the shaper's counters (sluice_shape_stats, summed over
# the CPUs; max_delay_ns their maximum, hist the histogram's sum per bin as
# JSON), on one line, in one dump and one jq.
shape_stat() {
	local pin="${SHAPE_PINS:-$TX_NETNS_DIR/shape:$IF_TX}/sluice_shape_stats"
	bpftool -j map dump pinned "$pin" 2>/dev/null | jq -r '
		[.. | objects | select(has("value") and (.value | type) == "object") | .value] as $v
		| [$ARGS.positional[] as $f | [$v[] | .[$f]] as $x
		   | if $f == "max_delay_ns" then ($x | max) // 0
		     elif $f == "hist" then [range(0; ($x[0] | length)) as $i | [$x[] | .[$i]] | add]
		     else ($x | add) // 0 end
		   | tojson] | join(" ")' --args "$@"
}

# ctl_stat FIELD...: those fields of `sluicectl -i shape:IF -j stats`, on one
# line (one sluicectl and one jq for all of them).
ctl_stat() {
	${SHAPE_EXEC:-tx_exec} "$SLUICECTL" -i "shape:${SHAPE_IF:-$IF_TX}" -j stats |
		jq -r '[.[$ARGS.positional[]] | if . == null then "-" else tostring end] | join(" ")' \
			--args "$@"
}

# The model is sluice_gcra_shape() of include/sluice/algo.h: base = max(TAT,
# now); dropped when base - now > burst x T; else TAT = base + T, and delayed
# when base - now > delay x T. The program reads its clock inside sendmsg():
# after the time before it, before the time after it. Mostly they are
# microseconds apart, but a send can stall for milliseconds in an emulated
# guest (the first one: 9 ms measured), and each packet's clock may sit
# anywhere in its own span. In a burst the first packet sets the TAT the
# others queue behind, so the most delays come from the first read as late
# as it can be and the others as early, the fewest from the reverse: the
# replays are made on the times before each send (send_us), after it
# (send_end_us), and on those two mixes (hi: the first's end, the others'
# starts; lo: the reverse), and the program's count must lie within them.
# gcra_sim SRC T BURST DELAY [MODE...]: "accepted delayed dropped" for each
# MODE (send_us, the default; send_end_us, hi, lo), a line each, in one jq.
gcra_sim() {
	local s=$1 t=$2 b=$3 d=$4
	shift 4
	[ $# -gt 0 ] || set -- send_us
	jq -r --arg s "$s" --argjson t "$t" --argjson b "$b" --argjson d "$d" \
		--args '
		$ARGS.positional[] as $f
		| .sources[] | select(.src == $s)
		| (if $f == "hi" then [.send_end_us[0]] + .send_us[1:]
		   elif $f == "lo" then [.send_us[0]] + .send_end_us[1:]
		   else .[$f] end)
		| reduce .[] as $now ({tat: null, acc: 0, del: 0, drop: 0};
			(if .tat == null or .tat < $now then $now else .tat end) as $base
			| if $base - $now > $b * $t then .drop += 1
			  else .tat = $base + $t | .acc += 1
				| if $base - $now > $d * $t then .del += 1 else . end
			  end)
		| "\(.acc) \(.del) \(.drop)"' "$@" <"$NETNS_TMP/send.json"
}

# delayed_range SRC T BURST DELAY: "LO HI", the fewest and the most delayed
# packets of the four replays.
delayed_range() {
	local n lo= hi= k=0
	while read -r _ n _; do
		[ -n "$n" ] || return 1
		k=$((k + 1))
		if [ -z "$lo" ] || [ "$n" -lt "$lo" ]; then lo=$n; fi
		if [ -z "$hi" ] || [ "$n" -gt "$hi" ]; then hi=$n; fi
	done < <(gcra_sim "$@" send_us send_end_us hi lo)
	[ "$k" = 4 ] || return 1
	echo "$lo $hi"
}

# in_range V "LO HI": LO <= V <= HI.
in_range() {
	local lo hi
	read -r lo hi <<<"$2"
	[ -n "$1" ] && [ -n "$lo" ] && [ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ]
}

fcmp() { awk "BEGIN { exit !($1) }"; }

# shape_twice NAME FUNC SRC1 SRC2: run FUNC SRC1 (a case's checks of one
# burst, its TAP lines as it prints them); when one of them failed, show them
# as notes and run FUNC SRC2 instead, whose lines are the case's. Under
# emulation a stall of several ms now and then delays every arrival after
# it; it does not strike twice in a row, while a wrong shaper fails both.
shape_twice() {
	local name=$1 fn=$2 out
	out=$("$fn" "$3")
	if grep -q '^not ok' <<<"$out"; then
		diag "$name: a check failed on the burst from $3 (below, as notes):" \
			"measured once more from $4; that measurement is the one reported"
		diag "$out"
		out=$("$fn" "$4")
	fi
	printf '%s\n' "$out"
	TAP_FAILED=$((TAP_FAILED + $(grep -c '^not ok' <<<"$out")))
}

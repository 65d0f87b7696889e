# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A two-namespace lab for sluice's net tests, the demo and the bench; source it.
#
#   netns_setup PREFIX [N]   two fresh namespaces and a veth pair between them:
#       NS_TX / IF_TX  the sender's namespace and its veth end,   198.18.N.1/24  2001:2:0:N::1/64
#       NS_RX / IF_RX  the receiver's namespace and its veth end, 198.18.N.2/24  2001:2:0:N::2/64
#     Names carry PREFIX and $$, so runs side by side never meet. No default
#     route, no other address. A trap removes everything the lab made on exit,
#     failure and Ctrl-C included: sluice is detached, what is left of its pins
#     (RX_PINS, that is /sys/fs/bpf/sluice/netns:INODE/IF_RX: the receiver's
#     namespace is not the initial one) removed as pins_release says,
#     background jobs stopped, the namespaces deleted.
#   pins_watch DIR NS / pins_release  pin directories a test may remove: only
#                                   what it made (see "Pin directories" below)
#   rx_sluice ARGS / rx_ctl ARGS   run $SLUICE / $SLUICECTL in the receiver's namespace
#   row MATCH / tag_of MATCH        one row of IF_RX's 'rule list -j', and its tag
#   rx_exec CMD / tx_exec CMD       run anything in one namespace
#   tx_gen ARGS                     run $SLUICE_GEN out of IF_TX
#   netns_bg CMD...                 run CMD in the background, stopped by the cleanup
#   NETNS_DEL+=(NS)                 another namespace of the test's: the cleanup deletes
#                                   it after pins_release (which needs it alive)
#   rx_counter_add NAME MATCH...    count at the receiver what passed XDP (nft netdev
#   rx_counter NAME                 ingress, after XDP): e.g. rx_counter_add a ip saddr X
#   gen_bg NAME ARGS / gen_wait NAME   tx_gen -j in the background; gen_wait sets
#                                   NAME_packets, NAME_seconds, NAME_lag (ms) from its report
#   held_check NAME BURST RATE FN   is a flood held to BURST + RATE x time? (with retries)
#   sluice_stat FIELD               a sluice_stats field of IF_RX, summed over CPUs, via bpftool
#   xdp_prog_id                     the id of the XDP program on IF_RX, empty when none
#   tx_lost                         frames sent that IF_RX's queues had no room for (lost
#                                   before XDP: a starved receiver), since the lab was made
#   ratio A E / within PCT A E      A/E printed; true when A is within PCT % of E
#
# sluice runs through `nsenter --net`: `ip netns exec` would remount /sys and
# hide the root bpffs where sluice keeps its pins; the generator pins nothing,
# so plain `ip netns exec` is fine for it.

NETNS_PIDS=()
NETNS_DEL=() # more namespaces of the test's, deleted after pins_release
NETNS_READY=0
NETNS_TMP=
declare -A NETNS_GEN_PID

# netns_need_root NAME [TOOL...]: print a TAP skip and exit unless we may
# build a lab (and have every TOOL the test uses besides ip and nsenter).
netns_need_root() {
	local name=$1 t
	shift
	if [ "$(id -u)" != 0 ]; then
		skip "needs root (CAP_NET_ADMIN, CAP_BPF): run 'sudo make test'" "$name"
		exit 0
	fi
	for t in ip nsenter "$@"; do
		if ! command -v "$t" >/dev/null; then
			skip "'$t' is not installed: run 'sudo make deps'" "$name"
			exit 0
		fi
	done
}

# netns_need_sluice NAME: print a TAP skip and exit unless sluice, sluicectl
# and sluice-gen are built.
netns_need_sluice() {
	local b
	for b in "$SLUICE" "$SLUICECTL" "$SLUICE_GEN"; do
		if [ ! -x "$b" ]; then
			skip "sluice not built ($b is missing): run 'make'" "$1"
			exit 0
		fi
	done
}

netns_setup() {
	local prefix=$1 n=${2:-1} ns
	NS_TX="${prefix}-tx-$$"
	NS_RX="${prefix}-rx-$$"
	IF_TX="${prefix}t$$"
	IF_RX="${prefix}r$$"
	if [ ${#IF_RX} -gt 15 ]; then
		echo "netns_setup: interface name $IF_RX is longer than 15 characters:" \
			"use a shorter prefix than '$prefix'" >&2
		return 1
	fi
	ADDR4_TX="198.18.$n.1"
	ADDR4_RX="198.18.$n.2"
	ADDR6_TX="2001:2:0:$n::1"
	ADDR6_RX="2001:2:0:$n::2"
	trap netns_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	NETNS_READY=1
	NETNS_TMP=$(mktemp -d /tmp/sluice-netns.XXXXXX) || return 1
	ip netns add "$NS_TX" || return 1
	ip netns add "$NS_RX" || return 1
	ip link add "$IF_TX" netns "$NS_TX" type veth peer name "$IF_RX" netns "$NS_RX" ||
		return 1
	ip -n "$NS_TX" addr add "$ADDR4_TX/24" dev "$IF_TX" &&
		ip -n "$NS_TX" addr add "$ADDR6_TX/64" dev "$IF_TX" nodad &&
		ip -n "$NS_RX" addr add "$ADDR4_RX/24" dev "$IF_RX" &&
		ip -n "$NS_RX" addr add "$ADDR6_RX/64" dev "$IF_RX" nodad || return 1
	for ns in "$NS_TX" "$NS_RX"; do
		# No router solicitations, no MLD: the receiver sees only what
		# the test sends (and a little ARP/ND, counted as such).
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.router_solicitations=0 \
			net.ipv6.conf.default.router_solicitations=0 2>/dev/null
		ip -n "$ns" link set lo up || return 1
	done
	ip -n "$NS_TX" link set "$IF_TX" up && ip -n "$NS_RX" link set "$IF_RX" up || return 1
	RX_NETNS_DIR="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS_RX")"
	RX_PINS="$RX_NETNS_DIR/$IF_RX"
	pins_watch "$RX_NETNS_DIR" "$NS_RX" || return 1
	# The sender's too: a test may attach there (a shaper, a second limiter).
	pins_watch "/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS_TX")" \
		"$NS_TX" || return 1
	# A veth takes frames sent to it with XDP (the generator's) only while
	# its peer runs NAPI: with an XDP program attached, or with GRO on.
	# GRO on makes the lab work with no program on the receiver too.
	if command -v ethtool >/dev/null; then
		ip netns exec "$NS_RX" ethtool -K "$IF_RX" gro on >/dev/null 2>&1
	fi
	return 0
}

# ---- Pin directories: a test removes only what it made ----
#
# bpffs is the machine's, not the test's: /sys/fs/bpf/sluice/netns:INODE is
# named by a namespace's nsfs inode, and the kernel gives a freed inode to
# the next namespace. A directory of that name that exists when the test's
# namespace is made was left by another namespace (a kept state, someone's
# stale pins): it is not the test's, whatever its name. So:
#   pins_watch DIR NS   before anything runs in namespace NS (an 'ip netns'
#       name), note DIR (NS's directory, /sys/fs/bpf/sluice/netns:INODE, or
#       one state's, .../IFACE) as the test's to clean up, with NS's inode.
#       A DIR that exists already is not noted: the cleanup never touches it.
#   pins_release        (netns_cleanup calls it; a test without the lab calls
#       it itself) for each noted DIR, newest first, while its namespace still
#       exists: every state directory in it (or DIR itself, for a state's)
#       whose sluice_config records NS as its owner (owner.netns_ino, which
#       no other namespace can have while NS exists) loses the pins sluice
#       makes (sluice_* files: unlink, one by one) and is rmdir'ed; then a
#       namespace's DIR is rmdir'ed. Never rm -rf: anything else (another
#       owner's state, a file or directory sluice does not make) stays, and
#       a comment names it. A namespace that is gone (the test deleted it)
#       releases nothing: its inode may be another's already.
# Call pins_release after detaching and before deleting the namespaces.
PINS_WATCHED=()
pins_watch() {
	local dir=$1 ns=$2 ino
	ino=$(stat -L -c %i "/var/run/netns/$ns") || {
		echo "pins_watch: no namespace '$ns' (/var/run/netns/$ns)" >&2
		return 1
	}
	if [ -e "$dir" ]; then
		diag "$dir exists already (made before this test's namespace $ns):" \
			"not this test's, its cleanup leaves it"
		return 0
	fi
	case " ${PINS_WATCHED[*]} " in *" $ns $ino $dir "*) return 0 ;; esac
	PINS_WATCHED+=("$ns $ino $dir")
}

# pins_owner_ino DIR: the nsfs inode a state's sluice_config records as its
# owner's namespace; empty when DIR has none (no config, an older layout).
pins_owner_ino() {
	{ bpftool -j map dump pinned "$1/sluice_config" 2>/dev/null |
		grep -o '"owner":{[^}]*}' | grep -o '"netns_ino":[0-9]*' | head -1 |
		cut -d: -f2; } || true
}

# pins_release_state DIR INO: DIR's sluice pins and DIR itself, when its
# recorded owner is namespace INO.
pins_release_state() {
	local dir=$1 ino=$2 owner f left=()
	[ -d "$dir" ] || return 0
	owner=$(pins_owner_ino "$dir")
	if [ "$owner" != "$ino" ]; then
		diag "left $dir: its recorded owner is net:[${owner:-none}], not this test's" \
			"net:[$ino]"
		return 0
	fi
	for f in "$dir"/* "$dir"/.[!.]*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		case ${f##*/} in
		sluice_*) [ -d "$f" ] || { rm -f "$f" && continue; } ;;
		esac
		left+=("${f##*/}")
	done
	rmdir "$dir" 2>/dev/null ||
		diag "left $dir: it holds what sluice does not make (${left[*]:-?})"
}

pins_release() {
	local i ns ino dir d
	for ((i = ${#PINS_WATCHED[@]} - 1; i >= 0; i--)); do
		read -r ns ino dir <<<"${PINS_WATCHED[i]}"
		[ -e "$dir" ] || continue
		if [ "$(stat -L -c %i "/var/run/netns/$ns" 2>/dev/null)" != "$ino" ]; then
			diag "left $dir: namespace $ns is gone, its inode $ino may be another's now"
			continue
		fi
		case ${dir##*/} in
		netns:*)
			for d in "$dir"/*/; do
				[ -d "$d" ] && pins_release_state "${d%/}" "$ino"
			done
			rmdir "$dir" 2>/dev/null ||
				diag "left $dir: it holds what this test did not make: $(ls -A "$dir" | tr "\n" " ")"
			;;
		*) pins_release_state "$dir" "$ino" ;;
		esac
	done
	PINS_WATCHED=()
}

rx_exec() { nsenter --net="/var/run/netns/$NS_RX" "$@"; }
tx_exec() { nsenter --net="/var/run/netns/$NS_TX" "$@"; }
rx_sluice() { rx_exec "$SLUICE" "$@"; }
rx_ctl() { rx_exec "$SLUICECTL" "$@"; }
tx_gen() { ip netns exec "$NS_TX" "$SLUICE_GEN" -i "$IF_TX" "$@"; }

# row MATCH: the JSON object of one row of IF_RX's 'rule list -j';
# tag_of MATCH: its "tag":N.
row() {
	rx_ctl -i "$IF_RX" -j rule list | sed 's/{"match":/\n&/g' | grep -F "{\"match\":\"$1\""
}
tag_of() { row "$1" | grep -o '"tag":[0-9]*' | head -1; }

netns_bg() {
	"$@" &
	NETNS_PIDS+=($!)
}

# Counters after XDP: an nft netdev ingress chain sees only what XDP passed.
rx_counter_add() {
	local name=$1
	shift
	if ! rx_exec nft list table netdev sluice_test >/dev/null 2>&1; then
		rx_exec nft -f - <<-EOF || return 1
		table netdev sluice_test {
			chain in {
				type filter hook ingress device "$IF_RX" priority 0;
			}
		}
		EOF
	fi
	rx_exec nft add counter netdev sluice_test "$name" &&
		rx_exec nft add rule netdev sluice_test in "$@" counter name "$name"
}

rx_counter() {
	rx_exec nft list counter netdev sluice_test "$1" |
		awk '$1 == "packets" { print $2; found = 1 } END { if (!found) exit 1 }'
}

rx_counter_reset() {
	rx_exec nft reset counter netdev sluice_test "$1" >/dev/null
}

gen_bg() {
	local name=$1
	shift
	tx_gen -j "$@" >"$NETNS_TMP/$name.json" 2>"$NETNS_TMP/$name.err" &
	NETNS_GEN_PID[$name]=$!
	NETNS_PIDS+=($!)
}

# gen_stop NAME: stop gen_bg NAME now (it reports what it sent until then);
# gen_wait NAME afterwards as for one that ended.
# (The pid is the subshell of tx_gen: the generator is its child.)
gen_stop() { pkill -INT -P "${NETNS_GEN_PID[$1]}" 2>/dev/null; }

# gen_wait NAME: wait for gen_bg NAME; sets NAME_packets, NAME_seconds; fails
# (showing the generator's error) when it failed.
gen_wait() {
	local name=$1 st f="$NETNS_TMP/$1.json" p s
	wait "${NETNS_GEN_PID[$name]}"
	st=$?
	p=$(sed -n 's/.*"packets":\([0-9]*\).*/\1/p' "$f")
	s=$(sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' "$f")
	if [ "$st" != 0 ] || [ -z "$p" ] || [ -z "$s" ]; then
		diag "sluice-gen $name failed (exit status $st): $(cat "$NETNS_TMP/$name.err")"
		return 1
	fi
	printf -v "${name}_packets" %s "$p"
	printf -v "${name}_seconds" %s "$(awk -v s="$s" 'BEGIN { printf "%.4f", s }')"
	printf -v "${name}_lag" %s "$(sed -n 's/.*"max_lag_ms":\([0-9.e+-]*\).*/\1/p' "$f")"
}

# held_verdict ADMITTED BURST RATE SECS LAG_MS: is a flood held to
# BURST + RATE x SECS? Prints the ratio as a TAP comment; returns
#   0  within 2 %;
#   1  more: wrong whatever the sender or the machine did;
#   2  less, and the sender fell LAG_MS behind its schedule, longer than the
#      bucket's depth (BURST / RATE): such a pause forfeits what it would have
#      earned, so the count says nothing about sluice;
#   3  less, with no such pause seen by the sender.
held_verdict() {
	local admitted=$1 burst=$2 rate=$3 secs=$4 lag=${5:-0} expected
	expected=$(awk -v b="$burst" -v r="$rate" -v t="$secs" 'BEGIN { printf "%d", b + r * t }')
	diag "admitted/expected ratio: $(ratio "$admitted" "$expected") (admitted $admitted;" \
		"expected $burst + $rate/s x $secs s = $expected; sender at most ${lag} ms late)"
	within 2 "$admitted" "$expected" && return 0
	[ "$admitted" -gt "$expected" ] && return 1
	awk -v l="$lag" -v b="$burst" -v r="$rate" 'BEGIN { exit !(l > 900 * b / r) }' || return 3
	diag "the sender was held off the CPU for longer than the bucket's depth" \
		"($((burst * 1000 / rate)) ms): a busy machine, not a verdict on sluice"
	return 2
}

# held_check NAME BURST RATE FN: FN TRY runs one measurement with fresh
# sources and sets HELD_ADMITTED, HELD_SECS, HELD_LAG. A count above the bound
# fails at once. One below it is measured again, up to 3 tries in all: the
# receiving side can be starved too on a busy machine, where the sender
# cannot see it, while a limiter that drops too much does so every time.
held_check() {
	local name=$1 burst=$2 rate=$3 fn=$4 try verdict=3
	for try in 1 2 3; do
		"$fn" "$try" || { not_ok "$name (the measurement failed)"; return 1; }
		held_verdict "$HELD_ADMITTED" "$burst" "$rate" "$HELD_SECS" "$HELD_LAG"
		verdict=$?
		[ $verdict -le 1 ] && break
		[ $try -lt 3 ] && diag "measuring again with fresh sources"
	done
	# Over the bound: the limiter's counters (update_failed, fail-open, the
	# key table's) say which way the extra packets went.
	[ $verdict = 1 ] && diag "over the bound; the limiter's counters:" \
		"$(rx_ctl -i "$IF_RX" stats 2>&1 | tr -s ' \n' ' ')"
	case $verdict in
	0) ok "$name" ;;
	2) skip "the sender fell behind its schedule in 3 tries (machine busy); no excess seen" \
		"$name" ;;
	*) not_ok "$name" ;;
	esac
}

# cfg_bytes PIN: a pinned config's bytes, as bpftool -j prints them; cfg_poke
# PIN OFFSET BYTE...: write BYTEs over them at OFFSET (the layout is the first
# word).
cfg_bytes() {
	bpftool -j map lookup pinned "$1" key 0 0 0 0 |
		sed 's/.*"value":\[\([^]]*\)\].*/\1/; s/[",]/ /g'
}
cfg_poke() {
	local pin=$1 off=$2 i b
	shift 2
	read -ra b <<<"$(cfg_bytes "$pin")"
	[ "${#b[@]}" -ge 8 ] || return 1
	for i in "$@"; do b[off]=$i; off=$((off + 1)); done
	bpftool map update pinned "$pin" key 0 0 0 0 value "${b[@]}"
}

sluice_stat() {
	bpftool -j map dump pinned "$RX_PINS/sluice_stats" |
		grep -o "\"$1\":[0-9]*" | awk -F: '{ s += $2 } END { print s + 0 }'
}

xdp_prog_id() {
	ip -n "$NS_RX" -d link show dev "$IF_RX" |
		awk '$1 ~ /^prog\/xdp/ {
			for (i = 1; i < NF; i++) if ($i == "id") { print $(i + 1); exit }
		}'
}

tx_lost() {
	tx_exec ethtool -S "$IF_TX" 2>/dev/null |
		awk '$1 ~ /xdp_xmit_errors:$/ { s += $2 } END { print s + 0 }'
}

ratio() { awk -v a="$1" -v e="$2" 'BEGIN { printf "%.4f", e ? a / e : 0 }'; }
within() {
	awk -v p="$1" -v a="$2" -v e="$3" \
		'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= e * p / 100) }'
}

# ---- `sluice run` in the receiver's namespace (run.sh, metrics.sh) ----

RUN_PID= RUN_OUT= RUN_ST=
# A run in the foreground, bounded: one that is not refused would report on.
rx_run_fg() { timeout 10 nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$@"; }

# run_start NAME ARGS...: `sluice run ARGS` in the receiver's namespace, in
# the background (RUN_PID is sluice's own pid: nsenter execs it), its
# output in RUN_OUT.
run_start() {
	RUN_OUT=$NETNS_TMP/$1.out
	shift
	nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$@" >"$RUN_OUT" 2>&1 &
	RUN_PID=$!
	NETNS_PIDS+=("$RUN_PID")
}

# run_url: wait (up to 5 s) for the run's "serving the counters at URL";
# sets URL, and PORT when the URL has one.
run_url() {
	local i
	URL= PORT=
	for i in $(seq 100); do
		URL=$(sed -n 's/^serving the counters at \(http:[^ ]*\)$/\1/p' "$RUN_OUT")
		[ -n "$URL" ] && break
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	PORT=$(sed -n 's|^http://.*:\([0-9]*\)/metrics$|\1|p' <<<"$URL")
	[ -n "$URL" ]
}

reports() { grep -c ' pps; top drops:' "$RUN_OUT"; }

# run_reporting [N]: wait (up to 5 s) until the run has printed N reports.
run_reporting() {
	local n=${1:-1} i
	for i in $(seq 100); do
		[ "$(reports)" -ge "$n" ] && return 0
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	[ "$(reports)" -ge "$n" ]
}

# run_exit SECS: wait for the run to exit, killing it after SECS; RUN_ST is
# its exit status. Fails when it had to be killed. (A poll, not a watchdog
# subshell: a subshell killed right after its fork may run the test's traps.)
run_exit() {
	local i state
	for ((i = 0; i < $1 * 20; i++)); do
		state=$(sed 's/.*) //' "/proc/$RUN_PID/stat" 2>/dev/null | cut -d' ' -f1)
		[ -z "$state" ] || [ "$state" = Z ] && break
		sleep 0.05
	done
	if [ -n "$state" ] && [ "$state" != Z ]; then
		kill -KILL "$RUN_PID" 2>/dev/null
		wait "$RUN_PID" 2>/dev/null
		RUN_ST=$?
		return 1
	fi
	wait "$RUN_PID" 2>/dev/null
	RUN_ST=$?
	return 0
}


netns_cleanup() {
	local st=$? pid ns
	trap - EXIT INT TERM
	[ "$NETNS_READY" = 1 ] || return $st
	NETNS_READY=0
	if declare -F netns_extra_cleanup >/dev/null; then
		netns_extra_cleanup
	fi
	for pid in "${NETNS_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${NETNS_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ -x "$SLUICE" ] && ip netns list | grep -qw "$NS_RX"; then
		rx_sluice detach "$IF_RX" >/dev/null 2>&1
	fi
	# The pins outlive the interface: remove what is left of the lab's
	# (pins_release: only what it made), even when detach could not.
	pins_release
	# Whatever still runs in the test's namespaces is the test's (a child
	# of a backgrounded function outlives the subshell whose pid it has):
	# it goes with them, not on as an orphan in the root namespace's list.
	netns_kill_all "${NETNS_DEL[@]}" "$NS_TX" "$NS_RX"
	[ -n "$NETNS_TMP" ] && rm -rf "$NETNS_TMP"
	for ns in "${NETNS_DEL[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	ip netns del "$NS_TX" 2>/dev/null
	ip netns del "$NS_RX" 2>/dev/null
	return $st
}

# netns_kill_all NS...: kill -9 every process in the namespaces NS (this
# test's own: the names are unique to it), and wait until none is left.
netns_kill_all() {
	local ns pids i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pids=
		for ns in "$@"; do
			[ -n "$ns" ] && pids="$pids $(ip netns pids "$ns" 2>/dev/null)"
		done
		[ -n "${pids// /}" ] || return 0
		# shellcheck disable=SC2086
		kill -9 $pids 2>/dev/null
		sleep 0.1
	done
}

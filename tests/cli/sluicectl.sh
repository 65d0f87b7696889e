#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluicectl refuses bad input with exit status 2 and a message that names the
# problem, before it looks for an interface: none of this needs root or an
# attached sluice. An interface that does not exist is a wrong -i (exit 2,
# as for sluice); runtime failures (sluice not attached) exit 1.
set -u
source tests/lib/tap.sh

if [ ! -x "$SLUICECTL" ]; then
	skip "sluicectl is not built ($SLUICECTL): run 'make'" "sluicectl usage errors"
	exit 0
fi

# usage NAME PATTERN ARGS...: sluicectl ARGS exits 2 and says PATTERN.
usage() { local n=$1 p=$2; shift 2; expect_usage "$n" "$p" "$SLUICECTL" "$@"; }

# Rates
usage "rate 0" "is zero" set --rate 0/s
usage "negative rate" "negative" set --rate -5/s
usage "non-numeric rate" "not a number" set --rate many/s
usage "rate overflowing u64" "too large" set --rate 99999999999999999999/s
usage "decimal rate" "not a whole number" set --rate 1.5/s
usage "rate with an unknown unit" "unknown unit 'furlongs'" set --rate 10furlongs
usage "rate without a unit" "no unit" set --rate 100
usage "rate too high to tell apart" "at most 2tbit" set --rate 100tbit
usage "two packet rates" "two packet rates" set --rate 100/s --rate 200/s
usage "two byte rates" "two byte rates" rule add 198.18.0.0/24 --rate 1mbit --rate 2mbit
usage "rate option without a value" "--rate needs a value" set --rate
usage "rate option followed by an option" "--rate needs a value" set --rate --burst 5

# Bursts
usage "burst 0" "--burst is 0" set --rate 100/s --burst 0
usage "negative burst" "negative" set --rate 100/s --burst -3
usage "non-numeric burst" "not a whole number" set --rate 100/s --burst lots
usage "burst beyond 32 bits" "too large" set --rate 100/s --burst 99999999999
usage "burst x interval overflows" "too long to refill" set --rate 1/h --burst 4000000000
usage "byte burst smaller than a frame" "smaller than one full" set --rate 10mbit --burst 100
usage "two bursts for one rate" "two --burst" set --rate 100/s --burst 5 --burst 6

# Algorithms and windows
usage "unknown algorithm" "unknown algorithm 'fastest'" set --algo fastest
usage "algorithm given twice" "--algo is given twice" set --algo token-bucket --algo leaky-bucket
usage "window too short" "out of range" set --algo sliding-window --rate 10/s --window 50ms
usage "window too long" "out of range" set --algo fixed-window --rate 10/s --window 2h
usage "window not a duration" "not a duration" set --window soon
usage "window with token-bucket" "--window applies to" set --algo token-bucket --window 1s
usage "burst with sliding-window" "has no --burst" \
	set --algo sliding-window --rate 10/s --burst 5
usage "byte rate with fixed-window" "counts packets" set --algo fixed-window --rate 10mbit
usage "sliding-log beyond its slots" "at most 64" rule add 198.18.0.0/24 --algo sliding-log --rate 100/s
usage "window not holding whole packets" "not a whole number of packets" \
	set --algo fixed-window --rate 7/s --window 100ms

# Penalties
usage "penalty too long" "--penalty 20d is out of range: give 100ms to 19d, or off" \
	set --penalty 20d
usage "penalty not a duration" "not a duration" set --penalty soon
usage "penalty twice" "--penalty is given twice" set --penalty 30s --penalty 1m
usage "penalty on a deny rule" "takes no --rate, --burst, --delay, --algo, --window, --prefix, --penalty or --also-*" \
	rule add 198.18.0.0/24 --deny --penalty 30s
usage "penalty on an exempt rule" "--exempt takes no" rule add 198.18.0.0/24 --exempt --penalty 1m

# Second keys (--also-rate, --also-burst, --also-prefix4/6, --also-prefix)
usage "also: a byte rate" "the second key counts packets" set --also-rate 10mbit
usage "also: twice" "--also-rate is given twice" set --also-rate 10/s --also-rate 20/s
usage "also: off with a burst" "--also-rate off removes the second key" \
	set --also-rate off --also-burst 5
usage "also: burst 0" "--also-burst is 0" set --also-rate 10/s --also-burst 0
usage "also: a window algorithm" "only token-bucket and leaky-bucket" \
	set --algo fixed-window --rate 10/s --also-rate 100/s
usage "also: prefix too long" "too large: at most 32" set --also-rate 100/s --also-prefix4 33
usage "also: not shorter than the key" "is not shorter than the key's own /24" \
	rule add 198.18.0.0/16 --rate 10/s --prefix 24 --also-rate 100/s
usage "also: --also-prefix and --also-prefix4" "not both" \
	rule add 198.18.0.0/16 --rate 10/s --also-prefix 16 --also-prefix4 16 --also-rate 1/s
usage "also: on a deny rule" "--also-*" rule add 198.18.0.0/24 --deny --also-rate 10/s
usage "also: --also-prefix on set" "unknown option '--also-prefix'" set --also-prefix 16

# Key modes (--key)
usage "key mode unknown" "--key takes src (the source, the default), src,dport" set --key src,port
usage "key mode upper case" "write 'flow'" set --key Flow
usage "key given twice" "--key is given twice" set --key flow --key src,dport
usage "key without a value" "--key needs a value" set --key
usage "wide key with sliding-log" "the sliding log keeps its timestamps per source only" \
	set --algo sliding-log --rate 10/s --key src,dport
usage "wide key with a fleet" "a fleet-wide limit is shared per source only" \
	rule add 198.18.0.0/24 --rate 10/s --key flow --fleet
usage "key on a deny rule" "--deny takes no --key" rule add 198.18.0.0/24 --deny --key flow
usage "key on rule del" "unknown option '--key' for rule del" rule del 198.18.0.0/24 --key flow
usage "show a key of a bad port" "not a port" show 198.18.0.1 tcp/65536
usage "show a key of an unknown protocol" "is not a protocol" show 198.18.0.1 foo/1
usage "show icmp with a port" "icmp carries no ports" show 198.18.0.1 icmp/8
usage "flush a flow's destination last" "unexpected word '198.18.1.1'" flush 198.18.0.1 tcp/1 198.18.1.1
usage "flush two services" "unexpected word 'udp/53'" flush 198.18.0.1 tcp/443 udp/53

# Key prefixes
usage "prefix4 33" "at most 32" set --prefix4 33
usage "prefix4 0" "--prefix4 is 0" set --prefix4 0
usage "prefix6 129" "at most 128" set --prefix6 129
usage "prefix4 not a number" "not a whole number" set --prefix4 /24
usage "rule prefix beyond IPv4" "out of range for the IPv4 rule" \
	rule add 198.18.0.0/24 --rate 10/s --prefix 33
usage "rule prefix beyond IPv6" "at most 128" rule add 2001:2::/48 --rate 10/s --prefix 129

# Addresses and CIDRs
usage "bad IPv4 CIDR" "not an IPv4 or IPv6 address" rule add 198.18.0.300/24 --rate 1/s
usage "bad IPv6 CIDR" "not an IPv4 or IPv6 address" rule add 2001:2::g/48 --rate 1/s
usage "CIDR length past 32" "prefix length" rule add 198.18.0.0/33 --rate 1/s
usage "CIDR length not a number" "prefix length" rule add 198.18.0.0/x --rate 1/s
usage "host bits set" "host bits set: did you mean 198.18.0.0/24" rule add 198.18.0.1/24 --exempt
usage "host bits set in IPv6" "host bits set" rule del 2001:2::1/48
usage "show a bad address" "not an IPv4 or IPv6 address" show 198.18.0.999
usage "show a key with host bits set" "host bits set" show 198.18.0.1/24
usage "flush a bad CIDR" "host bits set" flush 198.18.0.1/16

# Commands, options and arguments
usage "unknown object" "unknown object 'frobnicate'" frobnicate
usage "ambiguous object" "ambiguous" s
usage "unknown rule command" "unknown command 'rule frob'" rule frob
usage "unknown global option" "unknown option '--frob'" --frob stats
usage "unknown set option" "unknown option '--frob' for set" set --frob 1
usage "unknown rule option" "unknown option '--prefix4' for rule add" \
	rule add 198.18.0.0/24 --rate 1/s --prefix4 24
usage "rule del takes no options" "unknown option '--rate' for rule del" \
	rule del 198.18.0.0/24 --rate 1/s
usage "unknown stats argument" "unknown argument '--frob'" stats --frob
usage "unknown top argument" "unknown argument '-x'" top -x
usage "set with nothing to change" "set needs something to change" set
usage "set with a stray word" "unexpected argument 'now'" set --rate 10/s now
usage "rule add without a CIDR" "needs a CIDR" rule add
usage "rule del without a CIDR" "needs a CIDR" rule del
usage "rule add without an action" "needs --rate RATE, --exempt or --deny" rule add 198.18.0.0/24
usage "rule add with two CIDRs" "takes one CIDR" rule add 198.18.0.0/24 198.19.0.0/24 --exempt
usage "exempt with a rate" "--exempt takes no --rate" rule add 198.18.0.0/24 --exempt --rate 1/s
usage "exempt and deny" "not both" rule add 198.18.0.0/24 --exempt --deny
usage "rule without a command" "Usage:" rule
usage "dry-run without on|off" "--dry-run of set needs 'on' or 'off'" set --dry-run
usage "dry-run maybe" "'on' or 'off', not 'maybe'" set --dry-run maybe

# Settings of set (what attach --new-keys / --fail-closed set)
usage "new-keys as a byte rate" "--new-keys counts new sources, not bytes" set --new-keys 10mbit
usage "new-keys not a rate" "--new-keys: rate 'lots'" set --new-keys lots
usage "new-keys without a value" "--new-keys needs a rate or 'off'" set --new-keys
usage "new-keys twice" "--new-keys is given twice" set --new-keys 10/s --new-keys off
usage "fail-closed maybe" "--fail-closed takes 'on' or 'off', not 'maybe'" set --fail-closed maybe
usage "fail-closed without on|off" "--fail-closed needs 'on' or 'off'" set --fail-closed
usage "new-keys on rule add" "unknown option '--new-keys' for rule add" \
	rule add 198.18.0.0/24 --rate 1/s --new-keys 10/s

# rule flush
usage "rule flush with an argument" "rule flush takes no arguments, not 'extra'" rule flush extra
usage "rule flush with a CIDR" "not '198.18.0.0/24'" rule flush 198.18.0.0/24
usage "rule list with an argument" "takes no arguments" rule list 198.18.0.0/24
usage "show without an address" "show needs an address" show
usage "show with two addresses" "one address" show 198.18.0.1 198.18.0.2
usage "flush with two CIDRs" "at most one" flush 198.18.0.0/24 198.18.1.0/24
usage "top -n 0" "-n is 0" top -n 0
usage "top -n without a number" "-n needs a number" top -n
usage "top -n too large" "too large" top -n 100000000
usage "stats --watch 0" "--watch '0' is 0" stats --watch 0
usage "stats --watch without seconds" "--watch needs" stats --watch
usage "prometheus and json" "leave out -j" -j stats --prometheus
usage "prometheus and watch" "leave out --watch" stats --prometheus --watch 1
usage "-i without a name" "-i needs an interface" -i
usage "-b without a file" "-b needs a file" -b
usage "-b with a command" "takes no command" -b /dev/null stats
usage "-b twice" "-b is given twice" -b f -b g
usage "--batch twice" "-b is given twice" --batch=f -b g
usage "no arguments" "Usage:" 

# -j: errors are JSON on stdout
out=$("$SLUICECTL" -j set --rate 0/s 2>/dev/null)
st=$?
if [ "$st" = 2 ] && [[ "$out" == '{"error":"'*'is zero'*'"}' ]]; then
	ok "-j: a usage error is {\"error\": ...} on stdout"
else
	not_ok "-j: a usage error is {\"error\": ...} on stdout"
	diag "exit status $st, stdout: $out"
fi

out=$("$SLUICECTL" rule add 198.18.0.0/33 --exempt -j 2>/dev/null)
st=$?
if [ "$st" = 2 ] && [[ "$out" == '{"error":"'*'prefix length'*'"}' ]]; then
	ok "-j after the command: the error is JSON too"
else
	not_ok "-j after the command: the error is JSON too"
	diag "exit status $st, stdout: $out"
fi

# Batch files are checked before any interface is needed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/bad.conf" <<'EOF'
# default policy
set --rate 200/s --burst 400

rule add 198.18.0.0/24 --rate 10/s   # lab
rule add 198.18.1.0/24 --rate 10/x
EOF
usage "batch file with a bad line" "bad.conf:5: rate '10/x' has an unknown unit" -b "$tmp/bad.conf"
printf 'stats\n' >"$tmp/read.conf"
usage "batch file with a read command" "read.conf:1: unknown editing command 'stats'" \
	-b "$tmp/read.conf"
usage "batch file that does not exist" "Couldn't open" -b "$tmp/missing.conf"
printf 'set --rate 100/s\nrule flush extra\n' >"$tmp/flush.conf"
usage "batch file with rule flush and a word" "flush.conf:2: rule flush takes no arguments" \
	-b "$tmp/flush.conf"
printf 'set --fail-closed on\nset --new-keys 1gbit\n' >"$tmp/settings.conf"
usage "batch file with new-keys as bytes" "settings.conf:2: --new-keys counts new sources" \
	-b "$tmp/settings.conf"
printf 'set --rate 100/s --key flow\nrule add 198.18.0.0/24 --rate 1/s --algo sliding-log --key flow\n' \
	>"$tmp/keys.conf"
usage "batch file with a wide key on sliding-log" "keys.conf:2: --key flow with --algo sliding-log" \
	-b "$tmp/keys.conf"
printf 'set --key src,dport --key flow\n' >"$tmp/keys2.conf"
usage "batch file with --key twice" "keys2.conf:1: --key is given twice" -b "$tmp/keys2.conf"
# A second key on a fleet-wide policy is taken (the fleet shares it): the
# batch is refused at its last line, a bad one, not before.
printf '%s\n' 'set --rate 1000/s --also-rate 1000/s --fleet on' \
	'rule add 198.18.0.0/28 --rate 10/s --fleet on --also-rate 100/s --also-prefix 24' \
	'set --rate 0/s' >"$tmp/fleetalso.conf"
usage "batch file: --also-rate with --fleet on is taken, on set and on a rule" \
	"fleetalso.conf:3: rate '0/s' is zero" -b "$tmp/fleetalso.conf"
# A pipe is read once, and checked before any interface is looked for.
batch_stdin() { printf '%b' "$1" | "$SLUICECTL" -b /dev/stdin; }
expect_usage "batch from a pipe with a bad line" "/dev/stdin:2: rate '0/s' is zero" \
	batch_stdin 'set --rate 10/s\nset --rate 0/s\n'

# Help at every level: exit 0 and a usage text on stdout.
for words in "help" "-h" "set help" "rule help" "rule add help" "rule list help" \
	"rule flush help" "stats help" "top help" "show help" "flush help" "help rule" \
	"help batch"; do
	# shellcheck disable=SC2086
	out=$("$SLUICECTL" $words 2>/dev/null)
	st=$?
	if [ "$st" = 0 ] && grep -q "^Usage: sluicectl" <<<"$out"; then
		ok "sluicectl $words: prints its usage"
	else
		not_ok "sluicectl $words: prints its usage"
		diag "exit status $st: $out"
	fi
done
usage "help of an unknown object" "no help for 'frob'" help frob

# A wrong -i exits 2, runtime failures exit 1. A namespace of our own holds
# an interface that nobody attached to (names of pins are global, so the name
# is ours alone).
if [ "$(id -u)" = 0 ]; then
	expect_status 2 "unknown interface: exit status 2" "$SLUICECTL" -i "ctnone$$" stats
	if grep -qF "there is no interface 'ctnone$$'" <<<"$OUT"; then
		ok "unknown interface: names it"
	else
		not_ok "unknown interface: names it"
		diag "$OUT"
	fi
	ns="ct-cli-$$"
	if ip netns add "$ns" 2>/dev/null; then
		trap 'rm -rf "$tmp"; ip netns del "$ns" 2>/dev/null' EXIT
		ip -n "$ns" link add "ctd$$" type veth peer name "cte$$"
		expect_status 1 "not attached: exit status 1" \
			nsenter --net="/var/run/netns/$ns" "$SLUICECTL" -i "ctd$$" rule list
		if grep -qF "sluice is not attached to ctd$$: run 'sluice attach ctd$$'" <<<"$OUT"
		then
			ok "not attached: says how to attach"
		else
			not_ok "not attached: says how to attach"
			diag "$OUT"
		fi
		expect_status 1 "not attached, -j: exit status 1" \
			nsenter --net="/var/run/netns/$ns" "$SLUICECTL" -j -i "ctd$$" stats
		if [[ "$OUT" == '{"error":"sluice is not attached'* ]]; then
			ok "not attached, -j: the error is JSON"
		else
			not_ok "not attached, -j: the error is JSON"
			diag "$OUT"
		fi
		ip netns del "$ns" 2>/dev/null
		trap 'rm -rf "$tmp"' EXIT
	else
		skip "could not create a network namespace" "not attached: exit status 1"
	fi
else
	skip "needs root to tell a missing interface from unreadable pins" \
		"unknown interface: exit status 2"
	skip "needs root to tell a missing interface from unreadable pins" \
		"unknown interface: names it"
	skip "needs root (a namespace with an interface of our own)" \
		"not attached: exit status 1"
fi

# JSON errors are UTF-8 whatever bytes the input held: a bad byte becomes
# U+FFFD, control characters are escaped.
for bytes in '\xff\xfe' '\xc0\xaf' '\xed\xa0\x80' '\x01\x7f'; do
	val=$(printf "1${bytes}/s")
	OUT=$("$SLUICECTL" -j set --rate "$val" 2>/dev/null)
	if [ -n "$OUT" ] && iconv -f UTF-8 -t UTF-8 <<<"$OUT" >/dev/null 2>&1 &&
		! LC_ALL=C grep -q "$(printf '[\x01-\x1f\x7f]')" <<<"$OUT"; then
		ok "-j error for a rate with bytes $bytes: valid UTF-8, no raw control bytes"
	else
		not_ok "-j error for a rate with bytes $bytes: valid UTF-8, no raw control bytes"
		diag "$(od -c <<<"$OUT" | head -3)"
	fi
done

# A shaper's options (sluice shape, -i shape:IFACE). -i says whose state an
# edit is for before any state is looked for: a limiter's refuses --delay,
# --nodelay and --burst 0, a shaper's checks the delay against its burst.
usage "delay on a limiter (-i names one)" "a limiter drops and never delays" \
	-i eth0 set --rate 100/s --delay 5
usage "nodelay on a limiter's rule" "never delays: --nodelay is for a shaper" \
	-i eth0 rule add 198.18.0.0/24 --rate 10/s --nodelay
usage "burst 0 on a limiter (-i names one)" "only a shaper" -i eth0 set --rate 100/s --burst 0
usage "shaper: delay beyond the burst" "--delay 6 is more than --burst 5" \
	-i shape:eth0 set --rate 100/s --burst 5 --delay 6
usage "shaper: a window algorithm with a delay" "is a meter" \
	-i shape:eth0 set --algo fixed-window --rate 10/s --delay 1
usage "delay and nodelay for one rate" "two of --delay and --nodelay" \
	set --rate 100/s --delay 1 --nodelay

# On a limiter's state itself (the only one, no -i): refused when applied,
# from the command line and from a batch file, and nothing changes.
if [ "$(id -u)" = 0 ] && [ -x "$SLUICE" ] && command -v ip >/dev/null &&
	command -v nsenter >/dev/null; then
	rm -rf "$tmp"
	trap - EXIT
	source tests/lib/netns.sh
	if netns_setup cd 11 && expect_status 0 "a limiter attached" rx_sluice attach "$IF_RX"; then
		expect_usage "limiter state: set --delay" "a limiter drops and never delays" \
			rx_ctl set --rate 100/s --burst 50 --delay 5
		printf 'set --rate 100/s --burst 50\nrule add 198.18.11.0/26 --rate 10/s --nodelay\n' \
			>"$NETNS_TMP/shape.conf"
		expect_usage "limiter state: a batch file with --nodelay" \
			"shape.conf:2: a limiter drops and never delays" rx_ctl -b "$NETNS_TMP/shape.conf"
		expect_usage "limiter state: set --burst 0" "--burst is 0" \
			rx_ctl set --rate 100/s --burst 0
		OUT=$(rx_ctl -j rule list 2>&1)
		if grep -qF '"burst":100' <<<"$OUT" && ! grep -qF '"delay"' <<<"$OUT"; then
			ok "limiter state: the refused edits changed nothing (burst 100, no delay)"
		else
			not_ok "limiter state: the refused edits changed nothing (burst 100, no delay)"
			diag "$OUT"
		fi
	else
		not_ok "build a namespace with a limiter attached"
	fi
else
	skip "needs root and sluice (a limiter attached in a namespace of our own)" \
		"limiter state: --delay refused"
fi

tap_done

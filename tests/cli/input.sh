#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What the parsers take, the same way in every command: durations with a
# fraction (exact, to the nanosecond), bounded ranges, an option given twice
# refused (never the last one taken unsaid), every word and unit lower case
# (another case refused, naming the lower-case form), and byte sizes with a
# unit (64k) in a byte limit's --burst and --delay. No root needed: the
# interface does not exist, so a value the parser takes fails only on it.
set -u
source tests/lib/tap.sh

for b in "$SLUICE" "$SLUICECTL" "$SLUICE_GEN"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "parsers"
		exit 0
	fi
done
IF="ctin$$"

# taken NAME CMD...: the parser took every value: the command fails (exit 1
# or 2) only on the missing interface, and says nothing else.
taken() {
	local name=$1 out
	shift
	out=$("$@" 2>&1)
	if grep -qE "no interface '?$IF'?|sluice is not attached to $IF" <<<"$out" &&
		[ "$(wc -l <<<"$out")" -le 2 ]; then
		ok "$name: taken (fails only on the missing interface)"
	else
		not_ok "$name: taken (fails only on the missing interface)"
		diag "$*: $out"
	fi
}

# ---- durations with a fraction ----
taken "sluicectl rule add --window 1.5s" \
	"$SLUICECTL" -i "$IF" rule add 198.18.0.0/24 --algo sliding-window --rate 30/s --window 1.5s
taken "sluicectl set --window 0.5" "$SLUICECTL" -i "$IF" set --algo fixed-window --rate 10/s \
	--window 0.5
taken "sluice run --interval 1.5" "$SLUICE" run "$IF" --interval 1.5
taken "sluice run --interval 250ms" "$SLUICE" run "$IF" --interval 250ms
taken "sluice attach --window 1.25m" "$SLUICE" attach "$IF" --algo sliding-window \
	--rate 60/m --window 1.25m
taken "sluice shape attach --horizon 2.5s" "$SLUICE" shape attach "$IF" --rate 100/s \
	--horizon 2.5s
taken "sluice-gen -t 2.5" "$SLUICE_GEN" -i "$IF" -s 198.18.0.1 -d 198.18.0.2 -t 2.5
expect_usage "a window finer than a nanosecond" "finer than a nanosecond" \
	"$SLUICECTL" -i "$IF" set --algo fixed-window --rate 10/s --window 1.0000000001s
expect_usage "a duration with a comma" "a fraction takes a point" \
	"$SLUICE" run "$IF" --interval 1,5
# a window of 1.5s is exactly 1500 ms: 15 packets of 10/s, which a float's
# 1.49999... would not hold whole (sluice_window_set refuses a fraction)
taken "a 1.5s window of 10/s holds 15 whole packets" \
	"$SLUICECTL" -i "$IF" set --algo fixed-window --rate 10/s --window 1.5s

# ---- ranges are bounded, and say so ----
expect_usage "sluice run --interval 99999999" "out of range: give 100ms to 1h" \
	"$SLUICE" run "$IF" --interval 99999999
expect_usage "sluice run --interval of 20 digits" "out of range: give 100ms to 1h" \
	"$SLUICE" run "$IF" --interval 99999999999999999999
expect_usage "sluice run --interval 50ms" "out of range: give 100ms to 1h" \
	"$SLUICE" run "$IF" --interval 50ms
expect_usage "sluicectl stats --watch 2h" "out of range: give 100ms to 1h" \
	"$SLUICECTL" -i "$IF" stats --watch 2h
taken "sluicectl stats --watch 1.5" "$SLUICECTL" -i "$IF" stats --watch 1.5

# ---- an option given twice is refused, as a second --rate is ----
expect_usage "sluice attach --mode skb --mode native" "--mode is given twice ('skb' and 'native')" \
	"$SLUICE" attach "$IF" --mode skb --mode native
expect_usage "sluice attach --rate twice (as before)" "two packet rates given" \
	"$SLUICE" attach "$IF" --rate 10/s --rate 20/s
for o in "--max-keys 8" "--max-log-keys 8" "--max-rules 8" "--table lru" "--config /dev/null" \
	"--new-keys 10/s" "--algo token-bucket" "--prefix4 24" "--fail-open"; do
	# shellcheck disable=SC2086 # the words are words
	expect_usage "sluice attach $o twice" "given twice" "$SLUICE" attach "$IF" $o $o
done
for o in "--interval 1" "--metrics 127.0.0.1:0" "--redis unix:/x" "--fleet-size 3" \
	"--keep-state" "--sync-interval 1s"; do
	# shellcheck disable=SC2086
	expect_usage "sluice run $o twice" "given twice" "$SLUICE" run "$IF" $o $o
done
for o in "--key dst" "--horizon 1s" "--queue-limit 100"; do
	# shellcheck disable=SC2086
	expect_usage "sluice shape attach $o twice" "given twice" \
		"$SLUICE" shape attach "$IF" --rate 10/s $o $o
done
expect_usage "sluicectl -i twice" "-i is given twice" "$SLUICECTL" -i "$IF" -i other stats
expect_usage "sluicectl top -n twice" "-n is given twice" "$SLUICECTL" -i "$IF" top -n 1 -n 2
expect_usage "sluicectl stats --watch twice" "--watch is given twice" \
	"$SLUICECTL" -i "$IF" stats --watch 1 --watch 2
# a --rate of each kind, each with its --burst, is not a repeat
taken "sluice attach --rate 100/s --burst 10 --rate 10mbit --burst 2000" \
	"$SLUICE" attach "$IF" --rate 100/s --burst 10 --rate 10mbit --burst 2000

# ---- words and units are lower case, everywhere ----
expect_usage "sluicectl set --dry-run ON" "write 'on'" "$SLUICECTL" -i "$IF" set --dry-run ON
expect_usage "sluicectl rule add --dry-run Off" "write 'off'" \
	"$SLUICECTL" -i "$IF" rule add 198.18.0.0/24 --deny --dry-run Off
expect_usage "sluicectl set --rate 100/S" "write '100/s'" "$SLUICECTL" -i "$IF" set --rate 100/S
expect_usage "sluice attach --rate 10Mbps names both readings" \
	"'10mbps' for megabytes a second or '10mbit' for megabits" \
	"$SLUICE" attach "$IF" --rate 10Mbps
expect_usage "sluice attach --algo Sliding-Window" "write 'sliding-window'" \
	"$SLUICE" attach "$IF" --algo Sliding-Window
expect_usage "sluice attach --mode SKB" "lower case: 'skb'" "$SLUICE" attach "$IF" --mode SKB
expect_usage "sluice attach --table LRU" "lower case: 'lru'" "$SLUICE" attach "$IF" --table LRU
expect_usage "sluice shape attach --key DST" "lower case: 'dst'" \
	"$SLUICE" shape attach "$IF" --rate 10/s --key DST
expect_usage "sluice run --interval 1S" "write '1s'" "$SLUICE" run "$IF" --interval 1S
expect_usage "sluicectl set --fail-closed ON" "write 'on'" "$SLUICECTL" -i "$IF" set --fail-closed ON

# ---- byte sizes take a unit in a byte limit's --burst and --delay ----
taken "sluice shape attach --rate 10mbit --burst 64k --delay 16k (the README's)" \
	"$SLUICE" shape attach "$IF" --rate 10mbit --burst 64k --delay 16k
taken "sluicectl set --rate 1gbit --burst 2m" "$SLUICECTL" -i "$IF" set --rate 1gbit --burst 2m
taken "sluicectl set --burst 64k --rate 10mbit (a --burst before its --rate)" \
	"$SLUICECTL" -i "$IF" set --burst 64k --rate 10mbit
expect_usage "a byte size for a packet rate's --burst" "--burst 64k is a byte size" \
	"$SLUICECTL" -i "$IF" set --rate 100/s --burst 64k
expect_usage "a byte size for a packet rate's --delay" "--delay 1k is a byte size" \
	"$SLUICE" shape attach "$IF" --rate 100/s --burst 200 --delay 1k
expect_usage "a byte size in upper case" "write '64k'" \
	"$SLUICECTL" -i "$IF" set --rate 10mbit --burst 64K
expect_usage "a byte size with a fraction" "not a whole number" \
	"$SLUICECTL" -i "$IF" set --rate 10mbit --burst 1.5k

tap_done

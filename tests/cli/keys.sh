#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What a key is and how full the table is, said as it is:
#  - show KEY takes a key of the length its policy keys by (or of its
#    new-key aggregate, when there is one), never another looked up as
#    something it is not; a deny rule in dry-run would drop (every packet
#    passes), and show says so;
#  - a set table's families fill apart: 200 IPv4 sources in --max-keys 64
#    fill the IPv4 half, and status, stats and the metrics say "64 of 64"
#    per family, not "64 of 128"; a --max-keys the sets round up is said;
#  - which table and why: a new state without --table is of the set table
#    ("the default"), one with --table says so, and an LRU state made by a
#    sluice whose default the LRU was (no SLUICE_KIND_TABLE_ASKED) keeps its
#    table through an upgrade and says "an older sluice's default, kept".
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "keys and the key table" jq
netns_need_sluice "keys and the key table"
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
lacks() {
	if grep -qF -- "$2" <<<"$3"; then not_ok "$1"; diag "did not want '$2' in: $3"; else ok "$1"; fi
}
# num JSON KEY...: one value of JSON at a path of keys ("key_table ipv4 max");
# empty when absent
num() {
	local j=$1 f="" k
	shift
	for k in "$@"; do
		case $k in [0-9]*) f="$f[$k]" ;; *) f="$f.$k" ;; esac
	done
	jq -r "$f | if . == null then empty else . end" <<<"$j" 2>/dev/null
}

N=44
netns_setup ky $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }

# ---- show: keys of the policy's length only ----
expect_status 0 "attach (the default policy keys by /32, no new-key limit)" \
	rx_sluice attach "$IF_RX" || exit 1
tx_gen -s 198.18.$N.1 -d "$ADDR4_RX" -n 5 >/dev/null
expect_usage "show a /24 under a /32 policy, no new-key limit" \
	"is not a key of its policy (default): its sources are keyed by /32" ctl show 198.18.$N.0/24
has "... says why /24 is not its aggregate either" "the new-key limit is off" "$OUT"
expect_status 0 "show a /32 key" ctl show 198.18.$N.1/32
has "show /32: the key" "key       198.18.$N.1/32" "$OUT"
expect_status 0 "set --new-keys 1000/s (a /24 aggregate now exists as a kind of key)" \
	ctl set --new-keys 1000/s
expect_status 0 "show a /24 key past the new-key limit" ctl show 198.18.$N.0/24
lacks "show /24: never looks up 198.18.$N.0/32 for it" "198.18.$N.0/32" "$OUT"
has "show /24: the aggregate it is" "198.18.$N.0/24" "$OUT"
OUT=$(ctl -j show 198.18.$N.0/24)
jq -e 'has("bucket") | not' <<<"$OUT" >/dev/null 2>&1 && ok "show -j /24: no /32 bucket in it" ||
	{ not_ok "show -j /24: no /32 bucket in it"; diag "$OUT"; }
expect_usage "show a /25 (neither length)" "keyed by /32, past the new-key limit by /24" \
	ctl show 198.18.$N.0/25
ctl set --new-keys off >/dev/null

# ---- show: a deny rule in dry-run does not drop ----
expect_status 0 "rule add --deny --dry-run" ctl rule add 198.18.$N.64/26 --deny --dry-run
expect_status 0 "show a source of the dry-run deny rule" ctl show 198.18.$N.70
has "show: would drop (dry-run)" "would drop (dry-run): every packet passes" "$OUT"
lacks "show: not 'every packet is dropped'" "every packet is dropped" "$OUT"
OUT=$(ctl -j show 198.18.$N.70)
[ "$(num "$OUT" verdict)" = would_drop ] && ok "show -j: verdict would_drop" ||
	{ not_ok "show -j: verdict would_drop"; diag "$OUT"; }
expect_status 0 "rule add --deny (no dry-run)" ctl rule add 198.18.$N.64/26 --deny
expect_status 0 "set --dry-run on (every policy)" ctl set --dry-run on
OUT=$(ctl show 198.18.$N.70)
has "show: a deny rule under the global dry-run would drop too" "would drop (dry-run)" "$OUT"
ctl set --dry-run off >/dev/null
OUT=$(ctl show 198.18.$N.70)
has "show: a deny rule, dry-run off: dropped" "denied: every packet is dropped" "$OUT"
OUT=$(ctl -j show 198.18.$N.70)
[ "$(num "$OUT" verdict)" = drop ] && ok "show -j: verdict drop" || { not_ok "show -j: verdict drop"; diag "$OUT"; }
expect_usage "show a CIDR of a deny rule: no state per source" "keeps no state per source" \
	ctl show 198.18.$N.64/26

# ---- the set table: per family ----
rx_sluice detach "$IF_RX" >/dev/null
expect_status 0 "attach --table sets --max-keys 3" rx_sluice attach "$IF_RX" --table sets --max-keys 3
has "the summary says --max-keys 3 became 16 a family" \
	"--max-keys 3 is rounded up to 16 keys a family (whole groups of 16)" "$OUT"
# (a neighbour discovery packet may have made a key by then)
grep -qE "sets table \(--table sets\): IPv4 [0-9]+ of 16, IPv6 [0-9]+ of 16 keys" <<<"$OUT" &&
	ok "the summary says the table per family" ||
	{ not_ok "the summary says the table per family"; diag "$OUT"; }
rx_sluice detach "$IF_RX" >/dev/null
expect_status 0 "attach --table sets --max-keys 64" rx_sluice attach "$IF_RX" --table sets --max-keys 64
lacks "--max-keys 64 is whole groups: no rounding said" "rounded up" "$OUT"
# 200 IPv4 sources, many times each: every group of the IPv4 half is full.
tx_gen -s 198.18.$N.0/24 -d "$ADDR4_RX" --keys 200 -n 4000 -r 40000 >/dev/null
sleep 0.3
st=$(rx_sluice status -j "$IF_RX")
u4=$(num "$st" interfaces 0 key_table ipv4 used) m4=$(num "$st" interfaces 0 key_table ipv4 max)
m6=$(num "$st" interfaces 0 key_table ipv6 max)
[ "$m4" = 64 ] && [ "$m6" = 64 ] && ok "status -j: each family holds 64 (key_table.ipv4.max, ipv6.max)" ||
	{ not_ok "status -j: each family holds 64"; diag "$st"; }
[ "${u4:-0}" -gt 48 ] && ok "status -j: the IPv4 half is (nearly) full: $u4 of 64, not 'of 128'" ||
	{ not_ok "status -j: the IPv4 half is (nearly) full"; diag "$st"; }
if [ "$u4" != 64 ]; then
	skip "a group drew fewer than 16 of the 200 sources: IPv4 holds $u4 of 64" \
		"status -j: key_table.ipv4.full"
elif [ "$(num "$st" interfaces 0 key_table ipv4 full)" = true ]; then
	ok "status -j: key_table.ipv4.full"
else
	not_ok "status -j: key_table.ipv4.full"; diag "$st"
fi
txt=$(rx_sluice status "$IF_RX")
has "status: the IPv4 half as it is" "sets table (--table sets): IPv4 $u4 of 64" "$txt"
lacks "status: no '64 of 128'" " of 128" "$txt"
sj=$(ctl -j stats)
[ "$(num "$sj" key_table ipv4 used)" = "$u4" ] && [ "$(num "$sj" key_table ipv4 max)" = 64 ] &&
	ok "stats -j: the same key_table object" || { not_ok "stats -j: the same key_table object"; diag "$sj"; }
stt=$(ctl stats)
has "stats: key_table_ipv4_used, the JSON's name joined by _" "key_table_ipv4_used $u4" \
	"$(tr -s ' ' <<<"$stt")"
has "stats: key_table_ipv4_max" "key_table_ipv4_max 64" "$(tr -s ' ' <<<"$stt")"
prom=$(ctl stats --prometheus)
has "metrics: the IPv4 keys" "sluice_key_table_keys{interface=\"$IF_RX\",family=\"ipv4\"} $u4" "$prom"
has "metrics: what the IPv4 half holds" \
	"sluice_key_table_max_keys{interface=\"$IF_RX\",family=\"ipv4\"} 64" "$prom"
has "metrics: what the IPv6 half holds" \
	"sluice_key_table_max_keys{interface=\"$IF_RX\",family=\"ipv6\"} 64" "$prom"
# The LRU table: one capacity for both families, said as such.
rx_sluice detach "$IF_RX" >/dev/null
expect_status 0 "attach --table lru --max-keys 1000" rx_sluice attach "$IF_RX" --table lru \
	--max-keys 1000
# The counts are what arrived since the attach: the veth's own IPv6 (a
# router solicitation, an MLD report) may have made a key already.
if grep -Eq 'lru table \(--table lru\): [0-9]+ of 1000 keys, IPv4 [0-9]+ and IPv6 [0-9]+ share it' \
	<<<"$OUT"; then
	ok "lru: the families share the table, made by --table lru"
else
	not_ok "lru: the families share the table, made by --table lru"
	diag "want 'lru table (--table lru): N of 1000 keys, IPv4 N and IPv6 M share it' in: $OUT"
fi
st=$(rx_sluice status -j "$IF_RX")
[ "$(num "$st" interfaces 0 key_table families_share_max)" = true ] &&
	[ "$(num "$st" interfaces 0 key_table ipv4 max)" = 1000 ] &&
	ok "lru: families_share_max, each family's max the table's" ||
	{ not_ok "lru: families_share_max, each family's max the table's"; diag "$st"; }
[ "$(num "$st" interfaces 0 key_table chosen_by)" = option ] &&
	ok "lru: status -j: key_table.chosen_by option" ||
	{ not_ok "lru: status -j: key_table.chosen_by option"; diag "$st"; }

# Which table and why. config.kind's SLUICE_KIND_TABLE_ASKED (bit 3),
# found by its name in the map's BTF.
kind_off() {
	bpftool btf dump map pinned "$RX_PINS/sluice_config" value format raw |
		awk -F"bits_offset=" "/'kind' type_id/ { print int(\$2 / 8); exit }"
}
kind_byte() { local b; read -ra b <<<"$(cfg_bytes "$RX_PINS/sluice_config")"; echo "${b[$1]}"; }
OFF=$(kind_off)
[ -n "$OFF" ] && ok "config.kind is at byte $OFF (BTF)" || not_ok "config.kind's offset from BTF"
is_kind_bit() {
	local got=$(($(kind_byte "$OFF") & 8))
	[ "$got" = "$2" ] && ok "$1" || { not_ok "$1"; diag "kind byte: $(kind_byte "$OFF")"; }
}
is_kind_bit "--table lru: config.kind has SLUICE_KIND_TABLE_ASKED" 8
# An LRU state made by a sluice whose default the LRU was: no ASKED bit.
# An upgrade keeps it, without --table and with the default's options.
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
K=$(kind_byte "$OFF")
cfg_poke "$RX_PINS/sluice_config" "$OFF" $((K & ~8)) ||
	not_ok "clear SLUICE_KIND_TABLE_ASKED, as an older sluice made it"
expect_status 0 "attach resumes the older LRU state" rx_sluice attach "$IF_RX"
has "... and keeps the LRU table: the summary says why" \
	"lru table (an older sluice's default, kept): " "$OUT"
st=$(rx_sluice status -j "$IF_RX")
[ "$(num "$st" interfaces 0 key_table table)" = lru ] &&
	[ "$(num "$st" interfaces 0 key_table chosen_by)" = older_default ] &&
	ok "... status -j: table lru, chosen_by older_default" ||
	{ not_ok "... status -j: table lru, chosen_by older_default"; diag "$st"; }
is_kind_bit "... config.kind still without SLUICE_KIND_TABLE_ASKED" 0
expect_status 0 "attach again (the same command twice)" rx_sluice attach "$IF_RX"
has "... still the LRU table, and why" "lru table (an older sluice's default, kept): " "$OUT"
has "stats: key_table_chosen_by" "key_table_chosen_by older_default" "$(ctl stats | tr -s ' ')"
has "metrics: sluice_key_table says why" \
	"sluice_key_table{interface=\"$IF_RX\",table=\"lru\",chosen_by=\"older_default\"} 1" \
	"$(ctl stats --prometheus)"
# --fresh without --table keeps the dropped state's table, and why it had it.
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
expect_status 0 "attach --fresh over the older LRU state" rx_sluice attach "$IF_RX" --fresh
has "... a new LRU state, still said to be the older default's" \
	"lru table (an older sluice's default, kept): " "$OUT"
# Without --table, a new state is of the set table.
rx_sluice detach "$IF_RX" >/dev/null
expect_status 0 "attach without --table (a new state)" rx_sluice attach "$IF_RX" --max-keys 64
has "... the set table: the summary says it is the default" "sets table (the default): " "$OUT"
st=$(rx_sluice status -j "$IF_RX")
[ "$(num "$st" interfaces 0 key_table table)" = sets ] &&
	[ "$(num "$st" interfaces 0 key_table chosen_by)" = default ] &&
	ok "... status -j: table sets, chosen_by default" ||
	{ not_ok "... status -j: table sets, chosen_by default"; diag "$st"; }
has "... status says it too" "sets table (the default): IPv4 " "$(rx_sluice status "$IF_RX")"
is_kind_bit "... config.kind without SLUICE_KIND_TABLE_ASKED" 0
expect_status 0 "attach --table sets over it (an upgrade: the same table)" \
	rx_sluice attach "$IF_RX" --table sets
has "... keeps why the state has it" "sets table (the default): " "$OUT"
rx_sluice detach "$IF_RX" >/dev/null
expect_status 0 "attach --table lru --max-keys 64" rx_sluice attach "$IF_RX" --table lru --max-keys 64
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
expect_status 0 "attach --fresh" rx_sluice attach "$IF_RX" --fresh
has "... the new LRU state says --table lru, as the dropped one did" "lru table (--table lru): " \
	"$OUT"

tap_done

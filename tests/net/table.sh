#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# --table sets end to end: a fresh attach makes the set table (sluice_sets4/6
# of sluice_sets_for(N) sets, SLUICE_KIND_SETS, a random set_seed, a
# one-entry sluice_buckets); a flood is held as on the LRU table; status and
# the metrics say the table, its capacity and memory; an upgrade in place
# keeps the table, the seed and the keys; the other --table is refused (exit
# 1, nothing changed) until --fresh; a state pinned before sluice_sets4/6
# gets them at one entry.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "table"
netns_need_sluice "table"

# As limit.sh: a burst of one second's worth.
RATE=1000 BURST=1000 SECS=3
N=1000 # --max-keys: keys per family on the set table
SETS=$(((N + 15) / 16 * 4)) # sluice_sets_for(N): whole groups of 4 sets
CAP=$((2 * 4 * SETS)) # both families, four ways a set
BYTES=$((SETS * 128 + SETS * 192))

netns_setup tb || { not_ok "build the namespaces and the veth pair"; exit 1; }

# field JSON NAME: the first number after "NAME": in JSON.
field() { grep -o "\"$2\": *[0-9]*" <<<"$1" | head -1 | grep -o '[0-9]*$'; }
keys_json() { rx_sluice status -j "$IF_RX" | grep -o '"key_table":{[^}]*}'; }
cfg_dump() { bpftool map dump pinned "$RX_PINS/sluice_config"; }
seed() { field "$(cfg_dump)" set_seed; }
kind() { field "$(cfg_dump)" kind; }
entries() { bpftool -j map show pinned "$RX_PINS/$1" | grep -o '"max_entries":[0-9]*' | grep -o '[0-9]*$'; }
# is NAME GOT WANT
is() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else not_ok "$1"; diag "got '$2', want '$3'"; fi; }

expect_status 0 "attach --table sets --max-keys $N" \
	rx_sluice attach "$IF_RX" --table sets --max-keys "$N" --rate "$RATE/s" --burst "$BURST" ||
	exit 1
grep -qE "sets table \(--table sets\): IPv4 [0-9]+ of $((CAP / 2)), IPv6 [0-9]+ of $((CAP / 2)) keys" <<<"$OUT" &&
	ok "the attach summary says the sets table of $((CAP / 2)) keys a family" ||
	{ not_ok "the attach summary says the sets table of $((CAP / 2)) keys a family"; diag "$OUT"; }
is "sluice_sets4 has sluice_sets_for($N) sets" "$(entries sluice_sets4)" "$SETS"
is "sluice_sets6 has sluice_sets_for($N) sets" "$(entries sluice_sets6)" "$SETS"
is "sluice_buckets is one entry (unused)" "$(entries sluice_buckets)" 1
is "config.kind has SLUICE_KIND_SETS" "$(($(kind) & 4))" 4
SEED=$(seed)
if [ -n "$SEED" ] && [ "$SEED" != 0 ]; then ok "config.set_seed is drawn ($SEED)"; else
	not_ok "config.set_seed is drawn"; diag "$(cfg_dump)"; fi

# The flood is held exactly as on the LRU table (limit.sh's bounds).
measure() {
	local try=$1 flood=198.18.1.$((10 * $1))
	rx_counter_add "flood$try" ip saddr "$flood" || return 1
	gen_bg flood -s "$flood" -d "$ADDR4_RX" -r $((RATE * 20)) -t "$SECS"
	gen_wait flood || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "flood$try") HELD_SECS=$flood_seconds HELD_LAG=$flood_lag
	FLOOD=$flood
}
held_check "sets: a flooding source is held to burst + rate x time within 2%" $BURST $RATE measure
# An IPv6 source too, into sluice_sets6.
tx_gen -s "2001:2:0:1::50" -d "$ADDR6_RX" -r 20000 -n $((BURST * 2)) >/dev/null
sleep 0.2
show6=$(rx_ctl -i "$IF_RX" -j show 2001:2:0:1::50)
grep -q '"found":true' <<<"$show6" && ok "an IPv6 source has its way in sluice_sets6" ||
	{ not_ok "an IPv6 source has its way in sluice_sets6"; diag "$show6"; }

kj=$(keys_json)
grep -q '"table":"sets"' <<<"$kj" && ok "status -j: key_table.table is sets" ||
	{ not_ok "status -j: key_table.table is sets"; diag "$kj"; }
is "status -j: key_table.max is the capacity 2 x 4 x sluice_sets_for($N)" "$(field "$kj" max)" "$CAP"
is "status -j: key_table.memlock is both maps' bytes" "$(field "$kj" memlock)" "$BYTES"
USED=$(field "$kj" used)
[ "${USED:-0}" -ge 2 ] && ok "status -j: key_table.used counts the sources ($USED)" ||
	{ not_ok "status -j: key_table.used counts the sources"; diag "$kj"; }
txt=$(rx_sluice status "$IF_RX")
grep -q "sets table (--table sets): IPv4 [0-9]* of $((CAP / 2)), IPv6 [0-9]* of $((CAP / 2))" <<<"$txt" &&
	ok "status says the sets table and its capacity" ||
	{ not_ok "status says the sets table and its capacity"; diag "$txt"; }
prom=$(rx_ctl -i "$IF_RX" stats --prometheus)
grep -q "^sluice_key_table{interface=\"$IF_RX\",table=\"sets\",chosen_by=\"option\"} 1$" <<<"$prom" &&
	grep -q "^sluice_max_keys{interface=\"$IF_RX\"} $CAP$" <<<"$prom" &&
	grep -q "^sluice_key_table_bytes{interface=\"$IF_RX\"} $BYTES$" <<<"$prom" &&
	ok "metrics: sluice_key_table{table=\"sets\"}, sluice_max_keys $CAP, sluice_key_table_bytes" ||
	{ not_ok "metrics: sluice_key_table{table=\"sets\"}, sluice_max_keys $CAP, sluice_key_table_bytes"
		diag "$(grep -E 'key_table|max_keys' <<<"$prom")"; }

bucket() { rx_ctl -i "$IF_RX" -j show "$FLOOD" | grep -o '"bucket":{.*' ; }
B0=$(bucket)
grep -q '"found":true' <<<"$B0" || { not_ok "the flood's bucket is found"; diag "$B0"; }

# As the sluice before groups left it: layout 6 (the config's first word).
# This table's keys are where layout 7 put them, in their groups: attach
# upgrades it in place. (Reading a layout-5 or -6 table where those layouts
# put keys is tests/bpf/keytab.c's.)
layout() { field "$(cfg_dump)" layout; }
is "a fresh set table is of layout 7" "$(layout)" 7
cfg_poke "$RX_PINS/sluice_config" 0 6 0 0 0 || not_ok "write layout 6 into the config"
is "... written back as layout 6" "$(layout)" 6

# way_copy PIN ADDR: copy the way of IPv4 source ADDR into way 3 of two sets
# far from its own (n/4 and n/2 on): two groups, at most one of them its
# other, so one copy at least is outside its groups; prints the two sets.
# way_clear PIN SET...: empty way 3 of those sets again.
way_copy() {
	python3 - "$@" <<'PY'
import json, subprocess, sys
pin, addr = sys.argv[1:3]
a = bytes(int(x) for x in addr.split('.'))
d = json.loads(subprocess.check_output(['bpftool', '-j', 'map', 'dump', 'pinned', pin]))
vals = {int.from_bytes(bytes(int(b, 16) for b in e['key']), 'little'):
	bytearray(int(b, 16) for b in e['value']) for e in d}
n = len(vals)
own = [(i, w) for i, v in vals.items() for w in range(4)
       if v[16 * w:16 * w + 4] == a and v[16 * w + 7] & 0x40]
if len(own) != 1:
	sys.exit('ways of %s: %s' % (addr, own))
i, w = own[0]
far = ((i + n // 4) % n, (i + n // 2) % n)
for f in far:
	v = vals[f]
	v[48:64] = vals[i][16 * w:16 * w + 16]
	v[112:128] = vals[i][64 + 16 * w:64 + 16 * w + 16]
	subprocess.check_call(['bpftool', 'map', 'update', 'pinned', pin, 'key'] +
			      [str(b) for b in f.to_bytes(4, 'little')] + ['value'] + [str(b) for b in v])
print(*far)
PY
}
way_clear() {
	local pin=$1 set v
	shift
	for set in "$@"; do
		read -ra v <<<"$(bpftool -j map lookup pinned "$pin" key $((set & 255)) $((set >> 8 & 255)) 0 0 |
			sed 's/.*"value":\[\([^]]*\)\].*/\1/; s/[",]/ /g')"
		[ "${#v[@]}" = 128 ] || return 1
		for i in $(seq 48 63) $(seq 112 127); do v[i]=0; done
		bpftool map update pinned "$pin" key $((set & 255)) $((set >> 8 & 255)) 0 0 value "${v[@]}" ||
			return 1
	done
}

# A key outside its groups: the upgrade is refused, and nothing changes.
PROG=$(xdp_prog_id)
FAR=$(way_copy "$RX_PINS/sluice_sets4" "$FLOOD") && ok "a copy of the flood's way outside its groups" ||
	{ not_ok "a copy of the flood's way outside its groups"; diag "$FAR"; }
expect_status 1 "attach over a layout-6 set table with a key outside its groups: exit 1" \
	rx_sluice attach "$IF_RX" --table sets --max-keys "$N" --rate "$RATE/s" --burst "$BURST"
grep -Eq "has [12] keys? in sets where this sluice does not look for them" <<<"$OUT" &&
	grep -q "attach with --fresh" <<<"$OUT" &&
	ok "... says how many keys are out of place, and what to do" ||
	{ not_ok "... says how many keys are out of place, and what to do"; diag "$OUT"; }
is "... the layout stays 6" "$(layout)" 6
is "... the program stays" "$(xdp_prog_id)" "$PROG"
# shellcheck disable=SC2086 # two set numbers
way_clear "$RX_PINS/sluice_sets4" $FAR && ok "the copies removed" || not_ok "the copies removed"

# Upgrade in place, the same options: table, seed, sizes and keys kept.
PROG=$(xdp_prog_id)
expect_status 0 "upgrade in place (attach again, the same options)" \
	rx_sluice attach "$IF_RX" --table sets --max-keys "$N" --rate "$RATE/s" --burst "$BURST"
grep -q "upgraded" <<<"$OUT" || { not_ok "the attach was an upgrade"; diag "$OUT"; }
is "the upgrade writes layout 7" "$(layout)" 7
[ "$(xdp_prog_id)" != "$PROG" ] && ok "the upgrade replaced the program" || not_ok "the upgrade replaced the program"
is "the upgrade keeps set_seed" "$(seed)" "$SEED"
is "the upgrade keeps sluice_sets4's size" "$(entries sluice_sets4)" "$SETS"
is "the upgrade keeps the keys" "$(field "$(keys_json)" used)" "$USED"
B1=$(bucket)
grep -q '"found":true' <<<"$B1" && ok "the upgraded program's table still holds the flood's way" ||
	{ not_ok "the upgraded program's table still holds the flood's way"; diag "$B1"; }
# ... and the new program reads it: a packet of the held source is dropped.
d0=$(sluice_stat limited)
tx_gen -s "$FLOOD" -d "$ADDR4_RX" -r 20000 -n $((BURST * 3)) >/dev/null
sleep 0.2
d1=$(sluice_stat limited)
[ $((d1 - d0)) -gt 0 ] && ok "the upgraded program limits through the pinned sets ($((d1 - d0)) limited)" ||
	not_ok "the upgraded program limits through the pinned sets"
expect_status 0 "upgrade in place without --table keeps the sets table" rx_sluice attach "$IF_RX"
is "... config.kind still has SLUICE_KIND_SETS" "$(($(kind) & 4))" 4
is "... and set_seed" "$(seed)" "$SEED"

# The other table over the running limiter: refused, nothing changed.
PROG=$(xdp_prog_id) USED=$(field "$(keys_json)" used)
expect_status 1 "attach --table lru over the running sets limiter: exit 1" \
	rx_sluice attach "$IF_RX" --table lru
grep -q "fresh attach, not an upgrade" <<<"$OUT" && grep -q "detach first" <<<"$OUT" &&
	ok "... says a table change is a fresh attach and to detach first" ||
	{ not_ok "... says a table change is a fresh attach and to detach first"; diag "$OUT"; }
[ "$(xdp_prog_id)" = "$PROG" ] && [ "$(seed)" = "$SEED" ] && [ "$(($(kind) & 4))" = 4 ] &&
	[ "$(entries sluice_sets4)" = "$SETS" ] && [ "$(field "$(keys_json)" used)" = "$USED" ] &&
	ok "... and changes nothing (program, kind, seed, sets, keys)" ||
	not_ok "... and changes nothing (program, kind, seed, sets, keys)"
expect_status 1 "attach --max-keys $((N * 2)) over the sets state: exit 1" \
	rx_sluice attach "$IF_RX" --max-keys $((N * 2))
grep -q "holds $((SETS * 4)) keys per family" <<<"$OUT" && ok "... says what the table holds" ||
	{ not_ok "... says what the table holds"; diag "$OUT"; }

# Kept: resumed as it is; the other table needs --fresh.
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
expect_status 0 "attach resumes the kept sets state" rx_sluice attach "$IF_RX"
is "... with its set_seed" "$(seed)" "$SEED"
is "... and its keys" "$(field "$(keys_json)" used)" "$USED"
expect_status 0 "detach --keep-state again" rx_sluice detach "$IF_RX" --keep-state
expect_status 1 "attach --table lru over the kept sets state: exit 1" \
	rx_sluice attach "$IF_RX" --table lru
grep -q -- "--fresh" <<<"$OUT" && ok "... names --fresh" || { not_ok "... names --fresh"; diag "$OUT"; }
is "... and the state is still of the sets table" "$(($(kind) & 4))" 4
expect_status 0 "attach --table lru --fresh --max-keys $N" \
	rx_sluice attach "$IF_RX" --table lru --fresh --max-keys "$N"
kj=$(keys_json)
grep -q '"table":"lru"' <<<"$kj" && ok "status -j: key_table.table is lru" ||
	{ not_ok "status -j: key_table.table is lru"; diag "$kj"; }
is "status -j: key_table.max is --max-keys" "$(field "$kj" max)" "$N"
is "config.kind has no SLUICE_KIND_SETS" "$(($(kind) & 4))" 0
is "sluice_sets4 is one set" "$(entries sluice_sets4)" 1
is "sluice_buckets has --max-keys entries" "$(entries sluice_buckets)" "$N"

# A state pinned before sluice_sets4/6: attach adds them, of one set, LRU.
expect_status 0 "detach --keep-state (to make an older state)" rx_sluice detach "$IF_RX" --keep-state
rm -f "$RX_PINS/sluice_sets4" "$RX_PINS/sluice_sets6"
expect_status 0 "attach over a state without sluice_sets4/6" rx_sluice attach "$IF_RX"
grep -q "added: .*/sluice_sets4" <<<"$OUT" && grep -q "added: .*/sluice_sets6" <<<"$OUT" &&
	ok "... adds sluice_sets4 and sluice_sets6 and says so" ||
	{ not_ok "... adds sluice_sets4 and sluice_sets6 and says so"; diag "$OUT"; }
is "... sluice_sets4 of one set" "$(entries sluice_sets4)" 1
is "... sluice_sets6 of one set" "$(entries sluice_sets6)" 1
grep -q '"table":"lru"' <<<"$(keys_json)" && ok "... the state stays of the LRU table" ||
	not_ok "... the state stays of the LRU table"
tap_done

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Dry-run can be traced: under 'set --dry-run on' (or a rule's --dry-run) a
# flood passes whole, and what the limit would have dropped shows per rule
# ('rule list', 'rule list -j', the Prometheus text), per key ('top', 'show',
# with -j too) and in the reports of 'sluice run'. A new rule in a reused
# slot starts its would-drops at 0. A state pinned without sluice_rwould (by
# the sluice before it) reads as "unknown" and gets the map at the next
# attach, keeping its buckets; detach removes the map's pin with the others.
# Once per key table (--table lru, sets), each line naming it.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "dryrun" jq bpftool
netns_need_sluice "dryrun"

netns_setup dr 27 || { not_ok "build the namespaces and the veth pair"; exit 1; }
netns_extra_cleanup() { :; }

SRC=198.18.27.7 RULE=198.18.27.64/26 RSRC=198.18.27.70
rx_counter_add flood ip saddr "$SRC" || { not_ok "count at the receiver with nft"; exit 1; }
# The sender's own IPv6 chatter (DAD from ::, MLD from fe80::, seconds after
# the link comes up) would make keys at times of its own, between two counts
# of the keys: exempt from the attach on (--config), it makes none.
QUIET=$NETNS_TMP/quiet.conf
printf 'rule add fe80::/10 --exempt\nrule add ::/128 --exempt\n' >"$QUIET"

# Every line names the key table it ran on.
T=
ok() { echo "ok - ${T:+$T: }$*"; }
not_ok() { echo "not ok - ${T:+$T: }$*"; TAP_FAILED=$((TAP_FAILED + 1)); }

# jget JSON FILTER: one value with jq (empty when absent or not JSON).
jget() { jq -r "$2" <<<"$1" 2>/dev/null; }
list_j() { rx_ctl -i "$IF_RX" -j rule list; }
# would_of MATCH: the would_drop of one row of 'rule list -j' ("null": absent).
would_of() { jget "$(list_j)" ".[] | select(.match == \"$1\") | .would_drop"; }
positive() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

one_table() {
	rx_counter_reset flood
	expect_status 0 "attach --table $T --rate 100/s --burst 100 --config (the chatter exempt)" \
		rx_sluice attach "$IF_RX" --table "$T" --rate 100/s --burst 100 --config "$QUIET" ||
		return 1
	expect_status 0 "set --dry-run on" rx_ctl -i "$IF_RX" set --dry-run on

	# ---- a flood under the global dry-run ----

	lost=$(tx_lost)
	gen_bg flood -s "$SRC" -d "$ADDR4_RX" -n 1000 -r 5000
	gen_wait flood || { not_ok "send with sluice-gen"; return 1; }
	sleep 0.2
	got=$(rx_counter flood) lost=$(($(tx_lost) - lost))
	if all_passed "$got" "$flood_packets" "$lost"; then
		ok "under dry-run a flood at 50x the limit passes whole ($got of $flood_packets)"
	else
		not_ok "under dry-run a flood at 50x the limit passes whole"
		diag "the receiver got $got of $flood_packets ($lost lost before XDP)"
	fi

	def_would=$(would_of default)
	def_dropped=$(jget "$(list_j)" '.[] | select(.match == "default") | .dropped')
	if positive "$def_would" && [ "$def_dropped" = 0 ]; then
		ok "rule list -j: the default policy's would_drop counts the flood ($def_would), dropped 0"
	else
		not_ok "rule list -j: the default policy's would_drop counts the flood"
		diag "would_drop '$def_would', dropped '$def_dropped': $(list_j)"
	fi
	text=$(rx_ctl -i "$IF_RX" rule list)
	# WOULD-DROP is the last column.
	last=$(awk '$1 == "default" { print $NF }' <<<"$text")
	if grep -q 'WOULD-DROP' <<<"$(head -1 <<<"$text")" && [ "$last" = "$def_would" ]; then
		ok "rule list: a WOULD-DROP column, the default's is $last"
	else
		not_ok "rule list: a WOULD-DROP column with the default's would-drops"
		diag "$text"
	fi

	prom=$(rx_ctl -i "$IF_RX" stats --prometheus)
	v=$(awk -v p="sluice_policy_would_drop_total{interface=\"$IF_RX\",policy=\"default\"}" \
		'$1 == p { print $2 }' <<<"$prom")
	vb=$(awk -v p="sluice_policy_would_drop_bytes_total{interface=\"$IF_RX\",policy=\"default\"}" \
		'$1 == p { print $2 }' <<<"$prom")
	if positive "$v" && positive "$vb" && grep -q '^# TYPE sluice_policy_would_drop_total counter' \
		<<<"$prom"; then
		ok "Prometheus: sluice_policy_would_drop_total and _bytes_total of the default ($v, $vb)"
	else
		not_ok "Prometheus: sluice_policy_would_drop_total and _bytes_total of the default"
		diag "$(grep would <<<"$prom")"
	fi

	top=$(rx_ctl -i "$IF_RX" top)
	if grep -Eq "^$SRC/32 +default +token-bucket +~?[0-9]+ +would drop" <<<"$top"; then
		ok "top names the source that the limit would hit, as 'would drop'"
	else
		not_ok "top names the source that the limit would hit, as 'would drop'"
		diag "$top"
	fi
	topj=$(rx_ctl -i "$IF_RX" -j top)
	tw=$(jget "$topj" ".top[] | select(.key == \"$SRC/32\") | .would_drop")
	td=$(jget "$topj" ".top[] | select(.key == \"$SRC/32\") | .dropped")
	tdry=$(jget "$topj" ".top[] | select(.key == \"$SRC/32\") | .effective_dry_run")
	if positive "$tw" && [ "$td" = 0 ] && [ "$tdry" = true ]; then
		ok "top -j: the key's would_drop $tw, dropped 0, dry_run true"
	else
		not_ok "top -j: the key's would_drop, dropped 0, dry_run true"
		diag "$topj"
	fi

	show=$(rx_ctl -i "$IF_RX" show "$SRC")
	if grep -Eq '^would drop +(about )?[0-9]*[1-9][0-9]*' <<<"$show"; then
		ok "show: the key's would-drops"
	else
		not_ok "show: the key's would-drops"
		diag "$show"
	fi
	showj=$(rx_ctl -i "$IF_RX" -j show "$SRC")
	sw=$(jget "$showj" .bucket.would_drop) sd=$(jget "$showj" .bucket.dropped)
	if positive "$sw" && [ "$sd" = 0 ]; then
		ok "show -j: bucket.would_drop $sw, dropped 0"
	else
		not_ok "show -j: bucket.would_drop, dropped 0"
		diag "$showj"
	fi

	dump=$(bpftool -j map dump pinned "$RX_PINS/sluice_rwould" 2>&1)
	if grep -q '"would_drop":' <<<"$dump" && grep -q '"would_drop_bytes":' <<<"$dump"; then
		ok "bpftool map dump pinned .../sluice_rwould reads its fields by name (BTF)"
	else
		not_ok "bpftool map dump pinned .../sluice_rwould reads its fields by name (BTF)"
		diag "$(head -c 600 <<<"$dump")"
	fi

	# ---- sluice run reports would-drops and the sources they would hit ----

	RUN_OUT=$NETNS_TMP/run.$T.out
	nsenter --net="/var/run/netns/$NS_RX" "$SLUICE" run "$IF_RX" --interval 200ms \
		>"$RUN_OUT" 2>&1 &
	RUN_PID=$!
	NETNS_PIDS+=("$RUN_PID")
	for i in $(seq 100); do
		grep -q ' pps; top drops:' "$RUN_OUT" && break
		sleep 0.05
	done
	gen_bg flood2 -s "$SRC" -d "$ADDR4_RX" -r 2000 -t 1
	gen_wait flood2 || not_ok "send with sluice-gen"
	line=
	for i in $(seq 100); do
		line=$(grep -E "would drop [1-9][0-9]* pps; top drops: none; top would drop \(dry-run\): $SRC/32 ~[0-9]+" \
			"$RUN_OUT" | head -1)
		[ -n "$line" ] && break
		sleep 0.05
	done
	if [ -n "$line" ]; then
		ok "sluice run reports the would-drop rate and the source it would hit"
		diag "$line"
	else
		not_ok "sluice run reports the would-drop rate and the source it would hit"
		diag "$(tail -5 "$RUN_OUT")"
	fi
	kill -INT "$RUN_PID"
	wait "$RUN_PID"
	st=$?
	if [ "$st" = 0 ] && pinned=$(ls "$RX_PINS/sluice_config" 2>/dev/null) && [ -n "$pinned" ]; then
		ok "the run leaves the attachment it found"
	else
		not_ok "the run leaves the attachment it found"
		diag "exit status $st: $(cat "$RUN_OUT")"
	fi

	# ---- a --dry-run rule; a new rule in its slot starts from 0 ----

	expect_status 0 "set --dry-run off" rx_ctl -i "$IF_RX" set --dry-run off
	def_would=$(would_of default)
	expect_status 0 "rule add $RULE --rate 10/s --burst 10 --dry-run" \
		rx_ctl -i "$IF_RX" rule add "$RULE" --rate 10/s --burst 10 --dry-run
	gen_bg rflood -s "$RSRC" -d "$ADDR4_RX" -n 300 -r 3000
	gen_wait rflood || not_ok "send with sluice-gen"
	sleep 0.2
	rw=$(would_of "$RULE") dw=$(would_of default)
	if positive "$rw" && [ "$dw" = "$def_would" ]; then
		ok "a --dry-run rule counts its would-drops ($rw); the enforcing default adds none"
	else
		not_ok "a --dry-run rule counts its would-drops; the enforcing default adds none"
		diag "rule '$rw', default '$dw' (was $def_would)"
	fi
	slot1=$(($(tag_of "$RULE" | cut -d: -f2) >> 16))
	expect_status 0 "rule del $RULE" rx_ctl -i "$IF_RX" rule del "$RULE"
	expect_status 0 "rule add $RULE again" rx_ctl -i "$IF_RX" rule add "$RULE" --rate 10/s --dry-run
	slot2=$(($(tag_of "$RULE" | cut -d: -f2) >> 16))
	rw=$(would_of "$RULE")
	if [ "$rw" = 0 ]; then
		ok "a new rule starts its would-drops at 0 (slot $slot1, then $slot2)"
	else
		not_ok "a new rule starts its would-drops at 0"
		diag "would_drop '$rw' in slot $slot2 (the old rule had slot $slot1)"
	fi

	# ---- a state pinned without sluice_rwould (by the sluice before it) ----

	keys_before=$(jget "$(rx_ctl -i "$IF_RX" -j stats)" .keys)
	# SRC's bucket: found, its key, its drop count (would-drops under dry-run)
	kept='[.bucket.found, .bucket.key, (.bucket.dropped // 0) + (.bucket.would_drop // 0)]'
	kept="$kept | @tsv"
	src_before=$(jget "$(rx_ctl -i "$IF_RX" -j show "$SRC")" "$kept")
	rm -f "$RX_PINS/sluice_rwould"
	expect_status 0 "without sluice_rwould: rule list works" rx_ctl -i "$IF_RX" rule list
	last=$(awk '$1 == "default" { print $NF }' <<<"$OUT")
	if [ "$last" = "-" ]; then
		ok "without sluice_rwould: WOULD-DROP reads '-' (unknown)"
	else
		not_ok "without sluice_rwould: WOULD-DROP reads '-' (unknown)"
		diag "$OUT"
	fi
	expect_status 0 "without sluice_rwould: rule list -j works" rx_ctl -i "$IF_RX" -j rule list
	if [ "$(jget "$OUT" '.[] | select(.match == "default") | has("would_drop")')" = false ]; then
		ok "without sluice_rwould: rule list -j has no would_drop"
	else
		not_ok "without sluice_rwould: rule list -j has no would_drop"
		diag "$OUT"
	fi
	expect_status 0 "without sluice_rwould: stats --prometheus works" \
		rx_ctl -i "$IF_RX" stats --prometheus
	if ! grep -q would_drop_total <<<"$(grep policy_would <<<"$OUT")"; then
		ok "without sluice_rwould: no per-policy would-drop samples"
	else
		not_ok "without sluice_rwould: no per-policy would-drop samples"
	fi
	expect_status 0 "without sluice_rwould: sluice attach (an upgrade) adds it" \
		rx_sluice attach "$IF_RX"
	if [ -e "$RX_PINS/sluice_rwould" ] && grep -q "added: .*sluice_rwould" <<<"$OUT"; then
		ok "attach pinned sluice_rwould and says so"
	else
		not_ok "attach pinned sluice_rwould and says so"
		diag "$OUT"
	fi
	keys_after=$(jget "$(rx_ctl -i "$IF_RX" -j stats)" .keys)
	src_after=$(jget "$(rx_ctl -i "$IF_RX" -j show "$SRC")" "$kept")
	# Its drop count (would-drops of the dry-run flood) is the key's own: a
	# bucket made afresh has 0.
	if positive "$keys_before" && [ "$keys_after" = "$keys_before" ] &&
		[ "$(cut -f1 <<<"$src_after")" = true ] && positive "$(cut -f3 <<<"$src_after")" &&
		[ "$src_after" = "$src_before" ]; then
		ok "the upgraded state keeps its buckets ($keys_after keys;" \
			"$SRC's with its $(cut -f3 <<<"$src_after") drops)"
	else
		not_ok "the upgraded state keeps its buckets"
		diag "keys before $keys_before, after $keys_after;" \
			"$SRC before '$src_before', after '$src_after'"
		diag "$(rx_ctl -i "$IF_RX" top -n 20)"
	fi
	if [ "$(would_of default)" = 0 ] && [ "$(would_of "$RULE")" = 0 ]; then
		ok "after the attach: rule list -j has would_drop again (0: new counters)"
	else
		not_ok "after the attach: rule list -j has would_drop again"
		diag "$(list_j)"
	fi
	expect_status 0 "set --dry-run on" rx_ctl -i "$IF_RX" set --dry-run on
	gen_bg flood3 -s "$SRC" -d "$ADDR4_RX" -n 500 -r 5000
	gen_wait flood3 || not_ok "send with sluice-gen"
	sleep 0.2
	if positive "$(would_of default)"; then
		ok "the upgraded program counts would-drops in the new map ($(would_of default))"
	else
		not_ok "the upgraded program counts would-drops in the new map"
		diag "$(list_j)"
	fi

	# ---- detach removes the pin with the others ----

	expect_status 0 "detach" rx_sluice detach "$IF_RX"
	if [ ! -e "$RX_PINS" ]; then
		ok "detach removes every pin, sluice_rwould too, and the directory"
	else
		not_ok "detach removes every pin, sluice_rwould too, and the directory"
		diag "$(ls -la "$RX_PINS")"
	fi
}
for T in ${TABLES:-lru sets}; do
	one_table || not_ok "the run of this table stopped early"
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
done
T=
tap_done

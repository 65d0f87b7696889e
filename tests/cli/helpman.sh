#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Every option a parser takes is in its command's help and in the man page,
# so that the next option cannot be added unsaid. The options come from the
# parsers' own tables (user/sluice/opts.c attach_opts_table[], user/lib/cmd.c
# opts[]), and which command takes which is asked of the real binaries: an
# option is taken when the parser does not refuse it as another command's
# (on an interface that does not exist, so nothing is touched). Also: the
# usage lines of every help text open and close their brackets, and
# sluice(8) and sluicectl(8) list every JSON field the tools write.
set -u
source tests/lib/tap.sh

for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "help and man pages"
		exit 0
	fi
done
IF="cthm$$"

# section MANPAGE NAME: the troff source of one .SH or .SS section whose
# heading starts with NAME, up to the next heading of either kind
section() {
	awk -v want="$2" '
		/^\.S[HS] / { on = index($0, want) == 5 }
		on' "$1"
}
# in_troff TEXT OPT: TEXT (troff source) has --OPT, written \-\-o\-p\-t
in_troff() { grep -qF -- "$(sed 's/-/\\-/g' <<<"--$2")" <<<"$1"; }

# A refusal that says the option is another command's, or not an option.
FOREIGN="is an option of 'sluice run'|is an option of 'sluice shape attach'|is the limiter's|unknown option"

# ---- sluice: attach, run, shape attach (one option table) ----
mapfile -t SL_OPTS < <(sed -n '/^static const struct attach_opt attach_opts_table\[\]/,/^};/p' \
	user/sluice/opts.c | grep -o '{ "[a-z0-9-]*", [a-z_]*' | sed 's/{ "\([^"]*\)", \(.*\)/\1 \2/')
[ "${#SL_OPTS[@]}" -gt 30 ] && ok "sluice: the option table read from the parser (${#SL_OPTS[@]})" ||
	not_ok "sluice: the option table read from the parser (${#SL_OPTS[@]})"
SYN=$(section man/sluice.8 SYNOPSIS)
# syn_of WORDS: the synopsis lines of one command, from ".B WORDS" to ".br"
syn_of() { awk -v w=".B $1" '$0 == w { on = 1 } on && /^\.br/ { exit } on' <<<"$SYN"; }
for cmd in attach run "shape attach"; do
	# shellcheck disable=SC2086 # "shape attach" is two words
	help=$("$SLUICE" $cmd help 2>&1)
	ahelp=$("$SLUICE" attach help 2>&1)
	sec=$(section man/sluice.8 "sluice ${cmd%% *}")
	[ "$cmd" = "shape attach" ] && sec=$(section man/sluice.8 "sluice shape")
	asec=$(section man/sluice.8 "sluice attach")
	missing_help= missing_man= missing_syn= n=0
	for o in "${SL_OPTS[@]}"; do
		name=${o%% *} arg=${o#* }
		case $name in help | verbose) continue ;; esac
		if [ "$arg" = required_argument ]; then
			# shellcheck disable=SC2086
			out=$("$SLUICE" $cmd "$IF" "--$name" 1 2>&1)
		else
			# shellcheck disable=SC2086
			out=$("$SLUICE" $cmd "$IF" "--$name" 2>&1)
		fi
		grep -qE "$FOREIGN" <<<"$out" && continue
		n=$((n + 1))
		# run and shape attach take attach's options, documented there
		grep -qF -- "--$name" <<<"$help" ||
			{ [ "$cmd" != attach ] && grep -qF -- "--$name" <<<"$ahelp"; } ||
			missing_help="$missing_help --$name"
		# run's and shape attach's sections take attach's "as for sluice attach"
		in_troff "$sec" "$name" || { [ "$cmd" != attach ] && in_troff "$asec" "$name"; } ||
			missing_man="$missing_man --$name"
		# the synopsis of the command itself; run's names attach's options
		# as "attach options" and its fleet's as "fleet options"
		in_troff "$(syn_of "sluice $cmd")" "$name" ||
			{ [ "$cmd" = run ] && { in_troff "$(syn_of "sluice attach")" "$name" ||
				[[ $name == redis-* || $name == sync-* || $name == fleet-* ]]; }; } ||
			missing_syn="$missing_syn --$name"
	done
	[ -z "$missing_help" ] && ok "sluice $cmd: its help names every option it takes ($n)" ||
		not_ok "sluice $cmd: its help names every option it takes: not$missing_help"
	[ -z "$missing_man" ] && ok "sluice $cmd: sluice(8) names every option it takes" ||
		not_ok "sluice $cmd: sluice(8) names every option it takes: not$missing_man"
	[ -z "$missing_syn" ] && ok "sluice $cmd: sluice(8)'s synopsis names every option it takes" ||
		not_ok "sluice $cmd: sluice(8)'s synopsis names every option it takes: not$missing_syn"
done
# status takes shape:IFACE: its help and sluice(8) say so
grep -qF "shape:IFACE" <<<"$("$SLUICE" status help)" && ok "sluice status help names shape:IFACE" ||
	not_ok "sluice status help names shape:IFACE"
grep -qF 'shape:' <<<"$(grep -A3 '^\.B sluice status' man/sluice.8)" &&
	grep -q '^\.SS sluice status .*shape:IFACE' man/sluice.8 &&
	ok "sluice(8): status takes shape:IFACE, in the synopsis and its section" ||
	not_ok "sluice(8): status takes shape:IFACE, in the synopsis and its section"
expect_status 0 "sluice help shape attach" "$SLUICE" help shape attach
grep -qF -- "--horizon" <<<"$OUT" && ok "sluice help shape attach: shape attach's help" ||
	not_ok "sluice help shape attach: shape attach's help"

# ---- sluicectl: the editing commands (one option table) and the readers ----
mapfile -t ED_OPTS < <(sed -n '/^} opts\[\] = {/,/^};/p' user/lib/cmd.c |
	grep -o '{ "[a-z0-9-]*", OPT_[A-Z0-9_]*, [a-z]*' | sed 's/{ "\([^"]*\)", [A-Z0-9_]*, \(.*\)/\1 \2/')
[ "${#ED_OPTS[@]}" -gt 10 ] && ok "sluicectl: the editing option table read from the parser (${#ED_OPTS[@]})" ||
	not_ok "sluicectl: the editing option table read from the parser (${#ED_OPTS[@]})"
CSYN=$(section man/sluicectl.8 SYNOPSIS)
TOP=$("$SLUICECTL" help)
for cmd in set "rule add"; do
	# shellcheck disable=SC2086
	help=$("$SLUICECTL" $cmd help 2>&1)
	sec=$(section man/sluicectl.8 "$cmd")
	missing_help= missing_top= missing_man= missing_syn= n=0
	for o in "${ED_OPTS[@]}"; do
		name=${o%% *} arg=${o#* }
		words=("--$name")
		[ "$arg" = true ] && words+=(1)
		case $name in dry-run | fleet) words+=(on) ;; esac
		# shellcheck disable=SC2086
		out=$("$SLUICECTL" -i "$IF" $cmd 198.18.0.0/24 "${words[@]}" 2>&1)
		[ "$cmd" = set ] && out=$("$SLUICECTL" -i "$IF" set "${words[@]}" 2>&1)
		grep -qE "$FOREIGN" <<<"$out" && continue
		n=$((n + 1))
		grep -qF -- "--$name" <<<"$help" || missing_help="$missing_help --$name"
		# the top help's line of this command
		grep -qF -- "--$name" <<<"$(sed -n "/^  $cmd /,/^        [a-z]/p" <<<"$TOP")" ||
			missing_top="$missing_top --$name"
		in_troff "$sec" "$name" || missing_man="$missing_man --$name"
		in_troff "$(sed -n "/^\.B ${cmd// /\\ }/,/^\.br/p" <<<"$CSYN")" "$name" ||
			in_troff "$(grep -A40 "^\.B $cmd\$" <<<"$CSYN" | sed '/^\.br/q')" "$name" ||
			missing_syn="$missing_syn --$name"
	done
	[ -z "$missing_help" ] && ok "sluicectl $cmd: its help names every option it takes ($n)" ||
		not_ok "sluicectl $cmd: its help names every option it takes: not$missing_help"
	[ -z "$missing_top" ] && ok "sluicectl $cmd: 'sluicectl help' names every option it takes" ||
		not_ok "sluicectl $cmd: 'sluicectl help' names every option it takes: not$missing_top"
	[ -z "$missing_man" ] && ok "sluicectl $cmd: sluicectl(8)'s section names every option" ||
		not_ok "sluicectl $cmd: sluicectl(8)'s section names every option: not$missing_man"
	[ -z "$missing_syn" ] && ok "sluicectl $cmd: sluicectl(8)'s synopsis names every option" ||
		not_ok "sluicectl $cmd: sluicectl(8)'s synopsis names every option: not$missing_syn"
done
for o in "stats --watch" "stats --prometheus" "top -n"; do
	w=${o#* } c=${o%% *}
	grep -qF -- "$w" <<<"$("$SLUICECTL" $c help)" && grep -qF -- "$w" <<<"$TOP" &&
		ok "sluicectl $o: in its help and sluicectl help" ||
		not_ok "sluicectl $o: in its help and sluicectl help"
done

# ---- every usage line opens and closes its brackets ----
# usage_blocks TEXT: the synopsis lines of a help text (up to the first
# blank line after "Usage"), one command a line
balanced() {
	awk '{ for (i = 1; i <= length($0); i++) { c = substr($0, i, 1)
		if (c == "[") b++; if (c == "]") b--; if (c == "(") p++; if (c == ")") p--
		if (b < 0 || p < 0) bad = 1 } }
	     END { exit (bad || b || p) }' <<<"$1"
}
check_usage() {
	local name=$1 text=$2 block=
	# a command's synopsis runs from a line starting with the tool's
	# name (or two spaces and it) to the next one or a blank line
	block=$(awk '/^(Usage: |       |  )(sluice|sluicectl) / { if (b != "") print b; b = $0; next }
		     /^ *$/ { if (b != "") print b; b = ""; next }
		     b != "" && /^  +[[(-]/ { b = b " " $0; next }
		     { if (b != "") print b; b = "" }
		     END { if (b != "") print b }' <<<"$text")
	local bad=
	while IFS= read -r line; do
		[ -z "$line" ] && continue
		balanced "$line" || bad="$bad
$line"
	done <<<"$block"
	[ -z "$bad" ] && ok "$name: every usage line closes its brackets" ||
		{ not_ok "$name: every usage line closes its brackets"; diag "$bad"; }
}
check_usage "sluicectl help" "$TOP"
for o in set rule stats top show flush batch; do
	check_usage "sluicectl help $o" "$("$SLUICECTL" help $o)"
done
check_usage "sluice help" "$("$SLUICE" help)"
for c in attach detach status run reload "shape attach" "shape detach" "shape status"; do
	# shellcheck disable=SC2086
	check_usage "sluice $c help" "$("$SLUICE" $c help 2>&1)"
done

tap_done

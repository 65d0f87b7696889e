#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The README and the pages of docs/ cannot drift from the tools:
#  - every sluice and sluicectl command of their code blocks and of their
#    command tables is taken by the real parser (run in an empty network
#    namespace of our own, where eth0 does not exist: a command the parser
#    takes fails only on the missing interface), and every config block's
#    lines too;
#  - the README's "Real use" block runs, line by line, on a lab whose
#    interface is called eth0, and the bpftool example for the rules shows the
#    rule it added;
#  - the README's dependency list is scripts/deps.sh's, the list of pinned
#    maps the maps attach pins, and the sample summaries have the lines attach
#    prints;
#  - every relative link leads to a file, and a link's #anchor to a heading
#    of that file; every page of docs/ opens with its title and what it is for.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "the README's commands" bpftool
netns_need_sluice "the README's commands"
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}

# The README, then the pages of docs/: the examples may be on any of them.
DOCS=(README.md docs/*.md)
[ -e docs/usage.md ] || { not_ok "the pages of docs/ are there"; exit 1; }

# ---- the commands of the README and docs/ ----
# code blocks: lines that run sluice or sluicectl (after "sudo" or "$ ")
# (a block with "$ " prompts shows output too: only the prompted lines)
cmds_blocks() {
	awk 'FNR == 1 { inb = 0 }
	     /^```/ { inb = !inb; if (inb) { n = 0; prompt = 0 } else flush(); next }
	     inb { l[n++] = $0; if ($0 ~ /^\$ /) prompt = 1 }
	     function flush(  i) { for (i = 0; i < n; i++)
		if (!prompt || l[i] ~ /^\$ /) print l[i] }' "${DOCS[@]}" |
		sed -E 's/^\$ //; s/^sudo //' | grep -E '^sluice(ctl)? ' | sed -E 's/ +#.*$//'
}
# command tables: the first code span of a row's first cell
cmds_tables() {
	grep -hE '^\| `sluice(ctl)? ' "${DOCS[@]}" | sed -E 's/^\| `([^`]*)`.*/\1/'
}
# inline spans of policy options, joined across the lines of a paragraph
# (`--rate 10mbit --burst 64k --delay 16k`): a shaper's when they delay
cmds_options() {
	awk 'FNR == 1 { inb = 0 } /^```/ { inb = !inb; next } !inb' "${DOCS[@]}" | tr '\n' ' ' |
		grep -oE '`--rate [^`]*`' | tr -d '`' | sed -E 's/  +/ /g' | sort -u |
		while IFS= read -r o; do
			case $o in
			*--delay* | *--nodelay*) echo "sluice shape attach eth0 $o" ;;
			*) echo "sluice attach eth0 $o" ;;
			esac
		done
}
# config blocks: the lines of a block that holds editing commands, as a file
config_blocks() {
	awk 'FNR == 1 { inb = 0 }
	     /^```/ { inb = !inb; if (!inb && n) { print "--"; n = 0 } next }
	     inb && /^(set|rule (add|del|flush))( |$)/ { sub(/ +#.*$/, ""); print; n++ }' "${DOCS[@]}"
}

EMPTY="ctrm-$$"
ip netns add "$EMPTY" || { not_ok "make an empty network namespace"; exit 1; }
TMPD=$(mktemp -d /tmp/sluice-readme.XXXXXX)
trap 'ip netns del "$EMPTY" 2>/dev/null; rm -rf "$TMPD"' EXIT
in_empty() { nsenter --net="/var/run/netns/$EMPTY" "$@"; }
# The files the examples name exist, as they would where one runs them.
printf 'set --rate 100/s\n' >"$TMPD/eth0.conf"
cp "$TMPD/eth0.conf" "$TMPD/changes.conf"
printf 'secret\n' >"$TMPD/redis.pass"
chmod 600 "$TMPD/redis.pass"

# The commands run in $TMPD, where the examples' relative files are.
SLUICE=$(realpath "$SLUICE") SLUICECTL=$(realpath "$SLUICECTL")
# taken WORDS: the parser took them; the command failed only because no
# interface (or limiter) is there (exit 1, or 2 naming the interface)
taken() {
	local out st
	out=$(cd "$TMPD" && in_empty "$@" 2>&1)
	st=$?
	[ $st = 0 ] || [ $st = 1 ] && return 0
	# (or on the file the example assumes, which it names: sluice reload
	# eth0 reads /etc/sluice/eth0.conf)
	[ $st = 2 ] && grep -qE "no interface|is not attached|there is no state|/etc/sluice/" \
		<<<"$out"
}

n=0 bad=
while IFS= read -r line; do
	[ -z "$line" ] && continue
	# the files it names, in our directory; the tools we built
	line=$(sed -E "s#/etc/sluice/#$TMPD/#g; s#/usr/local/share/doc/sluice/#$TMPD/#g" <<<"$line")
	read -r -a words <<<"$line"
	case ${words[0]} in
	sluice) words[0]=$SLUICE ;;
	sluicectl) words[0]=$SLUICECTL ;;
	esac
	n=$((n + 1))
	if ! taken "${words[@]}"; then
		bad="$bad
$line: $(cd "$TMPD" && in_empty "${words[@]}" 2>&1 | head -2)"
	fi
done < <(cmds_blocks; cmds_tables; cmds_options)
[ "$n" -gt 40 ] && [ -z "$bad" ] && ok "every sluice and sluicectl command of the README and docs/ is taken by the parser ($n)" ||
	{ not_ok "every sluice and sluicectl command of the README and docs/ is taken by the parser ($n)"; diag "$bad"; }

k=0 bad=
: >"$TMPD/block.conf"
while IFS= read -r line; do
	if [ "$line" = "--" ]; then
		k=$((k + 1))
		taken "$SLUICECTL" -b "$TMPD/block.conf" ||
			bad="$bad
block $k: $(in_empty "$SLUICECTL" -b "$TMPD/block.conf" 2>&1 | head -2)"
		: >"$TMPD/block.conf"
	else
		echo "$line" >>"$TMPD/block.conf"
	fi
done < <(config_blocks)
[ "$k" -ge 1 ] && [ -z "$bad" ] && ok "every config block of the README and docs/ is taken by the parser ($k)" ||
	{ not_ok "every config block of the README and docs/ is taken by the parser ($k)"; diag "$bad"; }

# ---- the dependency list is scripts/deps.sh's ----
deps=$(sed -n '/^PKGS=(/,/)/p' scripts/deps.sh | tr -d '()' | sed 's/PKGS=//' | tr -s ' \n\t' '\n' | grep .)
quick=$(awk '/^## / { on = ($0 == "## Quick start") } on' README.md)
missing=
for p in $deps; do grep -qF "\`$p\`" <<<"$quick" || missing="$missing $p"; done
[ -z "$missing" ] && ok "the README's dependency list names every package of scripts/deps.sh" ||
	not_ok "the README's dependency list names every package of scripts/deps.sh: not$missing"

# ---- the links of the README and docs/ lead somewhere ----
# the anchors of a file's headings, as GitHub makes them: lower case, no
# punctuation but - and _, a space as -
anchors() {
	awk '/^```/ { inb = !inb; next } !inb && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
		tr '[:upper:]' '[:lower:]' | LC_ALL=C sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}
# the relative links of a file, outside its code blocks: TARGET[#ANCHOR]
links() {
	awk '/^```/ { inb = !inb; next } !inb' "$1" | grep -oE '\]\([^)[:space:]]+\)' |
		sed -E 's/^\]\(//; s/\)$//' | grep -vE '^[a-z]+:' || true
}
nl=0 bad=
for f in "${DOCS[@]}"; do
	while IFS= read -r link; do
		nl=$((nl + 1))
		target=${link%%#*} anchor=
		[[ $link == *"#"* ]] && anchor=${link#*#}
		path=$f
		[ -n "$target" ] && path=$(dirname "$f")/$target
		if [ ! -e "$path" ]; then
			bad="$bad
$f: $link: no file $path"
		elif [ -n "$anchor" ] && ! anchors "$path" | grep -qxF -- "$anchor"; then
			bad="$bad
$f: $link: no heading of $path has the anchor #$anchor"
		fi
	done < <(links "$f")
done
[ "$nl" -gt 20 ] && [ -z "$bad" ] && ok "every relative link of the README and docs/ leads to a file and a heading ($nl)" ||
	{ not_ok "every relative link of the README and docs/ leads to a file and a heading ($nl)"; diag "$bad"; }
bad=
for f in docs/*.md; do
	# "# Title", a blank line, then a sentence of what the page is for
	sed -n 1p "$f" | grep -qE '^# [^ ]' && [ -z "$(sed -n 2p "$f")" ] &&
		sed -n 3p "$f" | grep -vqE '^(#|\||```| |$)' || bad="$bad $f"
	links README.md | grep -qxF "$f" || bad="$bad $f(not in the README's map)"
done
[ -z "$bad" ] && ok "every page of docs/ opens with its title and what it is for, and the README links it" ||
	not_ok "every page of docs/ opens with its title and what it is for, and the README links it:$bad"

# The empty namespace and the files are done with: the lab's cleanup (its
# own trap, which replaces ours) removes only what it makes.
ip netns del "$EMPTY"
rm -rf "$TMPD"
trap - EXIT

# ---- a lab whose interface is eth0: the Real use block runs ----
netns_setup rm 46 || { not_ok "build the namespaces and the veth pair"; exit 1; }
ip -n "$NS_RX" link set "$IF_RX" down && ip -n "$NS_RX" link set "$IF_RX" name eth0 &&
	ip -n "$NS_RX" link set eth0 up || { not_ok "name the lab's interface eth0"; exit 1; }
IF_RX=eth0
RX_PINS="$RX_NETNS_DIR/eth0"
real=$(sed -n '/^## Real use/,/^## /p' README.md | awk '/^```/ { inb = !inb; next } inb' |
	sed -E 's/^sudo //; s/ +#.*$//' | grep -E '^sluice(ctl)? ')
while IFS= read -r line; do
	read -r -a words <<<"$line"
	case ${words[0]} in
	sluice) words[0]=$SLUICE ;;
	sluicectl) words[0]=$SLUICECTL ;;
	esac
	# before the detach: the bpftool example for the rules shows the rule
	if [ "$line" = "sluice detach eth0" ]; then
		dumps=
		while IFS= read -r b; do
			b=$(sed "s#/sys/fs/bpf/sluice/eth0/#$RX_PINS/#" <<<"$b")
			# shellcheck disable=SC2086 # the example's words
			dumps="$dumps$(rx_exec $b 2>&1)"
		done < <(awk 'FNR == 1 { inb = 0 } /^```/ { inb = !inb; next } inb' "${DOCS[@]}" | sed -E 's/ +#.*$//' |
			grep -E '^bpftool map dump pinned .*sluice_rule')
		# 198.18.0.0/24 is c6 12 00 00: the rule's key in the dump
		grep -qiE '0xc6 0x12 0x00 0x00|"198, *18, *0, *0|198,\s*18' <<<"$dumps" &&
			ok "the bpftool example for the rules (docs/) shows the rule just added" ||
			{ not_ok "the bpftool example for the rules (docs/) shows the rule just added"
				diag "$dumps"; }
		pinned=$(ls "$RX_PINS")
	fi
	expect_status 0 "the Real use block: $line" rx_exec "${words[@]}"
	case $line in "sluice attach "*) ATTACH_OUT=$OUT ;; esac
done <<<"$real"

# ---- the pinned maps are the docs', and their samples attach's ----
list=$(cat "${DOCS[@]}" | sed -n '/^Each pin directory holds/,/^$/p')
missing=
for m in $pinned; do grep -qF "\`$m\`" <<<"$list" || missing="$missing $m"; done
# every map name the tree defines (today the SLUICE_MAP_* of sluice.h; a
# registry of maps names them on its SLUICE_MAP lines too), pinned or not
names=$(cat include/sluice/*.h user/*/*.h | grep -E 'SLUICE_MAP|MAP\(' |
	grep -oE '"sluice_[a-z0-9_]+"' | tr -d '"' | sort -u)
for name in $names; do
	grep -qF "\`$name\`" <<<"$list" || missing="$missing $name"
done
[ "$(wc -w <<<"$names")" -ge 15 ] || missing="$missing (only $(wc -w <<<"$names") map names found in include/sluice/ and user/)"
[ -n "$pinned" ] && [ -z "$missing" ] && ok "the pin directory of docs/ lists every map attach pins" ||
	not_ok "the pin directory of docs/ lists every map attach pins: not$missing"
sample=$(awk '/^\$ sluice run eth0 --rate 100\/s --metrics/ { on = 1 } on && /^```/ { exit } on' "${DOCS[@]}")
missing=
while IFS= read -r l; do
	# the summary's lines: "  word: ..." or "  pinned in"
	w=$(sed -nE 's/^  ([a-z ]+)(:| in) .*/\1\2/p' <<<"$l")
	[ -n "$w" ] && ! grep -qF "  $w" <<<"$sample" && missing="$missing '$w'"
done <<<"${ATTACH_OUT:-}"
[ -n "${ATTACH_OUT:-}" ] && [ -z "$missing" ] &&
	ok "the sample summary of docs/ has the lines attach prints" ||
	not_ok "the sample summary of docs/ has the lines attach prints: not$missing"

tap_done

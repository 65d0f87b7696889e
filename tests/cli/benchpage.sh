#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs/performance.md's and the README's tables are one make bench run's, not
# typed by hand: every <!-- bench:NAME --> block of the pages is what
# tools/bench/render.py makes of the run's measurements kept in docs/bench/
# (make bench-page), and the check fails on a page whose block was edited,
# names an unknown table, lacks the run's files, or would mix two runs; the
# README and the page name the same run (docs/bench/runs.tsv).
set -u
source tests/lib/tap.sh

command -v python3 >/dev/null || { skip "python3 is not installed (run 'sudo make deps')" \
	"the performance page's tables"; exit 0; }
R=tools/bench/render.py
PAGE=docs/performance.md
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# page_check NAME WANT PATTERN PAGE DIR: `render.py page PAGE DIR --check`
# exits WANT (nonzero: anything but 0) and says PATTERN (grep -F).
page_check() {
	local name=$1 want=$2 pat=$3 out st
	out=$("$R" page "$4" "$5" --check 2>&1)
	st=$?
	if { [ "$st" = "$want" ] || { [ "$want" = nonzero ] && [ "$st" != 0 ]; }; } &&
		grep -qF -- "$pat" <<<"$out"; then
		ok "$name"
	else
		not_ok "$name"
		diag "exit status $st (want $want, saying '$pat'): $out"
	fi
}

page_check "docs/performance.md's bench blocks are what docs/bench/ renders" 0 "" \
	"$PAGE" docs/bench
page_check "the README's bench table is what docs/bench/ renders" 0 "" README.md docs/bench

# The README's table and the page name one run: runs.tsv's, for every part.
rid=$(cut -f2 docs/bench/runs.tsv 2>/dev/null | sort -u)
# shellcheck disable=SC2016 # the backquotes are Markdown's
r_readme=$(sed -n 's/.*make bench` run `\([^`]*\)`.*/\1/p' README.md)
# shellcheck disable=SC2016
r_page=$(sed -n 's/^The run on this page: `\([^`]*\)`.*/\1/p' "$PAGE")
if [ -n "$rid" ] && [ "$(wc -l <<<"$rid")" = 1 ] && [ "$r_readme" = "$rid" ] &&
	[ "$r_page" = "$rid" ]; then
	ok "the README and the page name the one run of docs/bench/runs.tsv ($rid)"
else
	not_ok "the README and the page name the one run of docs/bench/runs.tsv"
	diag "runs.tsv: ${rid:-none}; README: ${r_readme:-none}; page: ${r_page:-none}"
fi

names=$(grep -o '^    "[a-z0-9-]*": (' "$R" | cut -d'"' -f2)
# (the summary is the README's)
missing=$(for b in $names; do
	f=$PAGE
	[ "$b" = summary ] && f=README.md
	grep -qx "<!-- bench:$b -->" "$f" || echo "$b"
done)
if [ -n "$names" ] && [ -z "$missing" ]; then
	ok "the page has a block for each of the bench's tables ($(echo $names))"
else
	not_ok "the page has a block for each of the bench's tables (missing: $(echo ${missing:-all}))"
fi

# A number changed inside a block (the first digit of the rules block's table)
awk '/^<!-- bench:rules -->$/ { inb = 1 } /^<!-- \/bench:rules -->$/ { inb = 0 }
     inb && !done && /^\| one batch/ { sub(/[0-9]/, "9"); done = 1 } { print }' \
	"$PAGE" >"$T/edited.md"
if cmp -s "$PAGE" "$T/edited.md"; then
	not_ok "a page with a number edited in a block (the edit was made)"
else
	page_check "a number typed into a block fails the check, naming the block and make bench-page" \
		1 "renders: rules (run 'make bench-page')" "$T/edited.md" docs/bench
	"$R" page "$T/edited.md" docs/bench >/dev/null 2>&1
	if cmp -s "$PAGE" "$T/edited.md"; then
		ok "rendering the edited page puts the run's table back"
	else
		not_ok "rendering the edited page puts the run's table back"
	fi
fi

# An unknown table
printf '# x\n\n<!-- bench:nosuch -->\n| 1 |\n<!-- /bench:nosuch -->\n' >"$T/unknown.md"
page_check "a block naming no bench table is refused, naming it" nonzero \
	"no such bench table 'nosuch'" "$T/unknown.md" docs/bench

# The run's files missing
mkdir "$T/empty"
page_check "without the run's files the check fails and says to run make bench" nonzero \
	"run 'sudo make bench', then 'make bench-page'" "$PAGE" "$T/empty"

# The page names the run its tables come from
run=$(head -1 docs/bench/results.md 2>/dev/null | sed -n 's/^## sluice benchmarks (\(.*\))$/\1/p')
if [ -n "$run" ] && grep -qF "$run" "$PAGE"; then
	ok "the page names the run its tables come from ($run)"
else
	not_ok "the page names the run its tables come from (${run:-no docs/bench/results.md})"
fi
tap_done

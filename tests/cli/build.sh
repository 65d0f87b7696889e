#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The build (issue 21, item 9): an object depends on what it includes, not
# on every header: `make -n -W HEADER` (as if HEADER had changed; nothing is
# built) rebuilds the objects that include it and no others; a changed BPF
# program rebuilds the objects that embed its skeleton. Every source file
# opens with its SPDX line and a comment saying what it is.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/tap.sh
BUILD=${BUILD:-build}

if [ ! -x "$BUILD/sluice" ] || [ ! -x "$BUILD/sluicectl" ]; then
	skip "the tree is not built ($BUILD/sluice): run 'make'" "build dependencies"
	exit 0
fi
# What make would compile, as object names, if HEADER had changed.
would() { make -n -W "$1" BUILD="$BUILD" all tests 2>/dev/null | grep -- ' -c ' |
	grep -o -- "-o $BUILD/obj/[^ ]*\.o\|-o $BUILD/[a-z]*\.tmp\.bpf\.o" | sed 's/^-o //' | sort -u; }

if [ -n "$(make -n BUILD="$BUILD" all tests 2>/dev/null | grep -- ' -c ')" ]; then
	skip "the build is not up to date: run 'make tests' first" "build dependencies"
	exit 0
fi

out=$(would user/sluicectl/sluicectl.h)
others=$(grep -v "/obj/user/sluicectl/" <<<"$out")
if [ -n "$out" ] && [ -z "$others" ]; then
	ok "sluicectl.h changed: only sluicectl's objects are rebuilt ($(wc -l <<<"$out"))"
else
	not_ok "sluicectl.h changed: only sluicectl's objects are rebuilt"
	diag "$out"
fi

out=$(would user/sluice/target.h)
if [ -n "$out" ] && ! grep -qv "/obj/user/sluice/" <<<"$out"; then
	ok "the loader's target.h changed: only loader objects are rebuilt ($(wc -l <<<"$out"))"
else
	not_ok "the loader's target.h changed: only loader objects are rebuilt"
	diag "$out"
fi

out=$(would tools/bench/bench.h)
if [ -n "$out" ] && ! grep -q 'bpf\.o$\|/obj/user/\|/obj/tests/' <<<"$out"; then
	ok "the bench's bench.h changed: no BPF object, no sluice or test object is rebuilt"
else
	not_ok "the bench's bench.h changed: no BPF object, no sluice or test object is rebuilt"
	diag "$out"
fi

out=$(would bpf/lib/shape.h)
if grep -q "$BUILD/sluice.tmp.bpf.o" <<<"$out" && grep -q "/obj/user/sluice/" <<<"$out" &&
	! grep -q "$BUILD/gen.tmp.bpf.o\|/obj/tools/gen/\|/obj/user/sluicectl/" <<<"$out"; then
	ok "bpf/lib/shape.h changed: the datapath and loader objects that embed its skeleton are rebuilt, not the generator or sluicectl"
else
	not_ok "bpf/lib/shape.h changed: the datapath and loader objects that embed its skeleton are rebuilt, not the generator or sluicectl"
	diag "$out"
fi

if ! grep -qw 'ARCH' Makefile; then ok "the Makefile has no dead ARCH"
else not_ok "the Makefile has no dead ARCH"; fi

# Every C source and header opens with the SPDX line, then a comment.
bad=
while IFS= read -r f; do
	l1=$(sed -n 1p "$f") l2=$(sed -n '2{/^\(\/\*\| \*\|\/\/\)/p}' "$f")
	case $l1 in *SPDX-License-Identifier*) ;; *) bad="$bad $f(no SPDX)"; continue ;; esac
	[ -n "$l2" ] || bad="$bad $f(no opening comment)"
done < <(git ls-files '*.c' '*.h' 2>/dev/null)
if [ -z "$bad" ]; then ok "every C file opens with its SPDX line and a comment on what it is"
else not_ok "every C file opens with its SPDX line and a comment on what it is"; diag "$bad"; fi
exit $((TAP_FAILED > 0))

#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The tree follows its .clang-format: every C file git knows (*.c, *.h) is
# unchanged by clang-format 14 or newer (older ones format differently).
# A file that fails is named with its first differing lines; fix it with
#   clang-format -i FILE
set -u
cd "$(dirname "$0")/../.."
source tests/lib/tap.sh

CF=${CLANG_FORMAT:-clang-format}
if ! command -v "$CF" >/dev/null; then
	skip "$CF is not installed (scripts/deps.sh installs it)" "every C file follows .clang-format"
	exit 0
fi
ver=$("$CF" --version | grep -oE 'version [0-9]+' | grep -oE '[0-9]+$')
if [ -z "$ver" ] || [ "$ver" -lt 14 ]; then
	skip "$CF is version ${ver:-unknown}; the tree is formatted with 14" "every C file follows .clang-format"
	exit 0
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	skip "not a git checkout: no list of the tree's files" "every C file follows .clang-format"
	exit 0
fi

n=0
bad=
while IFS= read -r f; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	if ! d=$("$CF" --style=file "$f" | diff -u "$f" - 2>&1); then
		bad="$bad $f"
		diag "$(head -n 12 <<<"$d")"
	fi
done < <(git ls-files '*.c' '*.h')

if [ "$n" -ge 1 ] && [ -z "$bad" ]; then
	ok "every C file follows .clang-format ($n files)"
else
	not_ok "every C file follows .clang-format ($n files): not$bad"
fi
tap_done

# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# One TAP stream out of many programs' results (tests/run.sh,
# scripts/test-kernels.sh): emit numbers and counts the lines, tally_end
# closes the stream with the plan and the one line "N passed, N failed"
# (", N skipped") and returns nonzero when anything failed.
n=0 passed=0 failed=0 skipped=0

emit() { # emit "ok"|"not ok" "name [# SKIP reason]"
	n=$((n + 1))
	echo "$1 $n - $2"
	case "$1 $2" in
	"not ok"*) failed=$((failed + 1)) ;;
	*"# SKIP"*) skipped=$((skipped + 1)) ;;
	*) passed=$((passed + 1)) ;;
	esac
}

tally_end() {
	echo "1..$n"
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" = 0 ]
}

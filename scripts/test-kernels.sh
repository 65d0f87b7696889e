#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Run sluice's test suites on other kernels than the host's, under qemu
# (`make test-kernels`, root). For each kernel package in KERNELS:
#   1. resolve it with apt (a meta-package such as linux-image-amd64 names the
#      newest kernel package it depends on) and `apt-get download` it into
#      KERNEL_CACHE (default BUILD/kernels; kept, fetched again only when apt
#      has a newer version);
#   2. extract it (dpkg-deb -x), run depmod on its modules, and build an
#      initramfs of busybox (busybox-static), tests/kernels/init and the
#      modules 9p over virtio needs, in dependency order;
#   3. boot it with qemu-system-x86_64 (2 vCPUs, KERNEL_MEM): the host's root
#      shared read-only over 9p is the guest's root, tests/kernels/guest.sh
#      runs `SUITES=KERNEL_SUITES tests/run.sh` of this tree in it and writes
#      the TAP to the guest's ttyS1 (a file here); ttyS0 is its console.
# Prints one TAP stream, every test named by its kernel ("6.1.0-57: bpf/..."),
# ending with "N passed, N failed" (", N skipped"). A guest that panics, oopses
# or hits a BUG, or that does not finish within KERNEL_TIMEOUT, is a failure
# quoting its console.
#
# KVM is used when it boots a guest: it must print "Linux version" on the
# console within KVM_PROBE seconds (a PVM /dev/kvm gets no further than the
# decompressor); otherwise TCG (software, multi-threaded).
#
# Environment:
#   KERNELS         kernel packages (default: linux-image-amd64 linux-image-6.12-amd64,
#                   Debian 12's 6.1 and its newest 6.12)
#   KERNEL_SUITES   suites in the guest (default: unit bpf cli; net can be asked for)
#   KERNEL_MEM      guest memory (default 3G: the bpf tests make a 1M-key table per program)
#   KERNEL_TIMEOUT  seconds one guest may run, boot included (default 900)
#   KERNEL_ACCEL    auto (default), kvm or tcg
#   KVM_PROBE       seconds KVM gets to show the first console line (default 20)
#   KERNEL_CACHE    where packages, extracted kernels and logs go (default BUILD/kernels)
#   KERNEL_GATE     a directory the guest sees (its own 9p share, uncached):
#                   the guest's suites that measure wait until a file "go"
#                   is made in it: tests/run.sh makes it when the host's own
#                   suites that load the machine are done
#   BUILD           the build tree the guest tests (default build; `make tests` first)
#   KERNEL_RUN      instead of the suites, run this one script of the tree in the
#                   guest (a path relative to the tree, e.g. tools/bench/shape-guest.sh:
#                   the bench's shape part), the shape suite's modules loaded; its
#                   TAP lines and comments show here, "ok - LABEL: KERNEL_RUN ran to
#                   its end" when it did
#   KERNEL_RUN_OUT  with KERNEL_RUN: a file that gets the script's whole output
#                   (the guest's ttyS1, every line), for the caller to read
set -uo pipefail
export PATH=$PATH:/usr/sbin:/sbin
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=tests/lib/tally.sh
source tests/lib/tally.sh
TREE=$(pwd -P)

KERNELS=${KERNELS:-linux-image-amd64 linux-image-6.12-amd64}
KERNEL_SUITES=${KERNEL_SUITES:-unit bpf cli}
KERNEL_MEM=${KERNEL_MEM:-3G}
KERNEL_TIMEOUT=${KERNEL_TIMEOUT:-900}
KERNEL_ACCEL=${KERNEL_ACCEL:-auto}
KVM_PROBE=${KVM_PROBE:-20}
BUILD=${BUILD:-build}
KERNEL_CACHE=${KERNEL_CACHE:-$BUILD/kernels}
# The 9p driver and what it needs; virtio_pci where it is a module.
INITRD_MODULES="virtio_pci 9pnet_virtio 9p"

diag() { sed 's/^/# /'; }
die() { echo "test-kernels: $*" >&2; exit "${2:-1}"; }

if [ "$(id -u)" != 0 ]; then
	die "needs root (apt-get download, dpkg-deb, and the bpf suite in the guest): run 'sudo make test-kernels'"
fi
KERNEL_RUN=${KERNEL_RUN:-}
KERNEL_RUN_OUT=${KERNEL_RUN_OUT:-}
if [ -n "$KERNEL_RUN" ]; then
	case $KERNEL_RUN in
	/* | *..* | *[[:space:]]*) die "KERNEL_RUN=$KERNEL_RUN: want a path inside the tree, relative to it, without '..' or blanks (e.g. KERNEL_RUN=tools/bench/shape-guest.sh)" 2 ;;
	esac
	[ -x "$KERNEL_RUN" ] || die "KERNEL_RUN=$KERNEL_RUN: no executable script of that name in $(pwd -P)" 2
fi
for t in apt-get apt-cache dpkg-deb depmod qemu-system-x86_64 busybox cpio gzip xz timeout; do
	command -v "$t" >/dev/null ||
		die "'$t' is not installed: run 'sudo make deps' (scripts/deps.sh installs qemu-system-x86, busybox-static, cpio)"
done
case $KERNEL_ACCEL in auto | kvm | tcg) ;; *) die "KERNEL_ACCEL=$KERNEL_ACCEL: want auto, kvm or tcg" 2 ;; esac
for v in KERNEL_TIMEOUT KVM_PROBE; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: want a number of seconds (e.g. $v=900)" 2
done
# KERNEL_RUN's script needs the programs only (make bench builds no tests).
[ -x "$BUILD/sluice" ] && { [ -n "$KERNEL_RUN" ] || [ -d "$BUILD/tests/unit" ]; } ||
	die "$BUILD/sluice or $BUILD/tests is missing: run 'make tests' (make test-kernels does) first"
mkdir -p "$KERNEL_CACHE" || die "cannot create KERNEL_CACHE=$KERNEL_CACHE"
CACHE=$(cd "$KERNEL_CACHE" && pwd -P)
BUILD_ABS=$(cd "$BUILD" && pwd -P)
case $BUILD_ABS in
"$TREE"/*) BUILD_REL=${BUILD_ABS#"$TREE"/} ;;
*) BUILD_REL=$BUILD_ABS ;;
esac

# resolve PKG: sets pkg to the kernel package a (meta-)package stands for;
# fails (the reason in $why) when apt does not know it.
resolve() {
	local p=$1 c d i
	for i in 1 2 3 4; do
		c=$(apt-cache policy "$p" 2>/dev/null | awk '$1 == "Candidate:" {print $2}')
		if [ -z "$c" ] || [ "$c" = "(none)" ]; then
			why="$p is not in the apt sources (apt-cache policy $p shows no candidate): run 'apt-get update'"
			case $1 in
			linux-image-6.12*) why="$why; Debian 12 ships 6.12 in bookworm-security (linux-image-6.12-amd64)" ;;
			esac
			return 1
		fi
		d=$(apt-cache depends "$p" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
		[ -n "$d" ] || { pkg=$p; return 0; }
		p=$d
	done
	why="$1: more than 4 meta-packages deep"
	return 1
}

# fetch PKG: download and extract it; sets kdir (the extracted tree) and kver.
fetch() {
	local pkg=$1 ver deb stamp
	ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2}')
	deb="$CACHE/${pkg}_${ver//:/%3a}_amd64.deb"
	if [ ! -s "$deb" ]; then
		echo "# fetching $pkg $ver into $CACHE"
		(cd "$CACHE" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$ver") 2>&1 | diag
		[ -s "$deb" ] || { why="apt-get download $pkg=$ver failed"; return 1; }
	fi
	kdir="$CACHE/$pkg-$ver"
	stamp="$kdir/.extracted"
	if [ ! -e "$stamp" ]; then
		rm -rf "$kdir" && mkdir -p "$kdir" &&
			dpkg-deb -x "$deb" "$kdir/root" || { why="dpkg-deb -x $deb failed"; return 1; }
		kver=$(basename "$kdir"/root/boot/vmlinuz-* 2>/dev/null)
		kver=${kver#vmlinuz-}
		[ -n "$kver" ] && [ -d "$kdir/root/lib/modules/$kver" ] ||
			{ why="$deb holds no boot/vmlinuz-* with its lib/modules"; return 1; }
		depmod -b "$kdir/root" "$kver" || { why="depmod -b $kdir/root $kver failed"; return 1; }
		touch "$stamp"
	fi
	kver=$(basename "$kdir"/root/boot/vmlinuz-*)
	kver=${kver#vmlinuz-}
}

# initrd: build $kdir/initrd.gz (busybox, the init, the modules 9p needs).
initrd() {
	local mdir="$kdir/root/lib/modules/$kver" dir="$kdir/initrd" m p a
	local -A seen=()
	local order=()
	add() { # add PATH-IN-modules.dep: its dependencies first
		local q d
		[ -n "${seen[$1]:-}" ] && return 0
		seen[$1]=1
		for d in $(awk -F: -v p="$1" '$1 == p {print $2; exit}' "$mdir/modules.dep"); do
			add "$d"
		done
		order+=("$1")
	}
	for m in $INITRD_MODULES; do
		p=$(awk -F: -v n="$m" '{ b = $1; sub(/.*\//, "", b); sub(/\.ko(\.(xz|zst|gz))?$/, "", b)
			gsub(/-/, "_", b); if (b == n) { print $1; exit } }' "$mdir/modules.dep")
		if [ -z "$p" ]; then
			grep -q "/${m//_/[-_]}\.ko\$" "$mdir/modules.builtin" && continue
			why="module $m is neither in $mdir/modules.dep nor built in"
			return 1
		fi
		add "$p"
	done
	rm -rf "$dir" && mkdir -p "$dir"/{bin,proc,sys,dev,lib/modules} || return 1
	cp "$(command -v busybox)" "$dir/bin/busybox" || return 1
	for a in $(busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$dir/bin/$a"
	done
	install -m 0755 tests/kernels/init "$dir/init" || return 1
	: >"$dir/modules"
	for p in "${order[@]}"; do
		a=$(basename "$p")
		case $a in
		*.xz) xz -dc "$mdir/$p" >"$dir/lib/modules/${a%.xz}" && a=${a%.xz} ;;
		*.zst) zstd -qdc "$mdir/$p" >"$dir/lib/modules/${a%.zst}" && a=${a%.zst} ;;
		*.gz) gzip -dc "$mdir/$p" >"$dir/lib/modules/${a%.gz}" && a=${a%.gz} ;;
		*) cp "$mdir/$p" "$dir/lib/modules/$a" ;;
		esac || { why="cannot unpack $p"; return 1; }
		echo "$a" >>"$dir/modules"
	done
	(cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$kdir/initrd.gz" ||
		{ why="cpio of the initramfs failed"; return 1; }
	echo "# $kver: initramfs modules: $(tr '\n' ' ' <"$dir/modules")"
}

# boot ACCEL: run the guest; sets boot_s (seconds to the first TAP line),
# total_s and st (0 finished, 124 timed out, 3 KVM did not boot, else qemu's
# status).
boot() {
	local accel=$1 cpu pid t0 now
	case $accel in
	kvm) cpu=(-accel kvm -cpu host) ;;
	tcg) cpu=(-accel tcg,thread=multi -cpu max) ;;
	esac
	: >"$con" && : >"$tap"
	t0=$(date +%s)
	rm -f "$kdir/qemu.pid"
	# A qemu that aborts (KVM refusing the CPU model) is a status here: the
	# subshell's own "Aborted" goes to /dev/null (qemu's stderr to its log).
	(timeout --kill-after=10 "$KERNEL_TIMEOUT" qemu-system-x86_64 "${cpu[@]}" -M q35 \
		-pidfile "$kdir/qemu.pid" \
		-smp 2 -m "$KERNEL_MEM" -nographic -no-reboot -nic none -monitor none \
		-chardev file,id=con,path="$con" -serial chardev:con \
		-chardev file,id=tap,path="$tap" -serial chardev:tap \
		${KERNEL_GATE:+-virtfs local,path=$KERNEL_GATE,mount_tag=gate,security_model=none,readonly=on} \
		-kernel "$kdir/root/boot/vmlinuz-$kver" -initrd "$kdir/initrd.gz" \
		-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
		-append "console=ttyS0 panic=-1 oops=panic sluice.tree=$TREE sluice.build=$BUILD_REL sluice.modules=$kdir/root/lib/modules/$kver sluice.suites=${KERNEL_SUITES// /,}${KERNEL_RUN:+ sluice.run=$KERNEL_RUN}${KERNEL_GATE:+ sluice.gate=1}" \
		</dev/null >"$kdir/qemu-$accel.log" 2>&1
	r=$?
	exit $r) 2>/dev/null &
	pid=$!
	boot_s=
	while kill -0 "$pid" 2>/dev/null; do
		now=$(($(date +%s) - t0))
		[ -z "$boot_s" ] && [ -s "$tap" ] && boot_s=$now
		if [ "$accel" = kvm ] && [ "$now" -ge "$KVM_PROBE" ] && ! grep -q "Linux version" "$con"; then
			[ -s "$kdir/qemu.pid" ] && kill "$(cat "$kdir/qemu.pid")" 2>/dev/null
			wait "$pid" 2>/dev/null
			st=3
			return
		fi
		sleep 1
	done
	wait "$pid" 2>/dev/null
	st=$?
	total_s=$(($(date +%s) - t0))
	[ -n "$boot_s" ] || boot_s=$total_s
	if [ "$accel" = kvm ] && [ "$st" != 124 ] && ! grep -q "Linux version" "$con"; then
		st=3
	fi
}

kvm_ok=
[ "$KERNEL_ACCEL" = tcg ] && kvm_ok=no
[ -w /dev/kvm ] || kvm_ok=no
# A PVM /dev/kvm (kvm_pvm loaded): Debian's kernels never get past their
# decompressor there, so auto goes straight to TCG rather than spend
# KVM_PROBE seconds showing it again (KERNEL_ACCEL=kvm still tries).
if [ "$KERNEL_ACCEL" = auto ] && [ -d /sys/module/kvm_pvm ] && [ -z "$kvm_ok" ]; then
	kvm_ok=pvm
fi

echo "TAP version 13"
[ "$kvm_ok" = pvm ] && echo "# /dev/kvm is PVM's (the kvm_pvm module): using TCG" && kvm_ok=no
t_all=$(date +%s)
for spec in $KERNELS; do
	why=
	echo "# kernel $spec"
	if ! resolve "$spec"; then
		emit "ok" "$spec # SKIP $why"
		continue
	fi
	if ! fetch "$pkg" || ! initrd; then
		emit "not ok" "$spec ($pkg): $why"
		continue
	fi
	label=${kver%-amd64}
	con="$kdir/console.log" tap="$kdir/tap.log"
	accel=tcg
	if [ -z "$kvm_ok" ] || [ "$kvm_ok" = yes ]; then
		accel=kvm
		boot kvm
		if [ "$st" = 3 ]; then
			echo "# $label: KVM showed no console line within ${KVM_PROBE}s (a PVM /dev/kvm?): using TCG"
			[ "$KERNEL_ACCEL" = kvm ] && { emit "not ok" "$label: boots under KVM (KERNEL_ACCEL=kvm)"; continue; }
			kvm_ok=no accel=tcg
		else
			kvm_ok=yes
		fi
	fi
	[ "$accel" = tcg ] && boot tcg
	echo "# $label: $pkg under $accel, 2 vCPUs, $KERNEL_MEM; console $con"

	finished=0 last=
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		"ok "[0-9]*" - "*) emit "ok" "$label: ${line#ok * - }"; last=${line#ok * - } ;;
		"not ok "[0-9]*" - "*) emit "not ok" "$label: ${line#not ok * - }"; last=${line#not ok * - } ;;
		"not ok - "*) emit "not ok" "$label: ${line#not ok - }" ;;
		"# guest: done") finished=1 ;;
		"#"*) echo "# $label: ${line#\# }" ;;
		esac
	done <"$tap"

	if [ -n "$KERNEL_RUN" ]; then
		[ -n "$KERNEL_RUN_OUT" ] && tr -d '\r' <"$tap" >"$KERNEL_RUN_OUT"
		[ "$finished" = 1 ] && emit "ok" "$label: $KERNEL_RUN ran to its end"
	fi
	# tests/run.sh prints a program's lines when it ends, in name order: the
	# guest stopped in the program after the last one that reported.
	stopped="the last test program to report: ${last%%:*}; the guest stopped in the next one"
	[ -n "$last" ] || stopped="no test program reported"
	[ -n "$KERNEL_RUN" ] && stopped="the guest stopped in $KERNEL_RUN"
	oops=$(grep -a -n -E 'Kernel panic|Oops|BUG:' "$con" | head -5)
	if [ -n "$oops" ]; then
		first=$(head -1 <<<"$oops" | cut -d: -f2- | tr -d '\r')
		emit "not ok" "$label: kernel: ${first#*] }"
		echo "# $label: $stopped"
		l=$(head -1 <<<"$oops" | cut -d: -f1)
		sed -n "$((l > 5 ? l - 5 : 1)),$((l + 60))p" "$con" | tr -d '\r' | diag
	fi
	if [ "$st" = 124 ]; then
		emit "not ok" "$label: guest finished within KERNEL_TIMEOUT=${KERNEL_TIMEOUT}s"
		echo "# $label: $stopped"
		tail -20 "$con" | tr -d '\r' | diag
	elif [ "$finished" = 0 ] && [ -z "$oops" ]; then
		emit "not ok" "$label: guest ran the suites to the end (qemu exit status $st)"
		echo "# $label: $stopped"
		tail -30 "$con" | tr -d '\r' | diag
	fi
	echo "# $label: boot ${boot_s}s, whole guest ${total_s}s ($accel)"
done
echo "# test-kernels: $(($(date +%s) - t_all))s for: $KERNELS"
tally_end

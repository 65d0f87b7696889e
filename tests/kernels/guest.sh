#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# PID 1 inside a test-kernels guest, after tests/kernels/init switched into the
# host's root (read-only, over 9p). Mounts what the suites need that a
# read-only root cannot give (tmpfs on /tmp and /run, bpffs, devpts, shm;
# a tree cloned under /tmp or /run is bound back over the tmpfs),
# runs tests/run.sh of the tree with the suites of the command line
# (sluice.suites=unit,bpf,cli) and writes its TAP to ttyS1, then powers off.
# With sluice.run=PATH (a script of the tree, e.g. tools/bench/shape-guest.sh:
# scripts/test-kernels.sh's KERNEL_RUN) it runs that script instead, its
# output to ttyS1, with the shape suite's modules loaded.
# The host's scripts/test-kernels.sh reads ttyS1 back; ttyS0 is the console.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
out=/dev/ttyS1
stty -F "$out" raw -echo 2>/dev/null

# Power off, and wait for it without forking: an external sleep may fail to
# start while the kernel powers off, and PID 1 exiting is a panic.
off() {
	local end=$((SECONDS + 30))
	sync
	echo o >/proc/sysrq-trigger
	while [ "$SECONDS" -lt "$end" ]; do :; done
}

tree= suites= build=build run= modules= gate=
for arg in $(cat /proc/cmdline); do
	case $arg in
	sluice.run=*) run=${arg#sluice.run=} ;;
	sluice.tree=*) tree=${arg#sluice.tree=} ;;
	sluice.suites=*) suites=${arg#sluice.suites=} ;;
	sluice.build=*) build=${arg#sluice.build=} ;;
	sluice.modules=*) modules=${arg#sluice.modules=} ;;
	sluice.gate=1) gate=1 ;;
	esac
done
suites=${suites//,/ }
# sluice.gate=1: the suites that measure wait for the host's file "go" in the
# 9p share "gate", mounted uncached (a file made after a look is seen at the
# next): tests/run.sh's guest_gate_wait.
if [ -n "$gate" ]; then
	mkdir -p /dev/.sluice-gate &&
		mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=none gate /dev/.sluice-gate &&
		export SLUICE_GUEST_GATE=/dev/.sluice-gate/go
fi

# The tree may be cloned anywhere, /tmp and /run included, which the tmpfs
# mounts below hide: the host's /tmp and /run stay reachable under
# /dev/.sluice-host (a bind of the 9p root's, on the one writable place
# there is yet), and every path the guest needs that lies under them (the
# tree, the build, the kernel's modules) is bound back at its own path.
hold=/dev/.sluice-host
for d in /tmp /run; do
	mkdir -p "$hold$d" && mount --bind "$d" "$hold$d"
done
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t tmpfs -o mode=0755 run /run
case $build in /*) build_abs=$build ;; *) build_abs=$tree/$build ;; esac
bound=
for p in "$tree" "$build_abs" "$modules"; do
	case $p in
	/tmp/* | /run/*) ;;
	*) continue ;;
	esac
	for b in $bound; do
		case $p/ in "$b"/*) continue 2 ;; esac
	done
	if ! { mkdir -p "$p" && mount --bind "$hold$p" "$p"; }; then
		echo "not ok - guest: $p (under /tmp or /run) could not be bound back over the guest's tmpfs" >"$out"
		off
	fi
	bound="$bound $p"
	echo "# guest: $p bound back over the guest's tmpfs" >"$out"
done
mount -t bpf bpf /sys/fs/bpf
# What udev would add to a devtmpfs.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/pts /dev/shm
mount -t devpts -o ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up

# The booted kernel's modules (the package's, not the host's /lib/modules),
# for the kernel's own autoloading too (nf_tables for the net suite's
# counters, ...); veth for the net suite's pairs, loaded up front.
echo "$tree/tests/kernels/modprobe" >/proc/sys/kernel/modprobe
# The shape suite's qdiscs and classifier (autoloading would find them too).
mods=veth
case " $suites " in *" shape "*) mods="veth sch_fq sch_ingress cls_bpf" ;; esac
[ -n "$run" ] && mods="veth sch_fq sch_ingress cls_bpf"
for m in $mods; do
	"$tree/tests/kernels/modprobe" "$m" 2>&1 | sed 's/^/# guest: /' >"$out"
done
# tests/shape/ifb.sh's ifb, with no ifb0 and ifb1 of its own (autoloading by
# `ip link add type ifb` would make them in the initial namespace).
case " $suites " in *" shape "*)
	"$tree/tests/kernels/modprobe" ifb numifbs=0 2>&1 | sed 's/^/# guest: /' >"$out" ;;
esac

# SLUICE_GUEST: tests/run.sh runs the shape suite here, never in a guest of its own.
export HOME=/tmp TMPDIR=/tmp BUILD=$build SUITES="$suites" SLUICE_GUEST=1
cd "$tree" || { echo "not ok - guest: cd $tree failed" >"$out"; off; }
if [ -n "$run" ]; then
	{
		echo "# guest: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo), running $run"
		start=$(date +%s)
		"$tree/$run" 2>&1
		echo "# guest: $run exit status $?, $(($(date +%s) - start)) s"
		echo "# guest: done"
	} >"$out"
	off
fi
{
	echo "# guest: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo), suites: $suites"
	start=$(date +%s)
	tests/run.sh 2>&1
	echo "# guest: tests/run.sh exit status $?, $(($(date +%s) - start)) s"
	echo "# guest: done"
} >"$out"
off

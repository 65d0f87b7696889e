# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice: one top-level Makefile, everything out of tree in $(BUILD)/.

BUILD ?= build
PREFIX ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/sluice
# bash-completion loads completions/CMD from here when CMD is first completed.
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# The Grafana dashboard, the Prometheus alert rules (with their unit tests,
# beside them: the test names the rules by a relative path) and the JSON
# schema of every -j output: data, not docs (dh_compress gzips docs).
DATADIR ?= $(PREFIX)/share/sluice

# The release, one line in VERSION: `sluice --version` prints it.
VERSION := $(shell cat VERSION)

CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wno-missing-field-initializers
CPPFLAGS_ALL := -Iinclude -Iuser/lib -I$(BUILD) -D_GNU_SOURCE -DSLUICE_VERSION='"$(VERSION)"'
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags libbpf libxdp 2>/dev/null)
DEP_LIBS := $(shell $(PKG_CONFIG) --libs libxdp libbpf 2>/dev/null) -lelf -lz -lpthread -lm
# The fleet agent's Redis client (user/lib/redis.c, Debian's libhiredis-dev).
DEP_CFLAGS += $(shell $(PKG_CONFIG) --cflags hiredis 2>/dev/null)
DEP_LIBS += $(shell $(PKG_CONFIG) --libs hiredis 2>/dev/null || echo -lhiredis)
# The HTTP server of `sluice run --metrics` (user/sluice/metrics.c): sluice only.
MHD_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)

BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror -Wno-unused-function \
	-Iinclude -Ibpf -I/usr/include/$(MULTIARCH)

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean help install uninstall test test-kernels soak bench bench-page demo deps check-deps

all:

help:
	@echo 'sluice make targets:'
	@echo '  all        build sluice, sluicectl and the traffic generator into $(BUILD)/ (default)'
	@echo '  test       build and run every test suite (TAP; the bpf and net suites need root)'
	@echo '  test-kernels  run the unit, bpf and cli suites on Debian 12 kernels (6.1, 6.12)'
	@echo '             under qemu (root, about 5 minutes; downloads the kernel packages)'
	@echo '             KERNELS=pkgs KERNEL_SUITES="unit bpf cli net": see scripts/test-kernels.sh'
	@echo '             GUEST_SUITES="bpf net/multiprog" make test: those (SUITE or SUITE/NAME)'
	@echo '             on 6.1 too, in the shape suite'"'"'s guest (one boot; CI: .ci/run)'
	@echo '  soak       an operator'"'"'s day on three boxes (root, SOAK_S seconds, default 1800):'
	@echo '             reloads, rule edits, Redis restarted, stopped and given a new password,'
	@echo '             agents killed, an upgrade, a rename; checks every window that held'
	@echo '             sources stay held, exempt ones pass, denied ones do not, and that'
	@echo '             sluice run'"'"'s fds and memory stay flat (tests/soak/day.sh); not in test'
	@echo '  bench      run the benchmarks (root, several minutes), results in $(BUILD)/bench/'
	@echo '  bench-page the last make bench into docs/bench/ and docs/performance.md'
	@echo '  demo       install what is missing, build, show sluice holding a flood in a lab'
	@echo '  deps       install the build and test dependencies with apt-get (root)'
	@echo '  install    install under DESTDIR/PREFIX ($(PREFIX)): binaries in SBINDIR,'
	@echo '             man pages in MANDIR, the systemd units sluice@.service and'
	@echo '             sluice-fleet@.service (the fleet agent) in UNITDIR,'
	@echo '             the licenses and sluice.conf.example in DOCDIR, the bash'
	@echo '             completion of sluice and sluicectl in BASHCOMPDIR, the Grafana'
	@echo '             dashboard, the alert rules and the JSON schema in DATADIR'
	@echo '  uninstall  remove what install put there'
	@echo '  deb        the Debian package sluice_VERSION_ARCH.deb (debian/), built with'
	@echo '             dpkg-buildpackage in a copy of the tree under /tmp, into DEBDIR'
	@echo '             ($(DEBDIR)); DEB_VERSION= another version than VERSION'
	@echo '  clean      remove $(BUILD)/'
	@echo 'Variables: V=1 (full commands), BUILD=dir, PREFIX=, DESTDIR=, CC=, CLANG=, BPFTOOL='
	@echo '  install dirs: SBINDIR=$(SBINDIR) MANDIR=$(MANDIR)'
	@echo '                UNITDIR=$(UNITDIR) DOCDIR=$(DOCDIR)'
	@echo '                BASHCOMPDIR=$(BASHCOMPDIR) DATADIR=$(DATADIR)'
	@echo 'Version: $(VERSION) (from the file VERSION)'

# ---- BPF objects and skeletons ----
# Every *.bpf.c becomes $(BUILD)/<name>.bpf.o and $(BUILD)/<name>.skel.h
# (struct <name>_bpf): bpf/sluice.bpf.c is the datapath, bpf/fleet.bpf.c the
# fleet agent's two programs; tools/ hold the traffic generator's and the
# bench's own small programs, tests/bpf/progs/ the bpf suite's.

BPF_SRCS := $(wildcard bpf/*.bpf.c tools/*/*.bpf.c tests/bpf/progs/*.bpf.c)
SKELS := $(patsubst %.bpf.c,$(BUILD)/%.skel.h,$(notdir $(BPF_SRCS)))
vpath %.bpf.c $(sort $(dir $(BPF_SRCS)))

# Each object depends on the headers it includes, as the compiler lists them
# (-MMD -MP: $(BUILD)/....d, read back below), not on every header.
$(BUILD)/%.tmp.bpf.o: %.bpf.c | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.bpf.o: $(BUILD)/%.tmp.bpf.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# ---- userspace ----

LIB_SRCS := $(wildcard user/lib/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
host_srcs = $(filter-out %.bpf.c,$(wildcard $(1)/*.c))
SLUICE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call host_srcs,user/sluice))
CTL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call host_srcs,user/sluicectl))
GEN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call host_srcs,tools/gen))
BENCH_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call host_srcs,tools/bench))
PROBE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(call host_srcs,tools/probe))
TESTLIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/lib/*.c))

PROGS := $(if $(SLUICE_OBJS),$(BUILD)/sluice) $(if $(CTL_OBJS),$(BUILD)/sluicectl) \
	$(if $(GEN_OBJS),$(BUILD)/sluice-gen) $(if $(BENCH_OBJS),$(BUILD)/sluice-bench) \
	$(if $(PROBE_OBJS),$(BUILD)/sluice-probe)

all: $(BUILD)/libsluice.a $(PROGS)

$(BUILD):
	$(Q)mkdir -p $@

# An object depends on what it includes (-MMD -MP). The skeletons are made
# first (order-only: the first build has no dependency files yet); one that
# an object includes is then in its list, so a changed program rebuilds the
# objects that embed it (its bytes), and only those.
$(BUILD)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(DEP_CFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

# The two main.c print the version: a new VERSION rebuilds them.
$(BUILD)/obj/user/sluice/main.o $(BUILD)/obj/user/sluicectl/main.o: VERSION

$(BUILD)/libsluice.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SLUICE_OBJS): DEP_CFLAGS += $(MHD_CFLAGS)

$(BUILD)/sluice: $(SLUICE_OBJS) $(BUILD)/libsluice.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(MHD_LIBS) $(DEP_LIBS)

$(BUILD)/sluicectl: $(CTL_OBJS) $(BUILD)/libsluice.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(DEP_LIBS)

$(BUILD)/sluice-gen: $(GEN_OBJS) $(BUILD)/libsluice.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(DEP_LIBS)

# sluice-bench runs the datapath on the bpf suite's harness (tests/lib/bpfrun.c).
BENCH_HARNESS := $(BUILD)/obj/tests/lib/bpfrun.o $(BUILD)/obj/tests/lib/tap.o
$(BENCH_OBJS): CPPFLAGS_ALL += -Itests/lib

$(BUILD)/sluice-bench: $(BENCH_OBJS) $(BENCH_HARNESS) $(BUILD)/libsluice.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(DEP_LIBS)

# The shaper tests' UDP sender and receiver (tests/shape): no BPF, no libsluice.
$(BUILD)/sluice-probe: $(PROBE_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lm

# ---- tests: every tests/{unit,bpf}/*.c is one TAP program ----

TEST_PROGS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/*.c tests/bpf/*.c))
# Programs the shell tests run, not TAP programs: the fake Redis of the
# fleet tests (tests/tools/fakeredis.c).
TEST_TOOLS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/tools/*.c))

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJS) $(BUILD)/libsluice.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(DEP_LIBS)

tests: all $(TEST_PROGS) $(TEST_TOOLS)

test: check-deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)BUILD=$(BUILD) tests/run.sh

# An operator's day, SOAK_S seconds (tests/soak/day.sh): its own target, never
# part of test.
soak: check-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) SUITES=soak tests/run.sh

# Debian 12's kernels under qemu, on this tree's build (scripts/test-kernels.sh).
test-kernels: check-deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)BUILD=$(BUILD) scripts/test-kernels.sh

bench: check-deps all $(BUILD)/sluice-bench
	$(Q)BUILD=$(BUILD) tools/bench/run.sh

# docs/performance.md's and the README's tables from the last whole make
# bench: its measurements copied to docs/bench/, the pages' <!-- bench:NAME -->
# blocks rendered from them by tools/bench/render.py, which refuses parts of
# different runs (runs.tsv; tests/cli/benchpage.sh checks that the pages are
# what they render).
BENCH_PAGE_FILES := cost-runs.json e2e.tsv e2e-mem.tsv accuracy-runs.json rules.json \
	fleet.json shape.json shape-cost-runs.json results.md runs.tsv
bench-page:
	$(Q)for f in $(BENCH_PAGE_FILES); do [ -s "$(BUILD)/bench/$$f" ] || { \
		echo "bench-page: $(BUILD)/bench/$$f is missing: run 'sudo make bench' (every part) first" >&2; \
		exit 1; }; done
	$(Q)mkdir -p docs/bench
	$(Q)cp $(addprefix $(BUILD)/bench/,$(BENCH_PAGE_FILES)) docs/bench/
	$(Q)tools/bench/render.py page docs/performance.md docs/bench
	$(Q)tools/bench/render.py page README.md docs/bench

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) scripts/demo.sh

deps:
	$(Q)scripts/deps.sh

# Installs nothing: a missing package is an error naming `make deps`.
check-deps:
	$(Q)scripts/deps.sh --check

# ---- install ----
# The unit names the installed sluice: @SBINDIR@ becomes $(SBINDIR) (without
# DESTDIR, which is only where the files are staged).

DOC_FILES := LICENSE etc/sluice.conf.example
LICENSE_FILES := LICENSES/GPL-2.0-only.txt LICENSES/BSD-2-Clause.txt
COMPLETION_FILES := contrib/bash-completion/sluice contrib/bash-completion/sluicectl
DATA_FILES := contrib/grafana/sluice.json contrib/prometheus/sluice.rules.yml \
	contrib/prometheus/sluice.rules.test.yml docs/schema/sluice.schema.json

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR)/LICENSES $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DATADIR)
	install -m 0755 $(BUILD)/sluice $(BUILD)/sluicectl $(DESTDIR)$(SBINDIR)/
	install -m 0644 man/sluice.8 man/sluicectl.8 $(DESTDIR)$(MANDIR)/man8/
	for u in sluice@ sluice-fleet@; do \
		sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/$$u.service.in \
			>$(DESTDIR)$(UNITDIR)/$$u.service && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.service || exit 1; \
	done
	install -m 0644 $(DOC_FILES) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(LICENSE_FILES) $(DESTDIR)$(DOCDIR)/LICENSES/
	install -m 0644 $(COMPLETION_FILES) $(DESTDIR)$(BASHCOMPDIR)/
	install -m 0644 $(DATA_FILES) $(DESTDIR)$(DATADIR)/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/sluice $(DESTDIR)$(SBINDIR)/sluicectl
	rm -f $(DESTDIR)$(MANDIR)/man8/sluice.8 $(DESTDIR)$(MANDIR)/man8/sluicectl.8
	rm -f $(DESTDIR)$(UNITDIR)/sluice@.service $(DESTDIR)$(UNITDIR)/sluice-fleet@.service
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOC_FILES)) $(LICENSE_FILES))
	rmdir $(DESTDIR)$(DOCDIR)/LICENSES $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(notdir $(COMPLETION_FILES)))
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(DATA_FILES)))
	rmdir $(DESTDIR)$(DATADIR) 2>/dev/null || true

# ---- the Debian package (debian/) ----
# dpkg-buildpackage builds in the tree it runs in and writes the packages to
# that tree's parent: deb copies the tree (the files git lists, tracked or new
# and not ignored, as they are now; without git, all but .git and build*)
# into a directory of its own under TMPDIR (/tmp), builds there, and copies
# the .deb files (sluice and its -dbgsym) to DEBDIR. It writes nothing else
# outside that directory and never touches $(BUILD)/. DEB_VERSION is the
# package's version: when it is not debian/changelog's latest, the copy's
# changelog gets an entry for it, dated as that latest one (no clock).
DEBDIR ?= $(BUILD)
DEB_VERSION ?= $(VERSION)
.PHONY: deb
deb:
	$(Q)set -e; out=$(abspath $(DEBDIR)); \
	tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/sluice-deb.XXXXXX"); \
	trap 'rm -rf "$$tmp"' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM HUP; \
	mkdir "$$tmp/sluice"; \
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard | \
			tar --null --ignore-failed-read -cf - -T -; \
	else \
		tar -cf - --exclude=./.git --exclude='./build*' .; \
	fi | tar -xf - -C "$$tmp/sluice"; \
	cl=$$tmp/sluice/debian/changelog; \
	if [ "$$(dpkg-parsechangelog -l "$$cl" -S Version)" != "$(DEB_VERSION)" ]; then \
		{ printf 'sluice (%s) unstable; urgency=medium\n\n' "$(DEB_VERSION)"; \
		  printf '  * Built by make deb DEB_VERSION=%s.\n\n' "$(DEB_VERSION)"; \
		  printf ' -- %s  %s\n\n' "$$(dpkg-parsechangelog -l "$$cl" -S Maintainer)" \
			"$$(dpkg-parsechangelog -l "$$cl" -S Date)"; \
		  cat "$$cl"; } >"$$tmp/changelog" && mv "$$tmp/changelog" "$$cl"; \
	fi; \
	printf '  %-8s %s\n' DEB "$$out/sluice_$(DEB_VERSION)_$$(dpkg --print-architecture).deb"; \
	if (cd "$$tmp/sluice" && dpkg-buildpackage -us -uc -b -Jauto) >"$$tmp/log" 2>&1; then \
		[ "$(V)" != 1 ] || cat "$$tmp/log"; \
	else \
		st=$$?; if [ "$(V)" = 1 ]; then cat "$$tmp/log"; else tail -n 40 "$$tmp/log"; fi >&2; \
		echo "deb: dpkg-buildpackage failed (exit status $$st; V=1 shows all it said)" >&2; \
		exit 1; \
	fi; \
	mkdir -p "$$out"; cp "$$tmp"/*.deb "$$out/"

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

# What each object includes (the compiler's -MMD lists).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

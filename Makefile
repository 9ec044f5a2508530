# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# dirahead: one entry point.  make | make deps | make check | make lint | make run | make bench | make clean
# Everything generated goes to build/.  SANITIZE=1 builds with ASan+UBSan; CC=clang works too.
# make fuzz [FUZZ_SECONDS=300]: the libFuzzer targets (tests/fuzz/, clang), each for that long.

BUILD    ?= build
CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PREFIX   ?= /usr
VERSION  := 0.1.0

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC \
            -Iinclude -Idaemon/common -I$(BUILD) -DDIRAHEAD_VERSION=\"$(VERSION)\"
LDFLAGS  ?=
ifeq ($(SANITIZE),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

# Debian packages needed to build and test; `make deps` installs whatever is missing.
DEB_DEPS := build-essential clang llvm pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev \
            liburing-dev libfuse3-dev fuse3 libcmocka-dev libsystemd-dev libinih-dev \
            libmicrohttpd-dev libjson-c-dev rsync python3 tar findutils coreutils \
            e2fsprogs xfsprogs btrfs-progs util-linux procps psmisc curl iproute2
# setfacl: a directory an ACL denies a group (tests/security/groups-acl.sh)
DEB_DEPS += acl
# getfattr/setfattr: xattrs read through dirahead_xreaddir() match (tests/integration/xreaddir-slowfs.sh)
DEB_DEPS += attr
# diraheadctl top in a real terminal (tests/integration/ctl-top.sh)
DEB_DEPS += tmux
# packaging tests (tests/integration/pkg-*.sh): man page lint, .deb and .rpm builds
DEB_DEPS += mandoc debhelper lintian rpm
# the unit under a real systemd (tests/integration/systemd-nspawn.sh): a Debian root, booted
DEB_DEPS += debootstrap systemd-container
# the container image (tests/integration/container-run.sh): podman builds and runs it, with runc (crun
# refuses cgroup v1 hosts with a cgroup2 controller); the DaemonSet's YAML (pkg-container.sh)
DEB_DEPS += podman runc python3-yaml
# make bench (tests/bench/): the runner, its chart, the local-filesystem scenarios
DEB_DEPS += gnuplot-nox
# make bench's sshfs scenarios only (not make check: on a systemd host Debian's openssh-server
# starts the system sshd): a private sshd on 127.0.0.1, the ssh client, sshfs, and useradd and
# setpriv for the unprivileged user who mounts it
BENCH_DEB_DEPS := openssh-server openssh-client sshfs passwd

pc = $(shell pkg-config $(1) $(2) 2>/dev/null)

FUSE_CFLAGS := $(call pc,--cflags,fuse3)
FUSE_LIBS   := $(call pc,--libs,fuse3)
URING_LIBS  := $(call pc,--libs,liburing)
BPF_LIBS    := $(call pc,--libs,libbpf)
SD_LIBS     := $(call pc,--libs,libsystemd)
CMOCKA_LIBS := $(call pc,--libs,cmocka)

.PHONY: all deps check lint run bench clean install FORCE
all:

# ---------------------------------------------------------------------------
# common helpers shared by the daemon, diraheadctl and tests (static, not exported)
COMMON_SRCS := $(wildcard daemon/common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)

# ---------------------------------------------------------------------------
# libdirahead: the prefetch engine and dirreadahead()
LIB_SRCS := $(wildcard daemon/lib/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB_SONAME := libdirahead.so.0
LIB_DEPS := $(URING_LIBS) -lpthread

$(BUILD)/libdirahead.a: $(LIB_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
$(BUILD)/libdirahead.so: $(LIB_OBJS) daemon/lib/libdirahead.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=daemon/lib/libdirahead.map \
	    $(LDFLAGS) -o $(BUILD)/$(LIB_SONAME) $(LIB_OBJS) $(LIB_DEPS)
	ln -sf $(LIB_SONAME) $@
ifneq ($(LIB_SRCS),)
all: $(BUILD)/libdirahead.a $(BUILD)/libdirahead.so
endif

# ---------------------------------------------------------------------------
# BPF: bpf/*.bpf.c -> build/bpf/*.bpf.o -> build/*.skel.h (CO-RE against build/vmlinux.h)
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(wildcard include/*.h) $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	    -Iinclude -Ibpf -I$(BUILD) -c $< -o $@
$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
# Keep the objects: they are what `bpftool prog load`/inspection wants, and make would delete them.
.SECONDARY: $(BPF_OBJS)
ifneq ($(BPF_SRCS),)
all: $(BPF_SKELS)
endif

# ---------------------------------------------------------------------------
# diraheadd
DAEMON_SRCS := $(wildcard daemon/diraheadd/*.c)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
$(DAEMON_OBJS): $(BPF_SKELS)
$(BUILD)/diraheadd: $(DAEMON_OBJS) $(COMMON_OBJS) $(BUILD)/libdirahead.a
	$(CC) $(LDFLAGS) -o $@ $^ $(BPF_LIBS) $(SD_LIBS) -linih -lmicrohttpd -ljson-c $(LIB_DEPS)
ifneq ($(wildcard daemon/diraheadd/diraheadd.c),)
all: $(BUILD)/diraheadd
endif

# The detector's trace harness (tests/bpf/): the detector alone, one line per event.
# The openers run on libdirahead's worker pool (daemon/lib/pool.h, in libdirahead.a, not exported).
$(BUILD)/daemon/diraheadd/opener.o: CFLAGS += -Idaemon/lib
DETECTOR_OBJ := $(BUILD)/daemon/diraheadd/detector.o
$(BUILD)/tests/bpf/detector-trace.o: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/bpf/detector-trace.o: daemon/diraheadd/detector.h
$(DETECTOR_OBJ): daemon/diraheadd/detector.h
$(BUILD)/tests/detector-trace: $(BUILD)/tests/bpf/detector-trace.o $(DETECTOR_OBJ)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(BPF_LIBS)
ifneq ($(wildcard daemon/diraheadd/detector.c),)
tests: $(BUILD)/tests/detector-trace
endif

# ---------------------------------------------------------------------------
# diraheadctl
CTL_SRCS := $(wildcard daemon/diraheadctl/*.c)
CTL_OBJS := $(CTL_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/diraheadctl: $(CTL_OBJS) $(COMMON_OBJS) $(BUILD)/libdirahead.a
	$(CC) $(LDFLAGS) -o $@ $^ -ljson-c $(LIB_DEPS)
ifneq ($(CTL_SRCS),)
all: $(BUILD)/diraheadctl
endif

# ---------------------------------------------------------------------------
# slowfs: the FUSE test filesystem (tests/slowfs/) and its control client
SLOWFS_SRCS := $(filter-out tests/slowfs/slowfsctl.c,$(wildcard tests/slowfs/*.c))
SLOWFS_OBJS := $(SLOWFS_SRCS:%.c=$(BUILD)/%.o)
$(SLOWFS_OBJS): CFLAGS += $(FUSE_CFLAGS)
$(SLOWFS_OBJS): $(wildcard tests/slowfs/*.h)
$(BUILD)/slowfs: $(SLOWFS_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUSE_LIBS) -lpthread
$(BUILD)/slowfsctl: $(BUILD)/tests/slowfs/slowfsctl.o
	$(CC) $(LDFLAGS) -o $@ $^
ifneq ($(SLOWFS_SRCS),)
all: $(BUILD)/slowfs
endif
ifneq ($(wildcard tests/slowfs/slowfsctl.c),)
all: $(BUILD)/slowfsctl
endif

# ---------------------------------------------------------------------------
# tests: cmocka unit tests (tests/unit/test_*.c, one binary each) and helper programs
# (tests/tools/*.c); both link libdirahead and the common helpers.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
TOOL_SRCS  := $(wildcard tests/tools/*.c)
TOOL_BINS  := $(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tests/tools/%)

$(BUILD)/tests/unit/%: tests/unit/%.c $(COMMON_OBJS) $(if $(LIB_SRCS),$(BUILD)/libdirahead.a)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LIB_DEPS)
# The cost model is pure bookkeeping: its unit test links policy.o alone.
$(BUILD)/tests/unit/test_policy: $(BUILD)/daemon/diraheadd/policy.o
$(BUILD)/tests/unit/test_policy: CFLAGS += -Idaemon/diraheadd
# ... and so does the time saved estimate's.
$(BUILD)/tests/unit/test_saved: $(BUILD)/daemon/diraheadd/policy.o
$(BUILD)/tests/unit/test_saved: CFLAGS += -Idaemon/diraheadd
# The pay-off rule and its control stretch, over the cost model (judge.o logs at debug).
$(BUILD)/tests/unit/test_judge: $(addprefix $(BUILD)/daemon/diraheadd/,judge.o policy.o fsknow.o log.o)
$(BUILD)/tests/unit/test_judge: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_judge: LIB_DEPS += $(SD_LIBS)
# Arming's decisions (arm.h) and the verdicts they read.
$(BUILD)/tests/unit/test_arm: $(BUILD)/daemon/diraheadd/policy.o
$(BUILD)/tests/unit/test_arm: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_fsknow: $(BUILD)/daemon/diraheadd/fsknow.o
$(BUILD)/tests/unit/test_fsknow: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_order: $(BUILD)/daemon/diraheadd/order.o
$(BUILD)/tests/unit/test_order: CFLAGS += -Idaemon/diraheadd
# Log escaping is a pure function too (log.o needs only libsystemd).
$(BUILD)/tests/unit/test_log: $(BUILD)/daemon/diraheadd/log.o
$(BUILD)/tests/unit/test_log: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_log: LIB_DEPS += $(SD_LIBS)
# The periodic summary line, from two snapshots of the counters.
$(BUILD)/tests/unit/test_stats: $(BUILD)/daemon/diraheadd/stats.o
$(BUILD)/tests/unit/test_stats: CFLAGS += -Idaemon/diraheadd
# The metrics endpoint's Host check.
$(BUILD)/tests/unit/test_hostcheck: $(BUILD)/daemon/diraheadd/hostcheck.o
$(BUILD)/tests/unit/test_hostcheck: CFLAGS += -Idaemon/diraheadd
# The openers' admission and stuck accounting, with jobs that block on a pipe.
$(BUILD)/tests/unit/test_opener: $(BUILD)/daemon/diraheadd/opener.o
$(BUILD)/tests/unit/test_opener: CFLAGS += -Idaemon/diraheadd
# (and the pool it runs on: libdirahead.a again, after opener.o on the command line)
$(BUILD)/tests/unit/test_opener: LIB_DEPS += $(BUILD)/libdirahead.a $(SD_LIBS)
# The decision log's words and ring (it reads the cost model's figures, logs at info).
$(BUILD)/tests/unit/test_decisions: $(BUILD)/daemon/diraheadd/decisions.o $(BUILD)/daemon/diraheadd/policy.o \
                                    $(BUILD)/daemon/diraheadd/log.o
$(BUILD)/tests/unit/test_decisions: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_decisions: LIB_DEPS += $(SD_LIBS)
# Who is on the other end of a socket (the metrics endpoint's limits and access).
$(BUILD)/tests/unit/test_peer: $(BUILD)/daemon/diraheadd/peer.o
$(BUILD)/tests/unit/test_peer: CFLAGS += -Idaemon/diraheadd
# Memory across restarts: the state file's format, its save and restore, over the policy.
$(BUILD)/tests/unit/test_budget: $(addprefix $(BUILD)/daemon/diraheadd/,budget.o persist_format.o policy.o)
$(BUILD)/tests/unit/test_budget: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_budget: LIB_DEPS += -ljson-c

$(BUILD)/tests/unit/test_persist: $(addprefix $(BUILD)/daemon/diraheadd/,persist.o persist_format.o policy.o log.o)
$(BUILD)/tests/unit/test_persist: CFLAGS += -Idaemon/diraheadd
$(BUILD)/tests/unit/test_persist: LIB_DEPS += $(SD_LIBS) -ljson-c
$(BUILD)/tests/tools/%: tests/tools/%.c $(COMMON_OBJS) $(if $(LIB_SRCS),$(BUILD)/libdirahead.a)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIB_DEPS)

# statnames runs in a chroot that holds nothing else: static, and nothing of ours linked in
# (nor the sanitizers, which cannot link statically).
$(BUILD)/tests/tools/statnames: tests/tools/statnames.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) -static -o $@ $<

tests: $(UNIT_BINS) $(TOOL_BINS)
.PHONY: tests

# ---------------------------------------------------------------------------
# fuzz targets (tests/fuzz/fuzz_*.c, libFuzzer): always built with clang, whatever CC is, with
# coverage and ASan+UBSan, from objects of their own in $(BUILD)/fuzz/obj/; the daemon's parts
# they reach come from an archive, so only those are linked (snapshot.c stands in for the rest).
# make check builds them and runs each briefly (tests/security/fuzz.sh); make fuzz, longer.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 300
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $(FUZZ_SAN) \
                -fsanitize=fuzzer-no-link -Iinclude -Idaemon/common -Idaemon/diraheadd -Itests/fuzz \
                -I$(BUILD) -DDIRAHEAD_VERSION=\"$(VERSION)\"
FUZZ_DAEMON  := config budget hostcheck control httpd peer metrics stats statsview fsmagic policy log decisions \
                persist_format
FUZZ_LIB_OBJS := $(FUZZ_DAEMON:%=$(BUILD)/fuzz/obj/daemon/diraheadd/%.o) \
                 $(COMMON_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)
$(BUILD)/fuzz/obj/%.o: %.c $(wildcard include/*.h) $(wildcard daemon/common/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/libdiraheadd-fuzz.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o $(BUILD)/fuzz/obj/tests/fuzz/snapshot.o \
                      $(BUILD)/fuzz/libdiraheadd-fuzz.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -linih -lmicrohttpd -ljson-c $(SD_LIBS) -lm
.SECONDARY: $(FUZZ_SRCS:%.c=$(BUILD)/fuzz/obj/%.o) $(BUILD)/fuzz/obj/tests/fuzz/snapshot.o
fuzz-build: $(FUZZ_BINS)
tests: fuzz-build
fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) BUILD=$(BUILD) tests/security/fuzz.sh
.PHONY: fuzz fuzz-build

# promtool, Prometheus's exposition checker, for tests/integration/metrics-scrape.sh: extracted
# from Debian's prometheus package, not installed, since that package's postinst would start a
# Prometheus server.
PROMTOOL := $(BUILD)/tools/promtool
$(PROMTOOL):
	@mkdir -p $(@D)/prometheus-deb
	cd $(@D)/prometheus-deb && rm -f prometheus_*.deb && { apt-get download -qq prometheus || \
	    { apt-get update -qq && apt-get download -qq prometheus; }; }
	dpkg-deb --fsys-tarfile $(@D)/prometheus-deb/prometheus_*.deb | tar -xOf - ./usr/bin/promtool > $@.tmp
	chmod 0755 $@.tmp && mv $@.tmp $@ && rm -rf $(@D)/prometheus-deb
tests: $(PROMTOOL)

# ---------------------------------------------------------------------------
# -MMD: each object also depends on every header it includes (a struct changed in one header
# rebuilds all its users, never a mix of layouts).
$(BUILD)/%.o: %.c $(wildcard include/*.h) $(wildcard daemon/common/*.h) $(wildcard daemon/lib/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
-include $(shell find $(BUILD)/daemon $(BUILD)/tests $(BUILD)/fuzz -name '*.d' -type f 2>/dev/null)

deps:
	@missing=$$(for p in $(DEB_DEPS) $(EXTRA_DEB_DEPS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    if [ ! -d /var/lib/apt/lists ] || [ -z "$$(ls /var/lib/apt/lists/*_Packages* 2>/dev/null)" ] \
	       || ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null 2>&1; then \
	        apt-get update -qq && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	    fi; \
	else echo "deps: all installed"; fi

check: deps
	$(MAKE) all tests
	tests/run-tests.sh

# make lint: the static checks of the code alone (tests/lint/: function length, void returns);
# make check runs them with the rest.
lint: all
	BUILD=$(BUILD) CC=$(CC) tests/run-tests.sh tests/lint/

run: deps
	$(MAKE) all
	$(BUILD)/diraheadd --config $(or $(CONFIG),/etc/dirahead/dirahead.conf)

# make bench [QUICK=1]: tests/bench/bench.py.  A full run writes tests/bench/results/latest.*
# (committed); QUICK=1 writes $(BUILD)/bench/ so it never overwrites them.
BENCH_TOOLS := $(BUILD)/tests/bench/fstatat-loop $(BUILD)/tests/bench/pingpong
$(BUILD)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<
# dirahead_xreaddir() against a getdents64 + fstatat loop (tests/bench/xreaddir.sh)
BENCH_TOOLS += $(BUILD)/tests/bench/xreaddir-bench
$(BUILD)/tests/bench/xreaddir-bench: tests/bench/xreaddir-bench.c $(BUILD)/libdirahead.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LIB_DEPS)
$(BENCH_TOOLS): tests/bench/benchutil.h
bench: EXTRA_DEB_DEPS = $(BENCH_DEB_DEPS)
bench: deps
	$(MAKE) all $(BENCH_TOOLS)
	python3 tests/bench/bench.py --build $(BUILD) $(if $(QUICK),--quick)
	BUILD=$(BUILD) QUICK=$(QUICK) tests/bench/xreaddir.sh

clean:
	rm -rf $(BUILD)

# ---------------------------------------------------------------------------
# install / uninstall: make install DESTDIR=... PREFIX=...  (the .deb and .rpm builds use it too).
# Installs what a package ships, building only that (not slowfs or the tests, whose libraries a
# package build does not have).  The config path and the socket path are compiled into the daemon,
# so /etc/dirahead stays /etc whatever PREFIX is.
SBINDIR      ?= $(PREFIX)/sbin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CONFDIR      := /etc/dirahead
UNITDIR      ?= $(or $(call pc,--variable=systemdsystemunitdir,systemd),/lib/systemd/system)
LIB_REALNAME := libdirahead.so.$(VERSION)
INSTALL      ?= install
INSTALL_BINS := $(BUILD)/diraheadd $(BUILD)/diraheadctl $(BUILD)/libdirahead.so $(BUILD)/libdirahead.a
MAN_PAGES    := $(wildcard packaging/man/*.[1-8])

.PHONY: install uninstall install-bins deb rpm
install-bins: $(INSTALL_BINS)

install: $(INSTALL_BINS)
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(CONFDIR) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man,$(sort $(subst .,,$(suffix $(MAN_PAGES)))))
	$(INSTALL) -m 0755 $(BUILD)/diraheadd $(BUILD)/diraheadctl $(DESTDIR)$(SBINDIR)/
	$(INSTALL) -m 0644 $(BUILD)/$(LIB_SONAME) $(DESTDIR)$(LIBDIR)/$(LIB_REALNAME)
	ln -sfn $(LIB_REALNAME) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sfn $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libdirahead.so
	$(INSTALL) -m 0644 $(BUILD)/libdirahead.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0644 include/dirahead.h $(DESTDIR)$(INCLUDEDIR)/
	@# paths below PREFIX are written relative to $${prefix}, so --define-variable=prefix= relocates
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
	    -e 's|@VERSION@|$(VERSION)|' packaging/dirahead.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/dirahead.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/dirahead.pc
	sed -e 's|/usr/sbin/diraheadd|$(SBINDIR)/diraheadd|g' packaging/systemd/dirahead.service \
	    > $(DESTDIR)$(UNITDIR)/dirahead.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/dirahead.service
	@# never overwrite a configuration the administrator may have edited
	if [ -e $(DESTDIR)$(CONFDIR)/dirahead.conf ]; then \
	    echo "keeping $(DESTDIR)$(CONFDIR)/dirahead.conf (the shipped one is packaging/dirahead.conf)"; \
	else $(INSTALL) -m 0644 packaging/dirahead.conf $(DESTDIR)$(CONFDIR)/dirahead.conf; fi
	for m in $(MAN_PAGES); do \
	    s=$${m##*.}; $(INSTALL) -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/diraheadd $(DESTDIR)$(SBINDIR)/diraheadctl \
	    $(DESTDIR)$(LIBDIR)/$(LIB_REALNAME) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
	    $(DESTDIR)$(LIBDIR)/libdirahead.so $(DESTDIR)$(LIBDIR)/libdirahead.a \
	    $(DESTDIR)$(INCLUDEDIR)/dirahead.h $(DESTDIR)$(PKGCONFIGDIR)/dirahead.pc \
	    $(DESTDIR)$(UNITDIR)/dirahead.service \
	    $(foreach m,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	@# the configuration goes only if nobody changed it
	if cmp -s packaging/dirahead.conf $(DESTDIR)$(CONFDIR)/dirahead.conf; then \
	    rm -f $(DESTDIR)$(CONFDIR)/dirahead.conf; rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(CONFDIR)/dirahead.conf ]; then \
	    echo "keeping the modified $(DESTDIR)$(CONFDIR)/dirahead.conf"; fi

# ---------------------------------------------------------------------------
# Packages.  Both build from a copy of the tree (without build/, build-*/ and .git) in a scratch
# directory, so the working tree and its build/ are never touched; the results land in build/deb,
# build/rpm.  (A build directory may hold the systemd-nspawn test's 160 MB Debian root.)
# The outer make's variables (BUILD=, DESTDIR=, -j) must not leak into the package's own make.
PKG_SCRATCH := $(BUILD)/pkg-scratch
PKG_ENV     := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u DESTDIR -u BUILD
define pkg_copy_tree
	rm -rf $(PKG_SCRATCH) && mkdir -p $(PKG_SCRATCH)/dirahead-$(VERSION)
	tar -cf - --exclude=./.git --exclude=./build --exclude='./build-*' --exclude=./$(BUILD) . \
	    | tar -xf - -C $(PKG_SCRATCH)/dirahead-$(VERSION)
endef

deb:
	$(pkg_copy_tree)
	cp -r packaging/debian $(PKG_SCRATCH)/dirahead-$(VERSION)/debian
	cd $(PKG_SCRATCH)/dirahead-$(VERSION) && $(PKG_ENV) DEB_BUILD_OPTIONS="nocheck parallel=2" \
	    dpkg-buildpackage -b -us -uc -Pnocheck
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	mv $(PKG_SCRATCH)/*.deb $(PKG_SCRATCH)/*.changes $(PKG_SCRATCH)/*.buildinfo $(BUILD)/deb/
	rm -rf $(PKG_SCRATCH)
	if command -v lintian >/dev/null; then lintian --fail-on error $(BUILD)/deb/*.changes; fi

rpm:
	$(pkg_copy_tree)
	mkdir -p $(PKG_SCRATCH)/SOURCES
	tar -czf $(PKG_SCRATCH)/SOURCES/dirahead-$(VERSION).tar.gz -C $(PKG_SCRATCH) dirahead-$(VERSION)
	@# --nodeps: a Debian host has no rpm database to check BuildRequires against
	$(PKG_ENV) rpmbuild -bb --nodeps --define "_topdir $(abspath $(PKG_SCRATCH))" \
	    --define "_rpmdir $(abspath $(BUILD)/rpm)" packaging/rpm/dirahead.spec
	rm -rf $(PKG_SCRATCH)

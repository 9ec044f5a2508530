# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# dirahead: one entry point.  make | make deps | make check | make run | make bench | make clean
# Everything generated goes to build/.  SANITIZE=1 builds with ASan+UBSan; CC=clang works too.

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
            e2fsprogs xfsprogs util-linux procps psmisc

pc = $(shell pkg-config $(1) $(2) 2>/dev/null)

FUSE_CFLAGS := $(call pc,--cflags,fuse3)
FUSE_LIBS   := $(call pc,--libs,fuse3)
URING_LIBS  := $(call pc,--libs,liburing)
BPF_LIBS    := $(call pc,--libs,libbpf)
SD_LIBS     := $(call pc,--libs,libsystemd)
CMOCKA_LIBS := $(call pc,--libs,cmocka)

.PHONY: all deps check run bench clean install FORCE
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

# ---------------------------------------------------------------------------
# diraheadd
DAEMON_SRCS := $(wildcard daemon/diraheadd/*.c)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
$(DAEMON_OBJS): $(BPF_SKELS)
$(BUILD)/diraheadd: $(DAEMON_OBJS) $(COMMON_OBJS) $(BUILD)/libdirahead.a
	$(CC) $(LDFLAGS) -o $@ $^ $(BPF_LIBS) $(SD_LIBS) -linih -lmicrohttpd -ljson-c $(LIB_DEPS)
ifneq ($(DAEMON_SRCS),)
all: $(BUILD)/diraheadd
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
$(BUILD)/tests/tools/%: tests/tools/%.c $(COMMON_OBJS) $(if $(LIB_SRCS),$(BUILD)/libdirahead.a)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIB_DEPS)

tests: $(UNIT_BINS) $(TOOL_BINS)
.PHONY: tests

# ---------------------------------------------------------------------------
$(BUILD)/%.o: %.c $(wildcard include/*.h) $(wildcard daemon/common/*.h) $(wildcard daemon/lib/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

deps:
	@missing=$$(for p in $(DEB_DEPS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
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

run: deps
	$(MAKE) all
	$(BUILD)/diraheadd --foreground

bench: deps
	$(MAKE) all tests
	tests/bench/run.sh $(if $(QUICK),--quick)

clean:
	rm -rf $(BUILD)

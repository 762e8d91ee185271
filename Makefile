# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
# make ARCH=arm64 cross-builds build-arm64/ with Debian's cross compiler
# and the arm64 -dev packages (scripts/install-deps.sh --arm64). The BPF
# objects come from vmlinux/ARCH/vmlinux.h (scripts/gen-vmlinux.sh).
ARCH ?= x86
override ARCH := $(patsubst x86_64,x86,$(patsubst amd64,x86,$(patsubst aarch64,arm64,$(ARCH))))
ifeq ($(ARCH),arm64)
CC := aarch64-linux-gnu-gcc
OUT ?= build-arm64
else ifeq ($(ARCH),x86)
OUT ?= build
else
$(error ARCH is x86 (the default) or arm64, not $(ARCH))
endif
# One spelling of the build directory, whichever OUT= gave: a .d file
# names its targets as that build's OUT did, and a build that spelt it
# the other way never matched them, so make ARCH=arm64 after the VM
# suite's OUT=$PWD/build-arm64 linked BPF objects older than jt_abi.h.
override OUT := $(abspath $(OUT))
# make build/jittrace, as the tree spells it, still names these targets.
OUT_IN_TREE := $(patsubst $(CURDIR)/%,%,$(OUT))
ifneq ($(OUT_IN_TREE),$(OUT))
$(OUT_IN_TREE)/%: $(OUT)/% ;
endif

# CFLAGS, LDFLAGS and LDLIBS are the user's (make CFLAGS=-O0): they add to
# the project's own flags, kept apart in JT_*, never replace them.
CFLAGS ?= -O2 -g
JT_CFLAGS := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	  -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -I$(OUT) -MMD -MP
JT_LDLIBS := -lbpf -ldw -lelf -lz -lprotobuf-c -lpthread -lstdc++
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) \
	      -Iinclude -Wall -Wno-unused-function -MMD -MP
# CI (CI=true) builds with warnings as errors; a user's newer compiler
# with new warnings still builds.
ifneq ($(CI),)
JT_CFLAGS += -Werror
BPF_CFLAGS += -Werror
endif
# A failed recipe leaves no half-written target behind.
.DELETE_ON_ERROR:

# Linked into one object and one skeleton. Apart: tier_probe, loaded once
# per kernel function a tier is probed on, and exec_snap, whose kfuncs
# older kernels lack (libbpf resolves an object's kfuncs all at once).
BPF_SRCS := bpf/maps.bpf.c bpf/proc.bpf.c bpf/perfmap.bpf.c bpf/cow.bpf.c \
	    bpf/kmaps.bpf.c bpf/kcow.bpf.c
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
# The same programs and maps for kernels before 5.17 (no bpf_loop,
# bpf_find_vma, ...): built with JT_LEGACY, loaded through the same
# skeleton in place of the object above (record/probes.c).
LEGACY_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/legacy/%.bpf.o,$(BPF_SRCS) \
		bpf/legacy.bpf.c)
SKELS := $(OUT)/jittrace.skel.h $(OUT)/tier_probe.skel.h \
	 $(OUT)/exec_snap.skel.h $(OUT)/jittrace_legacy.skel.h
LIB_SRCS := $(wildcard user/lib/*.c) $(wildcard user/model/*.c) \
	    $(wildcard user/unwind/*.c)
APP_SRCS := user/jittrace.c $(wildcard user/record/*.c) \
	    $(wildcard user/views/*.c) $(wildcard user/live/*.c) \
	    $(wildcard user/agent/*.c)
LIB_OBJS := $(patsubst %.c,$(OUT)/%.o,$(LIB_SRCS))
# Encoders: pprof's C comes from its .proto at build time (protoc-c).
GEN := $(OUT)/gen
EXPORT_SRCS := $(wildcard user/export/*.c)
EXPORT_OBJS := $(patsubst %.c,$(OUT)/%.o,$(EXPORT_SRCS)) $(GEN)/profile.pb-c.o
APP_OBJS := $(patsubst %.c,$(OUT)/%.o,$(APP_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
BENCH_TOOLS := $(OUT)/bench/hookfloor
WORKLOADS := $(patsubst tests/workloads/%.c,$(OUT)/workloads/%,$(WORKLOAD_SRCS)) \
	     $(OUT)/workloads/libjtcow.so $(OUT)/workloads/libjtdata.so

.PHONY: all program man completion deb test test-unit test-e2e test-vm demo bench \
	fuzz install clean format FORCE
# The JVMTI agent (jvmti/) builds against a JDK's jvmti.h.
JDK_INCLUDE ?= $(firstword $(wildcard /usr/lib/jvm/default-java/include \
		/usr/lib/jvm/java-17-openjdk-amd64/include /usr/lib/jvm/*/include))
JVMTI_SO := $(OUT)/lib/jittrace/libjittrace-jvmti.so

all: $(OUT)/jittrace $(JVMTI_SO) $(WORKLOADS) $(BENCH_TOOLS)

# What make install and the Debian package ship. Man pages and
# completions come from the binary's own option tables (jittrace __cli),
# so a cross build (ARCH=arm64) has none.
MAN_SRCS := $(wildcard docs/man/*.scd)
MAN_PAGES := $(patsubst docs/man/%.scd,$(OUT)/man/%,$(MAN_SRCS))
COMPLETIONS := $(OUT)/completion/jittrace $(OUT)/completion/_jittrace
SYSTEMD_UNIT_DIR ?= $(if $(filter /usr,$(PREFIX)),/lib,$(PREFIX)/lib)/systemd/system
program: $(OUT)/jittrace $(JVMTI_SO) man completion
man: $(MAN_PAGES)
completion: $(COMPLETIONS)

$(OUT)/man/%: docs/man/%.scd scripts/man.sh $(OUT)/jittrace
	@mkdir -p $(@D)
	sh scripts/man.sh $(OUT)/jittrace $< $@

$(OUT)/completion/jittrace: $(OUT)/jittrace
	@mkdir -p $(@D)
	$(OUT)/jittrace __cli bash > $@

$(OUT)/completion/_jittrace: $(OUT)/jittrace
	@mkdir -p $(@D)
	$(OUT)/jittrace __cli zsh > $@

# A Debian package (debian/, debhelper) built from a copy of the tree's
# files in $(OUT)/deb, then checked by lintian. In an environment of its
# own: this make's OUT=, CFLAGS= and the rest reach debian/rules through
# the environment and MAKEFLAGS, and the package took this build's
# objects, made without dh's flags.
deb:
	rm -rf $(OUT)/deb && mkdir -p $(OUT)/deb/src
	git ls-files -z --cached --others --exclude-standard | \
		(cd $(CURDIR) && xargs -0 tar -c --no-recursion) | \
		tar -x -i -C $(OUT)/deb/src
	cd $(OUT)/deb/src && env -i PATH="$$PATH" HOME="$$HOME" \
		DEB_BUILD_OPTIONS="parallel=$$(nproc) nocheck" \
		dpkg-buildpackage -b -us -uc
	lintian --fail-on error --info \
		$(OUT)/deb/*.changes

$(JVMTI_SO): jvmti/jittrace_jvmti.c include/jt_jitdump.h
	@mkdir -p $(@D)
	@test -n "$(JDK_INCLUDE)" || { echo "no JDK headers (jvmti.h): apt-get install openjdk-17-jdk-headless" >&2; exit 1; }
	$(CC) $(filter-out -MMD -MP,$(JT_CFLAGS)) $(CPPFLAGS) $(CFLAGS) -fPIC \
		-shared -I$(JDK_INCLUDE) -I$(JDK_INCLUDE)/linux $(LDFLAGS) -o $@ $< \
		-lpthread

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bpf/legacy/%.bpf.o: bpf/%.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -DJT_LEGACY -c $< -o $@

$(OUT)/jittrace.bpf.o: $(BPF_OBJS)
	$(BPFTOOL) gen object $@ $^

$(OUT)/jittrace_legacy.bpf.o: $(LEGACY_OBJS)
	$(BPFTOOL) gen object $@ $^

$(OUT)/jittrace.skel.h: $(OUT)/jittrace.bpf.o
	$(BPFTOOL) gen skeleton $< name jittrace_bpf > $@

$(OUT)/jittrace_legacy.skel.h: $(OUT)/jittrace_legacy.bpf.o
	$(BPFTOOL) gen skeleton $< name jittrace_legacy_bpf > $@

$(OUT)/tier_probe.skel.h: $(OUT)/bpf/tier_probe.bpf.o
	$(BPFTOOL) gen skeleton $< name tier_probe_bpf > $@

$(OUT)/exec_snap.skel.h: $(OUT)/bpf/exec_snap.bpf.o
	$(BPFTOOL) gen skeleton $< name exec_snap_bpf > $@

# The bench's floor: bare hooks on the mmap loop (tests/bench/hookfloor.c).
$(OUT)/bench/hookfloor.bpf.o: tests/bench/hookfloor.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bench/hookfloor.skel.h: $(OUT)/bench/hookfloor.bpf.o
	$(BPFTOOL) gen skeleton $< name hookfloor_bpf > $@

$(OUT)/bench/hookfloor: tests/bench/hookfloor.c $(OUT)/bench/hookfloor.skel.h
	$(CC) $(JT_CFLAGS) -I$(OUT)/bench $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< \
		-lbpf -lelf -lz $(LDLIBS)

$(GEN)/profile.pb-c.c: third_party/pprof/profile.proto
	@mkdir -p $(@D)
	protoc-c --proto_path=third_party/pprof --c_out=$(GEN) profile.proto

$(GEN)/profile.pb-c.h: $(GEN)/profile.pb-c.c

# jittrace html's script and style, compiled in as C strings.
HTML_ASSETS := user/views/html/page.css user/views/html/page.js
$(GEN)/html_assets.h: $(HTML_ASSETS)
	@mkdir -p $(@D)
	@for f in $^; do \
		n=jt_page_$${f##*.}; \
		echo "static const char $$n[] = {"; \
		od -An -v -tx1 $$f | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
		echo "0 };"; \
	done > $@
$(OUT)/user/views/html.o: $(GEN)/html_assets.h

$(GEN)/profile.pb-c.o: $(GEN)/profile.pb-c.c
	$(CC) $(filter-out -Werror,$(JT_CFLAGS)) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The version --version prints: git's description when built from git.
# Rewritten only when it changes, so a build does not start over for it.
$(OUT)/version.h: FORCE
	@mkdir -p $(@D)
	@v="#define JT_VERSION \"$${JT_VERSION:-$$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}\""; \
	 [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
FORCE:
$(OUT)/user/jittrace.o: $(OUT)/version.h

# Generated headers exist before any .d file can name them.
$(APP_OBJS): $(SKELS) $(GEN)/profile.pb-c.h
$(EXPORT_OBJS): $(GEN)/profile.pb-c.h
$(OUT)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(JT_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The agent opens libcurl and libmicrohttpd itself (agent/netlibs.c), by
# the SONAMEs of the libraries it is compiled against.
soname = $(shell readelf -d $$($(CC) -print-file-name=lib$(1).so) 2>/dev/null | \
	 sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
sonamed = $(if $(2),-D$(1)='"$(2)"')
$(OUT)/user/agent/netlibs.o: JT_CFLAGS += \
	$(call sonamed,JT_CURL_SONAME,$(call soname,curl)) \
	$(call sonamed,JT_MHD_SONAME,$(call soname,microhttpd))

$(OUT)/jittrace: $(APP_OBJS) $(LIB_OBJS) $(EXPORT_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(JT_LDLIBS) $(LDLIBS)

$(OUT)/tests/%: tests/unit/%.c $(LIB_OBJS) $(EXPORT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(JT_CFLAGS) $(CFLAGS) -o $@ $^ $(JT_LDLIBS) $(LDLIBS) -lcmocka

# report's row order and counts are a view's, tested on their own.
$(OUT)/tests/test_report_rows: $(OUT)/user/views/report_rows.o
$(OUT)/tests/test_report_groups: $(OUT)/user/views/report_groups.o
$(OUT)/tests/test_print_blocks: $(OUT)/user/views/print_blocks.o
# The lanes' reader, on lanes in plain memory.
$(OUT)/tests/test_lanes: $(OUT)/user/record/lanes.o
$(OUT)/tests/test_localfs: $(OUT)/user/record/localfs.o
# The JIT files' change watches, on files of its own.
$(OUT)/tests/test_filewatch: $(OUT)/user/record/filewatch.o

$(OUT)/workloads/lib%.so: tests/workloads/lib/%.c
	@mkdir -p $(@D)
	$(CC) -O1 -g -shared -fPIC -o $@ $<

# A known call chain with no frame pointers, as Debian builds C.
$(OUT)/workloads/nofp: tests/workloads/nofp.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -Wall -o $@ $<

$(OUT)/workloads/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(CC) -O1 -g -fno-omit-frame-pointer -Wall -o $@ $< -lpthread -ldl

# test, demo and bench set up a fresh machine (apt-get) before they
# build; a plain build never installs anything.
test:
	@sh scripts/install-deps.sh --test
	@$(MAKE) --no-print-directory all $(UNIT_BINS) $(FUZZ_BINS)
	@sh tests/run.sh $(OUT)

test-unit: $(UNIT_BINS)
	@sh tests/run.sh $(OUT) unit

test-e2e: all
	@sh tests/run.sh $(OUT) e2e

test-vm: all
	@sh tests/run.sh $(OUT) vm

demo:
	@sh scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@sh scripts/demo.sh $(OUT)

# BENCH_REPORT="FUNCTIONS SECONDS FREQ BUDGET" sizes the naming benchmark.
BENCH_REPORT ?= 200000 20 50000 300
# Seconds per scenario of the agent's cost against perf record -a.
AGENT_BENCH_SECS ?= 60
# How long the recorder-memory run lasts (the issue asks for 600).
RECORD_MEMORY_SECS ?= 120
bench:
	@sh scripts/install-deps.sh --test
	@$(MAKE) --no-print-directory all
	@sh tests/bench/bench.sh $(OUT)
	@python3 tests/bench/bpf_stats.py $(OUT)
	@for m in empty clock ring batch lane lookup lock-empty lock-lane; do python3 tests/bench/bpf_stats.py $(OUT) 2.5 \
		-- $(OUT)/bench/hookfloor $$m -- $(OUT)/workloads/mmloop callsfor 5; done
	@python3 tests/bench/bench_capture.py $(OUT)
	@python3 tests/bench/bench_perfmap_writes.py $(OUT)
	@python3 tests/bench/bench_agent.py $(OUT) $(AGENT_BENCH_SECS)
	@python3 tests/bench/bench_report.py $(OUT) $(BENCH_REPORT)
	@python3 tests/bench/bench_model.py $(OUT)
	@sh tests/bench/record_memory.sh $(OUT) $(RECORD_MEMORY_SECS) 30
	@sh tests/vm/bench.sh $(OUT)

# Recordings are untrusted input: fuzz everything that reads one.
FUZZ_SECONDS ?= 60
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
# audit -p, reached from the audit view, reads /proc of live processes.
$(OUT)/fuzz/fuzz_views: $(wildcard user/views/*.c) user/live/audit_live.c \
	$(EXPORT_SRCS) $(GEN)/profile.pb-c.c
$(OUT)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS)
	@mkdir -p $(@D)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -std=gnu11 \
		-D_GNU_SOURCE -Iinclude -Iuser -I$(OUT) -o $@ $^ -ldw -lelf -lz \
		-lprotobuf-c -lstdc++

fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do \
		mkdir -p $(OUT)/corpus/$$(basename $$f); \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -close_fd_mask=3 \
			-artifact_prefix=$(OUT)/fuzz/ \
			$(OUT)/corpus/$$(basename $$f) tests/fuzz/seeds || exit 1; \
	done

# The unit is installed, never enabled: that is the administrator's call.
# It names the installed binary, so it is written for this PREFIX here:
# a copy made in OUT kept the PREFIX of whichever install came first.
install: program
	install -D -m 0755 $(OUT)/jittrace $(DESTDIR)$(PREFIX)/bin/jittrace
	install -D -m 0644 $(JVMTI_SO) \
		$(DESTDIR)$(PREFIX)/lib/jittrace/libjittrace-jvmti.so
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 $(OUT)/completion/jittrace \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/jittrace
	install -D -m 0644 $(OUT)/completion/_jittrace \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_jittrace
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	sed 's|/usr/local/bin/jittrace|$(PREFIX)/bin/jittrace|' \
		packaging/systemd/jittrace-agent.service \
		> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/jittrace-agent.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/jittrace-agent.service

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v vmlinux)

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -path $(OUT)/vm -prune -o -name '*.d' -type f -print 2>/dev/null)

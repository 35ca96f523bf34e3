# trainctl build. `make` builds into build/, `make test` runs every test,
# `make check` runs them under ASan+UBSan in build/check/ plus the format check.

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc

# `make deps` installs the Debian packages that the build, the tests and the
# demo need (scripts/deps.sh). The README's goals, `make test` and `make
# demo`, and `make check` and `make bench` run it first, before pkg-config is
# asked for flags, so a fresh machine needs nothing else. Every other goal
# only builds: it installs nothing, and when a package the build needs is
# missing it stops at once, naming it (scripts/build-deps.sh).
INSTALL_GOALS := deps test demo check bench
ifneq ($(filter $(INSTALL_GOALS),$(MAKECMDGOALS)),)
DEPS_RC := $(shell ./scripts/deps.sh -q >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error scripts/deps.sh failed: install the packages it names and retry)
endif
else ifeq ($(filter clean format format-check,$(MAKECMDGOALS)),)
BUILD_MISSING := $(strip $(shell ./scripts/build-deps.sh))
ifneq ($(BUILD_MISSING),)
$(error missing Debian packages: $(BUILD_MISSING). Run `make deps` to install them)
endif
endif

PKGS := libmicrohttpd jansson sqlite3 libcurl libpcre2-8 libcrypto inih libssh2 zlib \
	libarchive libxml-2.0 libcbor lapacke blas
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# The replicated controller's engine (ha/): trainctld and the unit tests
# link it, never the agent that provisioning copies to hosts.
HA_PKGS := raft libuv
HA_CFLAGS := $(shell pkg-config --cflags $(HA_PKGS) 2>/dev/null)
HA_LIBS := $(shell pkg-config --libs $(HA_PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -pedantic -Wstrict-prototypes \
	-Wmissing-prototypes -Wvla -Wwrite-strings -fno-common
OPT ?= -O2 -g
CFLAGS ?= $(OPT)
SAN ?=
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) \
	$(CFLAGS) $(SAN) -I. $(PKG_CFLAGS) $(HA_CFLAGS) -MMD -MP
ALL_LDFLAGS := $(LDFLAGS) $(SAN)
LIBS := $(PKG_LIBS) -llapack -lblas -lpthread -lm

# One static library per module; the binaries link what they need, each
# library before the ones it uses (storage/ uses api/ for the blob
# endpoint's JSON, everything uses common/). storage/s3d/, the embedded
# store's S3 and blob faces, is a library of its own that only trainctld
# links: the agent and the CLI get storage/ without it.
MODULES := common api db
common_SRC := $(wildcard common/*.c)
api_SRC := $(wildcard api/*.c)
db_SRC := $(wildcard db/*.c)
ha_SRC := $(wildcard ha/*.c)
stor_SRC := $(wildcard storage/*.c)
s3d_SRC := $(wildcard storage/s3d/*.c)
agent_SRC := $(filter-out agent/main.c,$(wildcard agent/*.c))
ctrl_SRC := $(filter-out controller/main.c,$(wildcard controller/*.c)) \
	$(wildcard controller/*/*.c)
cli_SRC := $(wildcard cli/*.c)
tuner_SRC := $(wildcard tuner/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB_common := $(BUILD)/lib/libtcommon.a
LIB_api := $(BUILD)/lib/libtapi.a
LIB_db := $(BUILD)/lib/libtdb.a
LIB_ha := $(BUILD)/lib/libtha.a
LIB_ctrl := $(BUILD)/lib/libtctrl.a
LIB_stor := $(BUILD)/lib/libtstor.a
LIB_s3d := $(BUILD)/lib/libts3d.a
LIB_agent := $(BUILD)/lib/libtagent.a
# runtime/python/'s files, built into the agent's library (below).
RUNTIME_OBJ := $(BUILD)/obj/gen/runtime_files.o
LIB_tuner := $(BUILD)/lib/libttuner.a

BIN_trainctld := $(BUILD)/bin/trainctld
BIN_trainctl := $(BUILD)/bin/trainctl
BIN_trainagent := $(BUILD)/bin/trainagent
BIN_tuner_driver := $(BUILD)/bin/trainctl-tuner-driver

TEST_SRC := $(wildcard tests/*/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

.PHONY: all deps test check fuzz format format-check install clean demo bench \
	unit-tests ha-history

all: $(BIN_trainctld) $(BIN_trainctl) $(BIN_trainagent) $(BIN_tuner_driver) \
	trainer

deps:
	./scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_common): $(call obj,$(common_SRC))
$(LIB_api): $(call obj,$(api_SRC))
$(LIB_db): $(call obj,$(db_SRC))
$(LIB_ha): $(call obj,$(ha_SRC))
$(LIB_ctrl): $(call obj,$(ctrl_SRC))
$(LIB_stor): $(call obj,$(stor_SRC))
$(LIB_s3d): $(call obj,$(s3d_SRC))
$(LIB_agent): $(call obj,$(agent_SRC)) $(RUNTIME_OBJ)
$(LIB_tuner): $(call obj,$(tuner_SRC))
$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The status page's files, embedded into trainctld.
WEB_FILES := $(shell find web -type f 2>/dev/null)
$(BUILD)/gen/web_assets.c: $(WEB_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh web $@

$(BUILD)/obj/gen/web_assets.o: $(BUILD)/gen/web_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

WEB_OBJ := $(BUILD)/obj/gen/web_assets.o

# The Python files every Python rank can import (runtime/python/README.md),
# embedded into trainagent.
RUNTIME_FILES := $(shell find runtime/python -name '*.py' 2>/dev/null)
$(BUILD)/gen/runtime_files.c: $(RUNTIME_FILES) scripts/embed.sh \
		runtime/python/README.md
	@mkdir -p $(dir $@)
	sh scripts/embed.sh --python runtime/python $@

$(BUILD)/obj/gen/runtime_files.o: $(BUILD)/gen/runtime_files.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BIN_trainctld): $(call obj,controller/main.c) $(LIB_ctrl) $(WEB_OBJ) \
		$(LIB_ha) $(LIB_db) $(LIB_s3d) $(LIB_stor) $(LIB_api) \
		$(LIB_tuner) $(LIB_common)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) $(HA_LIBS)

$(BIN_trainctl): $(call obj,$(cli_SRC)) $(LIB_stor) $(LIB_api) $(LIB_common)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# The optimizer's ask/tell driver, which bench/tuning.py runs (JSON lines).
$(BIN_tuner_driver): $(call obj,tuner/driver/main.c) $(LIB_tuner) \
		$(LIB_common)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# The agent is what provisioning copies to every host, so its debug
# information goes into trainagent.debug beside it (found through the
# debuglink by gdb and the symbolizers): a third of the bytes to send.
$(BIN_trainagent): $(call obj,agent/main.c) $(LIB_agent) $(LIB_stor) \
		$(LIB_api) $(LIB_common)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@.tmp $^ $(LIBS)
ifeq ($(SAN),)
	objcopy --only-keep-debug $@.tmp $@.debug
	objcopy --strip-debug --add-gnu-debuglink=$@.debug $@.tmp
endif
	mv -f $@.tmp $@

# libtrainer (trainer/), the library training programs link: static and
# shared, plus a pkg-config file that points at this build tree. Its objects
# also get MPI's flags and, when CUDA's nccl.h is found (NCCL=auto), the NCCL
# backend; NCCL=yes insists on it, NCCL=no leaves it out. The flags are kept
# in trainer.flags so that changing them rebuilds the objects.
NCCL ?= auto
CUDA_HOME ?= /usr/local/cuda
NCCL_FOUND := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h \
	/usr/local/cuda/include/nccl.h))
ifeq ($(NCCL),auto)
NCCL_H := $(NCCL_FOUND)
else ifeq ($(NCCL),yes)
NCCL_H := $(or $(NCCL_FOUND),$(CUDA_HOME)/include/nccl.h)
else
NCCL_H :=
endif
NCCL_CUDA := $(patsubst %/include/nccl.h,%,$(NCCL_H))
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null || \
	mpicc --showme:compile 2>/dev/null)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null || \
	mpicc --showme:link 2>/dev/null)
TRAINER_CFLAGS := $(MPI_CFLAGS)
TRAINER_LIBS := $(shell pkg-config --libs jansson libcurl libcrypto \
	2>/dev/null) $(MPI_LIBS)
ifneq ($(NCCL_H),)
TRAINER_CFLAGS += -DTRAINER_HAVE_NCCL -isystem $(NCCL_CUDA)/include
TRAINER_LIBS += -L$(NCCL_CUDA)/lib64 -Wl,-rpath,$(NCCL_CUDA)/lib64 \
	-lnccl -lcudart
endif
TRAINER_LIBS += -lpthread -lm

trainer_SRC := $(wildcard trainer/*.c)
TRAINER_OBJ := $(call obj,$(trainer_SRC))
TRAINER_PIC := $(patsubst trainer/%.c,$(BUILD)/obj/trainer-pic/%.o,\
	$(trainer_SRC))
TRAINER_FLAGS := $(BUILD)/obj/trainer.flags
LIB_trainer := $(BUILD)/lib/libtrainer.a
SO_trainer := $(BUILD)/lib/libtrainer.so
PC_trainer := $(BUILD)/lib/pkgconfig/trainer.pc

.PHONY: trainer trainer-force
trainer: $(LIB_trainer) $(SO_trainer) $(PC_trainer)

$(TRAINER_FLAGS): trainer-force
	@mkdir -p $(dir $@)
	@echo '$(ALL_CFLAGS) $(TRAINER_CFLAGS)' > $@.new; \
		if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

$(BUILD)/obj/trainer/%.o: trainer/%.c $(TRAINER_FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TRAINER_CFLAGS) -c $< -o $@

$(BUILD)/obj/trainer-pic/%.o: trainer/%.c $(TRAINER_FLAGS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TRAINER_CFLAGS) -fPIC -c $< -o $@

$(LIB_trainer): $(TRAINER_OBJ)

$(SO_trainer): $(TRAINER_PIC)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libtrainer.so $(ALL_LDFLAGS) -o $@ \
		$(TRAINER_PIC) $(TRAINER_LIBS)

# The build tree's trainer.pc links libtrainer.a by its path, so a program
# runs without LD_LIBRARY_PATH; sanitizer flags follow a sanitized build.
$(PC_trainer): trainer-force
	@mkdir -p $(dir $@)
	@printf '%s\n' 'Name: trainer' \
		'Description: libtrainer for trainctl training programs' \
		'Version: 0.1.0' \
		'Cflags: -I$(CURDIR) -I$(CURDIR)/trainer' \
		'Libs: $(abspath $(LIB_trainer)) $(strip $(TRAINER_LIBS) $(SAN))' \
		> $@.new; \
		if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

# tests/trainer/ links libtrainer and its dependencies instead of the
# module libraries (the shorter stem wins over $(BUILD)/tests/%).
$(BUILD)/tests/trainer/%: tests/trainer/%.c $(LIB_trainer)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -o $@ $< $(LIB_trainer) \
		$(ALL_LDFLAGS) $(TRAINER_LIBS) -lcmocka

# Unit tests: tests/<module>/test_<file>.c links against every module
# library (and cmocka).
TEST_LIBS := $(LIB_ctrl) $(WEB_OBJ) $(LIB_agent) $(LIB_ha) $(LIB_db) \
	$(LIB_s3d) $(LIB_stor) $(LIB_api) $(LIB_tuner) $(LIB_common)
$(BUILD)/tests/%: tests/%.c $(TEST_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(TEST_LIBS) $(ALL_LDFLAGS) $(LIBS) \
		$(HA_LIBS) -lcmocka

unit-tests: $(TEST_BIN)

# The C examples, built against libtrainer as a user would (examples/Makefile).
.PHONY: examples
examples: trainer
	$(MAKE) -C examples BUILD=$(abspath $(BUILD))

test: all unit-tests examples fuzz
	@BUILD=$(BUILD) ./tests/run.sh

# Sanitized build in its own folder, then the format and banned-call checks.
check:
	$(MAKE) BUILD=build/check OPT="-O1 -g" \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		test
	$(MAKE) fuzz-run
	$(MAKE) format-check

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_LIB_SRC := $(common_SRC) $(api_SRC) $(stor_SRC) $(tuner_SRC) \
	$(s3d_SRC)

FUZZ_OBJ := $(patsubst %.c,build/fuzz/obj/%.o,$(FUZZ_LIB_SRC))
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I. \
	$(PKG_CFLAGS)

# The libraries are instrumented once and shared by every harness.
.SECONDARY: $(FUZZ_OBJ)
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP \
		-fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<

build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LIBS)

fuzz: $(FUZZ_BIN)

# A run of every fuzzer over its corpus and the seeds, FUZZ_SECONDS (20)
# each; any crash fails it (scripts/fuzz-run.sh). `make test` runs a shorter
# one (tests/integration/test_fuzz.sh).
fuzz-run: $(FUZZ_BIN)
	./scripts/fuzz-run.sh $(FUZZ_BIN)

SRC_ALL = $(wildcard common/*.[ch] api/*.[ch] db/*.[ch] ha/*.[ch] \
	controller/*.[ch] \
	controller/*/*.[ch] \
	cli/*.[ch] agent/*.[ch] trainer/*.[ch] storage/*.[ch] storage/s3d/*.[ch] \
	tests/*/*.[ch] \
	tuner/*.[ch] tuner/driver/*.[ch] \
	examples/*/*.[ch] bench/*.[ch])

format:
	clang-format -i $(SRC_ALL)

format-check:
	clang-format --dry-run -Werror $(SRC_ALL)
	@! grep -nE '\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok)[[:space:]]*\(' \
		$(filter-out common/banned.h,$(SRC_ALL)) || \
		{ echo "banned function used"; exit 1; }

# api/ headers that are not internal to api/.
PUBLIC_API_H := $(filter-out api/validate.h api/model.h api/json_util.h api/pyobj.h \
	api/batch_check.h,\
	$(wildcard api/*.h))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/trainctl/api \
		$(DESTDIR)$(PREFIX)/include/trainctl/common
	install -m 755 $(BIN_trainctld) $(BIN_trainctl) $(BIN_trainagent) \
		$(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(PUBLIC_API_H) $(DESTDIR)$(PREFIX)/include/trainctl/api/
	install -m 644 common/*.h $(DESTDIR)$(PREFIX)/include/trainctl/common/
	install -m 644 $(LIB_api) $(DESTDIR)$(PREFIX)/lib/libtrainctl-api.a
	install -m 644 $(LIB_common) $(DESTDIR)$(PREFIX)/lib/libtrainctl-common.a
	install -d $(DESTDIR)$(PREFIX)/libexec/trainctl
	install -m 755 scripts/cluster.sh $(DESTDIR)$(PREFIX)/libexec/trainctl/cluster.sh
	install -m 644 scripts/cluster-registry.sh \
		$(DESTDIR)$(PREFIX)/libexec/trainctl/cluster-registry.sh
	sed -e 's|@PREFIX@|$(PREFIX)|g' scripts/trainctl.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/trainctl.pc
	install -d $(DESTDIR)$(PREFIX)/include/trainer
	install -m 644 trainer/trainer.h $(DESTDIR)$(PREFIX)/include/trainer.h
	install -m 644 trainer/trainer.h \
		$(DESTDIR)$(PREFIX)/include/trainer/trainer.h
	install -m 644 $(LIB_trainer) $(SO_trainer) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBS@|$(strip $(TRAINER_LIBS))|g' \
		scripts/trainer.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/trainer.pc

demo: all
	./scripts/demo.sh

bench: all
	./bench/api.sh

# The replicated controller's long history check: 50 leader faults
# (tests/integration/test_ha_history.py; `make test` runs 4).
ha-history: all
	/usr/bin/python3 tests/integration/test_ha_history.py --faults 50

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# stagecraft - plain Makefile.
#   make               build build/libstagecraft.a and bin/stagecraft
#   make test          run every test (last line: "N passed, N failed, N skipped")
#   make test SAN=1    the same under clang's ASan + UBSan (objects in build-san/)
#   make demo          install missing deps, build, run the main job
#   make fuzz          build the libFuzzer targets (clang)
#   make check-layers  fail on any include or symbol against the layers
#   USE_CUDA=yes|no USE_MPI=yes|no force optional parts (default: detected)

SHELL := /bin/bash
CUDA_HOME ?= /usr/local/cuda

ifeq ($(SAN),1)
  CC := clang
  BUILD := build-san
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  OPT := -O1 -g
else
  CC ?= cc
  BUILD := build
  SANFLAGS :=
  OPT := -O2 -g
endif

# ---- optional parts -------------------------------------------------------
ifeq ($(origin USE_MPI),undefined)
  USE_MPI := $(shell command -v mpicc >/dev/null 2>&1 && echo yes || echo no)
endif
ifeq ($(origin USE_CUDA),undefined)
  USE_CUDA := $(shell (command -v nvcc >/dev/null 2>&1 || test -x $(CUDA_HOME)/bin/nvcc) && echo yes || echo no)
endif
NVCC := $(shell command -v nvcc 2>/dev/null || echo $(CUDA_HOME)/bin/nvcc)
# Machine code for the A100 (sm_80) and Hopper (sm_90), and PTX the driver
# compiles at start on anything newer; without a target nvcc embeds only its
# oldest (sm_75), which a Hopper GPU runs through the PTX alone.
NVCCFLAGS ?= -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90

# Layers (scripts/check_layers.sh, DESIGN.md): each folder is compiled with
# only the folders it may use on its include path, so an include that goes
# against the order fails to compile; `make check-layers` also checks the
# linked symbols. cli/, tests/, bench/ and the fuzz targets see everything.
LAYERED := common traces cost_models sim planner exec
$(foreach d,$(LAYERED),$(eval INC_$(d) := $(addprefix -I,$(shell scripts/check_layers.sh --deps $(d)))))
INC_ALL := $(addprefix -I,$(LAYERED))
incs = $(or $(INC_$(firstword $(subst /, ,$(1)))),$(INC_ALL))
CPPFLAGS := -D_GNU_SOURCE
# -pthread: exec/team.c (one thread per GPU where MPI is absent)
CFLAGS := -std=c11 $(OPT) -pthread -Wall -Wextra -Wshadow -Wno-unused-parameter $(SANFLAGS)
LDLIBS := -lcjson -lgsl -lopenblas -lm
LDFLAGS := -pthread $(SANFLAGS)

ifeq ($(USE_MPI),yes)
  CPPFLAGS += -DSC_HAVE_MPI $(shell mpicc -showme:compile)
  LDFLAGS += $(shell mpicc -showme:link | sed 's/-l[^ ]*//g')
  LDLIBS := $(filter -l%,$(shell mpicc -showme:link)) $(LDLIBS)
endif
ifeq ($(USE_CUDA),yes)
  CPPFLAGS += -DSC_HAVE_CUDA -I$(CUDA_HOME)/include
  LDFLAGS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
  LDLIBS += -lnccl -lcublas -lcudart -lstdc++
endif

MODULES := common traces cost_models sim planner exec
LIB_SRC := $(foreach d,$(MODULES),$(wildcard $(d)/*.c))
CU_SRC := $(if $(filter yes,$(USE_CUDA)),$(wildcard exec/*.cu))
LIB_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC)) $(patsubst %.cu,$(BUILD)/%.cu.o,$(CU_SRC))
CLI_SRC := $(wildcard cli/*.c)
CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRC))
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRC))
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

LIB := $(BUILD)/libstagecraft.a
ifeq ($(SAN),1)
  CLI := $(BUILD)/bin/stagecraft
else
  CLI := bin/stagecraft
endif
TESTRUN := $(BUILD)/tests/run

# Flags are remembered: changing any of them rebuilds everything.
FLAGS_STAMP := $(BUILD)/flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(foreach d,$(LAYERED),$(INC_$(d))) $(CFLAGS) $(LDFLAGS) $(LDLIBS) cuda=$(USE_CUDA) $(if $(filter yes,$(USE_CUDA)),$(NVCCFLAGS))
$(shell mkdir -p $(BUILD); echo '$(FLAGS_NOW)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))

.PHONY: all test test-long demo deps fuzz bench golden-update clean config check-layers
all: $(LIB) $(CLI) $(BENCH_BIN)

config:
	@echo "CC=$(CC) USE_MPI=$(USE_MPI) USE_CUDA=$(USE_CUDA) BUILD=$(BUILD)"

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(call incs,$<) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.cu.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(INC_exec) -DSC_HAVE_CUDA -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(TESTRUN): $(TEST_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(TEST_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(INC_ALL) $(CPPFLAGS) $(CFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

deps:
	@scripts/deps.sh

test: deps $(CLI) $(TESTRUN) $(BENCH_BIN)
	@SC_BIN=$(CLI) SC_SAN=$(SAN) $(TESTRUN) $(T)

# Every test plus the long ones (SC_LONG=1): the emulated cluster of
# scripts/netcluster.sh (needs root and iproute2) and whatever else is slow.
test-long: deps $(CLI) $(TESTRUN)
	@SC_BIN=$(CLI) SC_SAN=$(SAN) SC_LONG=1 $(TESTRUN) $(T)

bench: $(BENCH_BIN)

# Runs every suite of published end-to-end runs (validation/*.json) through
# the simulator; fails when issue 13's targets are missed (MAPE <= 5%, every
# row within 10%, mean signed error within +-2%). docs/accuracy.md has the
# figures it prints today.
.PHONY: validate
validate: $(CLI)
	@python3 scripts/layer_table.py --run $(CLI) --check
	@$(CLI) validate --check

# Fails on any #include or linked symbol that goes against the layers.
check-layers: $(LIB)
	@scripts/check_layers.sh $(BUILD)

demo: deps all
	@scripts/demo.sh

# Executes every notebooks/*.ipynb on Debian's python3 kernel into out/notebooks/
# (the committed notebooks are never rewritten); fails when any cell fails.
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
.PHONY: notebooks
notebooks: deps $(CLI)
	@scripts/deps.sh --notebooks
	@mkdir -p out/notebooks
	@failed=; for nb in $(NOTEBOOKS); do \
	  echo "notebook $$nb"; \
	  PATH=/usr/bin:$$PATH SC_BIN=$(CLI) PYDEVD_DISABLE_FILE_VALIDATION=1 \
	  /usr/bin/jupyter-nbconvert --to notebook --execute --log-level=WARN \
	    --ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=300 \
	    --output-dir out/notebooks "$$nb" || failed="$$failed $$nb"; \
	done; \
	if [ -n "$$failed" ]; then echo "notebooks failed:$$failed" >&2; exit 1; fi; \
	echo "notebooks: all $(words $(NOTEBOOKS)) ran; executed copies in out/notebooks/"

golden-update: $(CLI) $(TESTRUN)
	@SC_BIN=$(CLI) SC_GOLDEN_UPDATE=1 $(TESTRUN) step_golden

# libFuzzer targets: build/fuzz/fuzz_NAME; run e.g.
#   build/fuzz/fuzz_model -max_total_time=300 tests/fuzz/corpus/model
# The library is compiled once for all targets (build/fuzz/obj/, with
# -fsanitize=fuzzer-no-link so its branches are instrumented).
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_LIB_SRC := $(filter-out exec/%,$(LIB_SRC))
FUZZ_LIB_OBJ := $(patsubst %.c,build/fuzz/obj/%.o,$(FUZZ_LIB_SRC))
FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined $(INC_ALL) -D_GNU_SOURCE
fuzz: $(FUZZ_BIN)
.SECONDARY: $(FUZZ_LIB_OBJ)
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
build/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -lcjson -lgsl -lopenblas -lm -o $@

clean:
	rm -rf build build-san bin

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d)

# The two README commands: `make run` and `make test`. Both install missing Debian packages
# (only when missing; sudo when not root), configure with CMake + Ninja, and build.
BUILD_DIR ?= build
PACKAGES  := qt6-base-dev qt6-svg-dev libqcustomplot-dev nlohmann-json3-dev xvfb xauth \
             libgl1-mesa-dev fonts-dejavu-core ninja-build cmake g++ ccache \
             poppler-utils libxml2-utils python3 python3-yaml libcli11-dev libgtest-dev \
             libyaml-cpp-dev libtomlplusplus-dev libpugixml-dev python3-torch \
             pybind11-dev python3-dev python3-pytest python3-distributed dpkg-dev \
             python3-omegaconf python3-packaging python3-regex python3-cpuinfo python3-tqdm python3-psutil \
             clang-tidy-14
# What the core alone needs (make test-core): no Qt, no QCustomPlot, no display.
CORE_PACKAGES := nlohmann-json3-dev ninja-build cmake g++ ccache python3 python3-yaml libcli11-dev libgtest-dev \
                 libyaml-cpp-dev libtomlplusplus-dev libpugixml-dev
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
WORKSPACE ?= sample_configs/workspaces/quickstart.nestws.json
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# ccache leaves the build directory out of its hash (by default it hashes it whenever -g is
# on), so `make test-core` reuses the objects `make test` compiled from the same command
# lines (nestcore, nest-cli, the core tests) instead of compiling the core a second time.
export CCACHE_NOHASHDIR := 1
# Paths under the checkout are hashed relative to it, so another checkout of the same commit
# (a git worktree) reuses these objects too (the source path itself is only in SourceDir.h).
export CCACHE_BASEDIR ?= $(CURDIR)
# Extra ctest arguments, e.g. CTEST_ARGS="-E extract_profiles" (.ci/run does this for the
# phases after `make test`, which has already run the extractor's test).
CTEST_ARGS ?=

.PHONY: all deps deps-core configure build apps run test test-core bench clean screenshot test-sanitize test-tsan fuzz package lint lint-changed

all: build

deps: DEPS = $(PACKAGES)
deps-core: DEPS = $(CORE_PACKAGES)
deps deps-core:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing Debian packages:$$missing"; \
	  $(SUDO) apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

apps: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target nest-planner nest-cli

run: apps
	@if [ -n "$$DISPLAY" ] || [ -n "$$WAYLAND_DISPLAY" ] || [ -n "$$QT_QPA_PLATFORM" ]; then \
	  ./$(BUILD_DIR)/app/nest-planner $(WORKSPACE); \
	else \
	  echo "No display found: starting the GUI under xvfb-run (virtual display)."; \
	  xvfb-run -a ./$(BUILD_DIR)/app/nest-planner $(WORKSPACE); \
	fi

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The Debian package (issue 51, docs/install.md): build/packages/nest-planner_VERSION_ARCH.deb,
# for `sudo apt-get install ./build/packages/nest-planner_*.deb`.
package: build
	cmake --build $(BUILD_DIR) --target package

# The core without Qt (issue 20): nestcore, nest-cli (reproduce without its figures), the core
# tests and the validation scripts, configured as on a machine where Qt is absent (looking
# for Qt6 and QCustomPlotQt6 is disabled, so a stray find_package fails here, not in the
# field). Core test files still on Qt Test are skipped with a configure message.
CORE_DIR ?= build-core
test-core: deps-core
	cmake -S . -B $(CORE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo --no-warn-unused-cli \
	  -DNEST_BUILD_GUI=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON -DCMAKE_DISABLE_FIND_PACKAGE_QCustomPlotQt6=ON \
	  -DNEST_BUILD_BENCH=OFF
	cmake --build $(CORE_DIR) -j $(JOBS)
	cd $(CORE_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

screenshot: apps
	QT_QPA_PLATFORM=offscreen ./$(BUILD_DIR)/app/nest-planner $(WORKSPACE) --tab placement --screenshot docs/screenshot.png

# AddressSanitizer + UndefinedBehaviorSanitizer over the whole suite (benchmarks off). A
# report fails the test (no recovery); leaks in Qt's own plugins are not ours to fix.
ASAN_DIR  ?= build-asan
TSAN_DIR  ?= build-tsan
SAN_ENV   := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_TESTS := test_planner_misc|test_reliability_runner|test_baseline_planners|test_cluster_sweep|test_plan_list|test_job_tracker

# The checking builds: -O1 (the level ASan recommends; the build takes 40 % less time than
# at -O2 -g), asserts on, and line tables (file:line in reports). CI passes SAN_DEBUG=-g0:
# reports then name functions only; the ASan phase took 1027 s instead of 1187 s cold (docs/reliability.md).
SAN_DEBUG ?= -g1
SAN_FLAGS = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 $(SAN_DEBUG)"

test-sanitize: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(SAN_FLAGS) \
	  -DNEST_SANITIZE=address,undefined -DNEST_BUILD_BENCH=OFF -DNEST_UNITY=ON
	cmake --build $(ASAN_DIR) -j $(JOBS)
	cd $(ASAN_DIR) && $(SAN_ENV) ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# ThreadSanitizer over the planner-cancellation and worker tests (the window's search, the
# baselines, the sweep, the plan list's evaluations, runPlanners' threads). Qt itself is not
# built with TSan, so races whose stacks run through Qt's libraries (its thread pool, posted
# events, QTest's watchdog) are suppressed; our code is still checked. Of the window's
# workflow suite only the worker cases run: QProcess (exports) is not TSan-safe and the
# event-loop stall budget means nothing at TSan's speed.
TSAN_WORKFLOW := runDeliversToEveryView cancelReturnsQuickly editedInputsMarkTheResultStale \
                 latestRequestWins closeDuringSearch liveModeReplansAfterAnEdit
TSAN_SWEEP := runnerDeliversOneResultPerPoint runnerRefusesABadRequest cancelMidwayGivesAPartialResult \
              viewFollowsTheRunnerAndCancels

test-tsan: deps
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(SAN_FLAGS) \
	  -DNEST_SANITIZE=thread -DNEST_BUILD_BENCH=OFF -DNEST_UNITY=ON
	cmake --build $(TSAN_DIR) -j $(JOBS) --target $(subst |, ,$(TSAN_TESTS)) test_planning_workflow test_sweep_view
	printf 'race:libQt6Core.so\nrace:libQt6Gui.so\nrace:libQt6Widgets.so\nrace:libQt6Test.so\ncalled_from_lib:libQt6Core.so.6\n' \
	  > $(TSAN_DIR)/tsan.supp
	cd $(TSAN_DIR) && TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/$(TSAN_DIR)/tsan.supp \
	  ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'
	cd $(TSAN_DIR) && TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/$(TSAN_DIR)/tsan.supp \
	  QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp ./tests/test_planning_workflow $(TSAN_WORKFLOW)
	cd $(TSAN_DIR) && TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/$(TSAN_DIR)/tsan.supp \
	  QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp ./tests/test_sweep_view $(TSAN_SWEEP)

# clang-tidy with the root's .clang-tidy (issue 52, docs/lint.md): every .cpp of core/, ui/,
# app/ and tests/ that the build compiles; a finding fails. After a build (it reads the
# build's compile_commands.json and generated headers). About 16 min on 2 idle cores (docs/lint.md).
lint: build
	JOBS=$(JOBS) tests/lint/run.sh $(BUILD_DIR)

# The same over the .cpp files changed since the tree was last linted clean (tests/lint/clean-tree; what .ci/run checks).
lint-changed: build
	JOBS=$(JOBS) tests/lint/run.sh $(BUILD_DIR) --changed

# libFuzzer targets (clang), SECONDS each: make fuzz SECONDS=600
SECONDS ?= 60
fuzz:
	tests/fuzz/run.sh $(SECONDS)

bench: build
	@for b in $(BUILD_DIR)/tests/bench/bench_*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf $(BUILD_DIR)

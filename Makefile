# The two README commands: `make run` and `make test`. Both install missing Debian packages
# (only when missing; sudo when not root), configure with CMake + Ninja, and build.
BUILD_DIR ?= build
PACKAGES  := qt6-base-dev qt6-svg-dev libqcustomplot-dev nlohmann-json3-dev xvfb xauth \
             libgl1-mesa-dev fonts-dejavu-core ninja-build cmake g++ ccache \
             poppler-utils libxml2-utils python3 libcli11-dev
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
WORKSPACE ?= sample_configs/workspaces/quickstart.nestws.json
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps configure build apps run test bench clean screenshot

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
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

screenshot: apps
	QT_QPA_PLATFORM=offscreen ./$(BUILD_DIR)/app/nest-planner $(WORKSPACE) --tab placement --screenshot docs/screenshot.png

bench: build
	@for b in $(BUILD_DIR)/tests/bench/bench_*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf $(BUILD_DIR)

# The two commands of the README, for a fresh Debian machine (as root, or with sudo):
#   make run    install what is missing, build, and run an example page
#   make test   install what is missing, build, and run every test (ctest)
#   make install [PREFIX=/usr/local]   install the program, libblockflow.so, blockflow.h,
#               blockflow.pc and the CMake package (with the Python package)
# Both are quick when everything is already there. Extra CMake options: CMAKE_FLAGS="...".
BUILD       ?= build
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
EXAMPLE     ?= examples/filter_grad_same.json
PREFIX      ?= /usr/local
DEPS        := gcc make cmake pkg-config libuv1-dev libcjson-dev check python3 python3-numpy \
               python3-pytest libwebsockets-dev

.PHONY: all deps build run test install clean

all: build

# Install the Debian packages that are missing (dpkg -s is instant when all are present).
deps:
	@missing=""; for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "installing:$$missing"; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	./$(BUILD)/blockflow run $(EXAMPLE) --print --out out

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) out

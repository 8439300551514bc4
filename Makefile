# The two commands of the README, for a fresh Debian machine (as root, or with sudo):
#   make run    install what is missing, build, and run an example page
#   make test   install what is missing, build, and run every test (ctest)
#   make serve  install what is missing, build the library and the editor, start blockflow serve
#   make install [PREFIX=/usr/local]   install the program, libblockflow.so, blockflow.h,
#               blockflow.pc and the CMake package (with the Python package, which loads the
#               library of its own prefix, and in a CUDA build the GPU plugin libblockflow_cuda.so)
# All are quick when everything is already there. Extra CMake options: CMAKE_FLAGS="...".
BUILD       ?= build
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
EXAMPLE     ?= examples/filter_grad_same.json
PREFIX      ?= /usr/local
DEPS        := gcc make cmake pkg-config libuv1-dev libcjson-dev check python3 python3-numpy \
               python3-pytest libwebsockets-dev python3-sklearn python3-torch \
               openmpi-bin libopenmpi-dev

# The editor (web/) needs Node.js >= 18 with npm, and its browser tests Debian's chromium and
# firefox-esr. Debian's nodejs/npm are installed only when the node/npm commands are missing: a
# Node.js that bundles npm may already be there, and Debian's npm package conflicts with it.
WEB_DEPS    := chromium firefox-esr
SERVE_LISTEN ?= 127.0.0.1:8470

.PHONY: all deps web-deps build editor serve run test install clean

all: build

# Install the Debian packages that are missing (dpkg -s is instant when all are present).
deps:
	@missing=""; for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "installing:$$missing"; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

web-deps:
	@missing=""; command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	for p in $(WEB_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	    sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "installing:$$missing"; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

# npm ci from the committed lockfile (only when it changed), then the bundle (when a source did)
web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund

web/dist/index.html: web/node_modules/.package-lock.json web/build.mjs web/index.html $(shell find web/src -type f 2>/dev/null)
	cd web && node build.mjs

editor: web-deps web/dist/index.html

serve: build editor
	./$(BUILD)/blockflow serve --pages examples --listen $(SERVE_LISTEN)

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	./$(BUILD)/blockflow run $(EXAMPLE) --print --out out

test: build editor
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) out web/dist

# The two commands of the README: `make run` and `make test`. Both install what is
# missing, configure and build first.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
PREFIX ?= $(HOME)/.local

.PHONY: all deps configure build run test test-slow test-all fuzz bench sanitize clean install

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	@scripts/install-deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/missyd

# missyd, missyctl, the tokenizer rank files and the systemd user units under PREFIX
# (bin/, share/missyd/, share/systemd/user/).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)
	@echo "then: systemctl --user daemon-reload && systemctl --user enable --now missyd.socket"

# The default suite: everything but the tests labelled slow (load, crash, fuzz).
test: build
	scripts/install-test-clients
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE slow $(CTEST_FLAGS)

# The slow tests, then every fuzz target for FUZZ_SECONDS (clang build in FUZZ_BUILD).
test-slow: build
	cd $(BUILD) && ctest --output-on-failure -L slow $(CTEST_FLAGS)
	JOBS=$(JOBS) scripts/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

test-all: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The fuzz targets only (fuzz/README.md).
fuzz: deps
	JOBS=$(JOBS) scripts/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DMISSY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

bench: deps
	cmake -S . -B $(BUILD)-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMISSY_BUILD_BENCH=ON -DMISSY_BUILD_TESTS=OFF
	cmake --build $(BUILD)-bench -j $(JOBS)
	bench/run $(BUILD)-bench

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-bench $(FUZZ_BUILD)

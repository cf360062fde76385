# dlock: the two commands README.md starts with, and a few more.
#   make demo     install build deps if missing, build, show two `dlock run`
#                 excluding each other on the embedded store
#   make test     install deps and servers, build with ASan+UBSan and
#                 -Werror, run the quick tier: every store, every public
#                 behaviour (ctest -L quick -j$(JOBS); ~7 min on 2 cores)
#   make test-long  the long tier: torture, partitions, clocks, the Redis
#                 Sentinel/Cluster/TLS topologies, failovers, valgrind
#                 (what .ci/run runs after make test)
#   make bench    dlock-bench on every store, ratios to the raw round trip
#   make fuzz     libFuzzer targets (FUZZ_SECONDS=300 each)
#   make torture  long fault-injection runs per store (SECONDS_PER_RUN=60)
#   make install  PREFIX=/usr/local DESTDIR=
#   make golden   rewrite tests/golden/ from the .sql/.lua files (review
#                 the diff, then commit it with the change)
#   make deb      the Debian packages (libdlock0.2, libdlock-dev, dlock)
#                 into DEB_OUT=build-deb, built from a copy of the tree

BUILD      ?= build
TEST_BUILD ?= build-test
PREFIX     ?= /usr/local
JOBS       ?= 2

.PHONY: all build demo test test-long test-build golden torture bench fuzz install deb clean deps

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DBUILD_TESTING=OFF -DDLOCK_SANITIZE=OFF >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)/dlock

# The ASan+UBSan build both tiers run (scripts/test.sh prints a
# "== stage NAME: N s" line per stage after it); `make golden` uses it too.
TEST_CONFIGURE = cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	    -DDLOCK_SANITIZE=ON -DDLOCK_WERROR=ON >/dev/null
test-build:
	@t0=$$(date +%s); scripts/deps.sh test && \
	$(TEST_CONFIGURE) && \
	cmake --build $(TEST_BUILD) -j$(JOBS) && \
	echo "== stage deps, configure, build: $$(( $$(date +%s) - t0 )) s"

test: test-build
	@JOBS=$(JOBS) scripts/test.sh $(TEST_BUILD) quick

test-long: test-build
	@scripts/test.sh $(TEST_BUILD) long

# The golden copies of every statement and script (tests/golden/).
golden:
	@$(TEST_CONFIGURE) && \
	cmake --build $(TEST_BUILD) -j$(JOBS) --target test_golden && \
	$(TEST_BUILD)/tests/test_golden --update tests/golden \
	    $$(sed -n 's/^DLOCK_GOLDEN_STORES:INTERNAL=//p' $(TEST_BUILD)/CMakeCache.txt | tr ';' ' ')

bench: build
	@scripts/deps.sh test
	@cmake --build $(BUILD) -j$(JOBS) --target dlock-bench dlock-floors
	@scripts/bench.sh $(BUILD)

# libFuzzer, FUZZ_SECONDS per target; new finds go to tests/fuzz/corpus.
FUZZ_SECONDS ?= 300
fuzz:
	@scripts/deps.sh build
	@command -v clang >/dev/null || { echo "make fuzz needs clang (apt-get install clang)"; exit 1; }
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DDLOCK_FUZZ=ON \
	    -DDLOCK_SANITIZE=ON -DBUILD_TESTING=OFF >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target fuzz_url fuzz_name fuzz_keys fuzz_cli
	@for t in url name keys cli; do \
	    echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	    mkdir -p build-fuzz/corpus-$$t; \
	    build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	        -max_len=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/ \
	        build-fuzz/corpus-$$t tests/fuzz/corpus/$$t \
	        >build-fuzz/fuzz_$$t.log 2>&1; rc=$$?; \
	    grep -E "^#|stat::number_of_executed_units|ERROR|SUMMARY" \
	        build-fuzz/fuzz_$$t.log | tail -4; \
	    [ $$rc = 0 ] || { echo "fuzz_$$t failed: build-fuzz/fuzz_$$t.log"; exit 1; }; \
	done

# Long torture runs (SECONDS per workload and fault, per store).
SECONDS_PER_RUN ?= 60
torture: test-build
	@DLOCK_TORTURE_SECONDS=$(SECONDS_PER_RUN) scripts/test.sh $(TEST_BUILD) -R torture

install: build
	@cmake --install $(BUILD)

DEB_OUT ?= build-deb
deb:
	@JOBS=$(JOBS) scripts/deb.sh $(DEB_OUT)

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(TEST_BUILD)-plain

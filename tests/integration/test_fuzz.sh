#!/bin/sh
# A bounded fuzzing smoke inside `make test`: every harness in build/fuzz
# (built by `make fuzz`, which `make test` runs first) fuzzes for
# FUZZ_SECONDS (8) over the seeds in tests/fuzz/seeds, through
# scripts/fuzz-run.sh, the runner `make fuzz-run` and `make check` use.
#   (z1..) each harness runs clean (a crash, a sanitizer report or a leak
#          is a failure, and so is a harness that is missing)
#   (zc)   a harness that crashes on one seed makes the runner fail, naming
#          the harness and keeping the input that crashed it
# Run from the repository root: sh tests/integration/test_fuzz.sh. Prints TAP.
set -u
. "$(dirname "$0")/../lib.sh"

t_tmpdir test_fuzz
cd "$T_ROOT" || exit 1
harnesses=$(ls tests/fuzz/fuzz_*.c | sed 's|^tests/fuzz/||; s|\.c$||')
t_plan $(($(echo "$harnesses" | wc -l) + 1))

for n in $harnesses; do
	bin=build/fuzz/$n
	if [ ! -x "$bin" ]; then
		t_fail "(z) $n fuzzes clean" "$bin is not built (make fuzz)"
		continue
	fi
	FUZZ_SECONDS=${FUZZ_SECONDS:-8} FUZZ_DIR=$T_TMP/fuzz \
		./scripts/fuzz-run.sh "$bin" >"$T_TMP/$n.out" 2>&1
	t_ok $? "(z) $n fuzzes clean for ${FUZZ_SECONDS:-8} s" ||
		t_diag_file "$T_TMP/$n.out" 30
done

# A harness that traps on the input "boom", and that input as its seed.
mkdir -p "$T_TMP/seeds" "$T_TMP/crash"
printf 'boom' >"$T_TMP/seeds/boom"
cat >"$T_TMP/fuzz_boom.c" <<'C'
#include <stddef.h>
#include <stdint.h>
#include <string.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n >= 4 && !memcmp(d, "boom", 4))
		__builtin_trap();
	return 0;
}
C
ok=1
if clang -g -fsanitize=fuzzer -o "$T_TMP/fuzz_boom" "$T_TMP/fuzz_boom.c" \
	>"$T_TMP/cc.out" 2>&1; then
	FUZZ_SECONDS=5 FUZZ_DIR=$T_TMP/crash FUZZ_SEEDS=$T_TMP/seeds \
		./scripts/fuzz-run.sh "$T_TMP/fuzz_boom" >"$T_TMP/boom.out" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] &&
		grep -q 'fuzz: fuzz_boom: FAILED with status' "$T_TMP/boom.out" &&
		ls "$T_TMP/crash/crashes-fuzz_boom" | grep -q . && ok=0
else
	cat "$T_TMP/cc.out" >"$T_TMP/boom.out"
fi
t_ok $ok "(zc) a harness that crashes fails the run and keeps its input" ||
	t_diag_file "$T_TMP/boom.out" 20
t_done

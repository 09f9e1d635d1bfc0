#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ in build-fuzz/ (clang-14, with
# AddressSanitizer and UndefinedBehaviorSanitizer, the core instrumented
# too) and runs each for SECONDS (default 60), starting from the committed
# seeds in fuzz/corpus/<target>/. Prints each target's executions. What the
# fuzzer adds to a corpus stays in build-fuzz/corpus/<target>/ (not
# committed); a crash leaves its input in build-fuzz/artifacts/<target>/ and
# makes the script fail.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(fuzz_entry fuzz_entry_frame fuzz_config_file fuzz_config fuzz_spirv fuzz_ld_cache fuzz_bundle fuzz_pack fuzz_remote_spec fuzz_opencl_c fuzz_recipe fuzz_section_cut)
fi
build=build-fuzz

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZC_BUILD_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DZC_BUILD_TESTS=OFF \
    -DZC_BUILD_LAYER=OFF -DZC_BUILD_TOOLS=OFF -DZC_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${ZC_JOBS:-2}" --target "${targets[@]}" >"$build/build.log" 2>&1 || {
    tail -40 "$build/build.log"
    exit 1
}

scratch="$(mktemp -d "${TMPDIR:-/tmp}/zc_fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
status=0
printf '%-18s %14s %8s %8s  %s\n' target executions exec/s corpus result
for target in "${targets[@]}"; do
    corpus="$build/corpus/$target"
    artifacts="$build/artifacts/$target"
    log="$build/$target.log"
    mkdir -p "$corpus" "$artifacts"
    result=ok
    ZC_FUZZ_SCRATCH="$scratch" "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$artifacts/" \
        "$corpus" "fuzz/corpus/$target" >"$log" 2>&1 || {
        result="FAILED (see $log, input in $artifacts/)"
        status=1
    }
    executions="$(awk '/stat::number_of_executed_units/ {print $2}' "$log")"
    rate="$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")"
    files="$(find "$corpus" -type f | wc -l)"
    printf '%-18s %14s %8s %8s  %s\n' "$target" "${executions:-?}" "${rate:-?}" "$files" "$result"
done
exit "$status"

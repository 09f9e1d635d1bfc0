# Shared by the benchmark scripts (sourced, not run): one measured process in
# a scratch directory of its own, and the median of a column of numbers.

# run NAME REP [VAR=value...] -- ARGS...: "$bench" "${bench_args[@]}" ARGS in a
# fresh scratch directory under $work (drivers write files into the current
# directory), with the settings in its environment; output in $work/out/NAME.REP.
run() {
  local name=$1 rep=$2
  shift 2
  local settings=()
  while [[ $1 != -- ]]; do settings+=("$1"); shift; done
  shift
  local scratch=$work/scratch-$name-$rep
  mkdir "$scratch"
  (cd "$scratch" && env "${settings[@]}" "$bench" "${bench_args[@]}" "$@") >"$work/out/$name.$rep"
}

median() { sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

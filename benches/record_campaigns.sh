#!/usr/bin/env bash
# Record campaigns: one long `milo optimize` run per problem, from the best public construction
# in ../shared (arena/ or frontier/: the basins the arena's records were set from), with the
# problem's record program (problems/optimizers/<slug>.record.toml; else its campaign program,
# else its default), in campaigns/records/<slug>/. Each run keeps its best
# construction and its trace current while it runs; run this script again after any stop (Ctrl-C,
# a kill, a reboot) and each run continues where it was, on the same clock and budget.
#
#   cargo build --release && benches/record_campaigns.sh [SLUG...]    # default: all four
#   HOURS=2 benches/record_campaigns.sh third-autocorrelation-inequality
#   MILO=/path/to/milo benches/record_campaigns.sh    # a copy of the binary: rebuilds do not touch it
#   target/release/milo report campaigns/records --out docs/records   # the curves and the ladders
#
# The runs go one after the other (each on one core: JOBS=1); start one script per problem to run
# them side by side. HOURS is each run's total budget over all its segments (default 2); a run
# that has spent it is left as it is (give a larger HOURS to extend it).
set -euo pipefail
cd "$(dirname "$0")/.."
milo=${MILO:-target/release/milo}
hours=${HOURS:-2}
jobs=${JOBS:-1}
seconds=$(python3 -c "print(round(float('$hours') * 3600))")
shared=../shared
declare -A start=(
  [erdos-min-overlap]=arena/erdos-min-overlap/milo-record-rounded
  [first-autocorrelation-inequality]=arena/first-autocorrelation-inequality/codexprolong
  [second-autocorrelation-inequality]=arena/second-autocorrelation-inequality/hyra
  [third-autocorrelation-inequality]=frontier/third-autocorrelation-inequality/codexprolong-frontier
)
slugs=("$@")
[ ${#slugs[@]} -gt 0 ] || slugs=(erdos-min-overlap first-autocorrelation-inequality
                                  second-autocorrelation-inequality third-autocorrelation-inequality)
for slug in "${slugs[@]}"; do
  [ -n "${start[$slug]:-}" ] || { echo "unknown problem: $slug" >&2; exit 2; }
  source="$shared/${start[$slug]}.json"
  if [ ! -f "$source" ]; then
    echo "SKIP $slug: $source is absent (../shared holds the public starts)"
    continue
  fi
  program=problems/optimizers/$slug.record.toml
  [ -f "$program" ] || program=problems/optimizers/$slug.campaign.toml
  [ -f "$program" ] || program=problems/optimizers/$slug.default.toml
  dir=campaigns/records/$slug
  mkdir -p "$dir"
  name=$(basename "${start[$slug]}")-record
  trace=$dir/$name.trace.json
  if [ -s "$trace" ]; then
    echo "== $slug: continuing $trace"
    "$milo" optimize --resume "$trace" --budget "$seconds" --jobs "$jobs" --json -q \
      || echo "   ($slug: nothing run; see the line above)"
  else
    echo "== $slug: $name from $source with $program, $seconds s"
    "$milo" optimize "$slug" --start "$source" --program "$program" --seed 1 \
      --budget "$seconds" --jobs "$jobs" --out "$dir/$name.json.gz" --trace "$trace" --json -q
  fi
done

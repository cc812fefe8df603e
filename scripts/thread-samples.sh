#!/usr/bin/env bash
# Where a build's CPU goes, thread by thread: one crawl of the shared bench
# (../shared/bench, full site) under `perf record -F 999`, then the bench's
# row for it and the samples of its busiest threads (the crawl loop is the
# busiest tokio-rt-worker, page work the crawldeck-cpu-N threads). Samples
# of one thread move far less with the machine's noise than whole-process
# CPU does: alternate builds and compare the thread a change is about.
#
#   scripts/thread-samples.sh [--rounds N] NAME=BINARY [-- EXTRA CRAWL ARGS]
#
# e.g. scripts/thread-samples.sh --rounds 3 before=/tmp/crawldeck-before \
#        after=target/release/crawldeck -- --config /tmp/no-warc.toml
set -euo pipefail

rounds=1
builds=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *=*) builds+=("$1"); shift ;;
        *) echo "thread-samples: '$1' is not NAME=BINARY; see --help" >&2; exit 2 ;;
    esac
done
[ ${#builds[@]} -gt 0 ] || { echo "thread-samples: name at least one NAME=BINARY" >&2; exit 2; }
command -v perf > /dev/null || { echo "thread-samples: needs perf (Debian: linux-perf)" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/../shared/bench/run.sh"
[ -x "$bench" ] || { echo "thread-samples: $bench not found (see ../shared/bench/README.md)" >&2; exit 1; }
site_dir="${BENCH_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/crawldeck-bench}/data/site-50000x50"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for round in $(seq "$rounds"); do
    for build in "${builds[@]}"; do
        name=${build%%=*}
        binary=$(realpath "${build#*=}")
        if [ -d "$site_dir/htdocs" ]; then
            find "$site_dir/htdocs" -type f -print0 | xargs -0 cat > /dev/null
        fi
        data="$work/$name-$round.data"
        row=$("$bench" --site full "$name" -- perf record -q -F 999 -o "$data" -- \
            "$binary" crawl --headless --seeds {seeds_file} --data {out_dir}/data \
            --scope any --concurrency {concurrency} --per-host {per_host} --delay 0s \
            --delay-factor 0 --max-pages 1000000 "${extra[@]}" 2>&1 | grep "^$name " || true)
        if [ -z "$row" ] || [ ! -s "$data" ]; then
            echo "$name: round $round gave no result; run $bench by hand to see why" >&2
            continue
        fi
        read -r -a col <<< "$row"
        threads=$(perf report -i "$data" --sort pid -g none --stdio -n 2>/dev/null \
            | awk '/%/ && n < 4 { split($3, t, ":"); printf "%s=%s ", t[2], $2; n++ }')
        printf '%-9s round %s  pages/s %8s  cpu_s %6s  samples: %s\n' \
            "$name" "$round" "${col[5]}" "${col[6]}" "$threads"
    done
done

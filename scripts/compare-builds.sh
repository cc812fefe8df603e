#!/usr/bin/env bash
# Compares crawldeck builds on the shared bench (../shared/bench), the way
# docs/PERFORMANCE.md measures a change: the builds take turns on the same
# site in one sitting, and the site is read into the page cache before every
# run (a cold cache halves pages/s). The machine is shared and noisy, so
# compare the rows of one sitting only.
#
#   scripts/compare-builds.sh [--rounds N] [--site full|small] [--threads] NAME=BINARY... [-- CRAWL ARGS]
#
# e.g. scripts/compare-builds.sh --rounds 3 before=/tmp/crawldeck-before after=target/release/crawldeck
# Arguments after `--` go to every crawl (e.g. `--config no-warc.toml`).
# --threads runs each crawl under `perf record -F 999` and adds the samples
# of its four busiest threads to its row (the crawl loop is the busiest
# tokio-rt-worker): a change to one thread's work shows there through noise
# that hides it in the whole process's CPU.
set -euo pipefail

rounds=3
site=full
threads=false
builds=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --site) site=$2; shift 2 ;;
        --threads) threads=true; shift ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *=*) builds+=("$1"); shift ;;
        *) echo "compare-builds: '$1' is not NAME=BINARY; see --help" >&2; exit 2 ;;
    esac
done
[ ${#builds[@]} -gt 0 ] || { echo "compare-builds: name at least one NAME=BINARY" >&2; exit 2; }
case "$site" in
    full) site_name=site-50000x50 ;;
    small) site_name=site-5000x10 ;;
    *) echo "compare-builds: --site is full or small" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/../shared/bench/run.sh"
[ -x "$bench" ] || { echo "compare-builds: $bench not found (see ../shared/bench/README.md)" >&2; exit 1; }
site_dir="${BENCH_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/crawldeck-bench}/data/$site_name"

for build in "${builds[@]}"; do
    binary=$(realpath "${build#*=}")
    [ -x "$binary" ] || { echo "compare-builds: ${build#*=} is not an executable" >&2; exit 1; }
done

if $threads && ! command -v perf > /dev/null; then
    echo "compare-builds: --threads needs perf (Debian: linux-perf)" >&2
    exit 1
fi

rows=$(mktemp)
profiles=$(mktemp -d)
trap 'rm -rf "$rows" "$profiles"' EXIT
echo "build      pages  cov%  pages/s  cpu_s  rss_MB  dups  robots  other_cpu_s"
for round in $(seq "$rounds"); do
    for build in "${builds[@]}"; do
        name=${build%%=*}
        binary=$(realpath "${build#*=}")
        if [ -d "$site_dir/htdocs" ]; then
            find "$site_dir/htdocs" -type f -print0 | xargs -0 cat > /dev/null
        fi
        profile="$profiles/$name-$round.data"
        wrapper=()
        $threads && wrapper=(perf record -q -F 999 -o "$profile" --)
        # The row run.sh prints for the crawler (columns: see its README).
        row=$("$bench" --site "$site" "$name" -- "${wrapper[@]}" "$binary" crawl --headless \
            --seeds {seeds_file} --data {out_dir}/data --scope any \
            --concurrency {concurrency} --per-host {per_host} --delay 0s \
            --delay-factor 0 --max-pages 1000000 "${extra[@]}" 2>&1 | grep "^$name " || true)
        if [ -z "$row" ]; then
            echo "$name: round $round gave no result row; run $bench by hand to see why" >&2
            continue
        fi
        read -r -a col <<< "$row"
        # name version pages cov% wall_s pages/s cpu_s rss_MB treeMB dups robot 404s rps/h c/h reqs othCPU
        printf '%-9s %6s %5s %8s %6s %7s %5s %7s %12s\n' \
            "$name" "${col[2]}" "${col[3]}" "${col[5]}" "${col[6]}" "${col[7]}" \
            "${col[9]}" "${col[10]}" "${col[15]}" | tee -a "$rows"
        if $threads; then
            perf report -i "$profile" --sort pid -g none --stdio -n 2>/dev/null \
                | awk '/%/ && n < 4 { split($3, t, ":"); printf "  %s %s", t[2], $2; n++ } END { print "" }'
            # Read once: tens of MB each, not kept for the next run.
            rm -f "$profile"
        fi
    done
done

# Medians per build, and each build's ratio to the first one named.
echo
echo "build      runs  median pages/s  median cpu_s  pages/s vs ${builds[0]%%=*}"
first=""
for build in "${builds[@]}"; do
    name=${build%%=*}
    read -r runs pages cpu < <(awk -v name="$name" '
        function median(a, n,   i, j, t) {
            for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
        }
        BEGIN { n = 0 }
        $1 == name { p[n] = $4; c[n] = $5; n++ }
        END { if (n) printf "%d %.1f %.2f\n", n, median(p, n), median(c, n); else print "0 0 0" }' "$rows")
    [ -n "$first" ] || first=$pages
    ratio=$(awk -v a="$pages" -v b="$first" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }')
    printf '%-9s %5s %15s %13s %10s\n' "$name" "$runs" "$pages" "$cpu" "$ratio"
done

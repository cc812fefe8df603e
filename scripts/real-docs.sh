#!/usr/bin/env bash
# Crawl real documentation sites from Debian's packages and check that the
# crawler neither misses their pages nor takes them for traps (issue #29).
#
#   scripts/real-docs.sh [options] CRAWLDECK_BINARY
#
# Installs the packages if missing, serves each site with nginx on
# 127.0.0.1 (a port per site) inside a private network namespace, computes
# the pages reachable from each site's index with an independent parser
# (scripts/real_docs.py), crawls each site headless with crawldeck's default
# settings (only the politeness delay is lowered, see --delay), and again with
# the trap detector at twice its default sensitivity, and prints per site:
# reachable pages, pages fetched, coverage, trap alerts, quarantined URLs,
# near-duplicate groups and how many of them are genuine.
#
# Options:
#   --sites a,b,c     sites to run (default: all): python, postgresql, git,
#                     rust-std, commons-math3 (javadoc), eigen (doxygen)
#   --default-only    only the pass with default detector settings
#   --sensitive-only  only the pass with twice the detector's sensitivity
#   --out DIR         where crawls and results go (default: a new temporary dir)
#   --timeout SECS    cap on each crawl, and on each site's reachability and
#                     report steps (default 900); a crawl is stopped with
#                     SIGTERM (it checkpoints) and reported as it is
#   --delay DURATION  per-host delay between requests (default 0ms: the
#                     default 1s would take hours for 20k pages on loopback)
#   --no-install      do not install missing packages
#
# Needs root: run as another user, it starts itself again through sudo.
# Exit 0 when every site met the target (100 % coverage, 0 alerts,
# 0 quarantined, every near-duplicate group genuine), 1 otherwise, 2 on a
# usage error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
helper="$here/real_docs.py"

# name|package|document root|index path|port
SITES=(
  "python|python3.11-doc|/usr/share/doc/python3.11/html|/index.html|18001"
  "postgresql|postgresql-doc-15|/usr/share/doc/postgresql-doc-15/html|/index.html|18002"
  "git|git-doc|/usr/share/doc/git-doc|/index.html|18003"
  "rust-std|rust-doc|/usr/share/doc/rust-doc/html|/std/index.html|18004"
  "commons-math3|libcommons-math3-java-doc|/usr/share/doc/libcommons-math3-java/api|/index.html|18005"
  "eigen|libeigen3-doc|/usr/share/doc/libeigen3-dev/html|/index.html|18006"
)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

orig_args=("$@")
want="" passes="default sensitive" out="" timeout_s=900 delay="0ms" install=1 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sites) want="${2:?}"; shift 2 ;;
    --default-only) passes="default"; shift ;;
    --sensitive-only) passes="sensitive"; shift ;;
    --out) out="${2:?}"; shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --delay) delay="${2:?}"; shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) usage ;;
    -*) echo "real-docs: unknown option $1" >&2; usage ;;
    *) [ -z "$bin" ] || usage; bin="$1"; shift ;;
  esac
done
[ -n "$bin" ] || usage
bin=$(readlink -f "$bin")
[ -x "$bin" ] || { echo "real-docs: $bin is not executable" >&2; exit 2; }

# apt-get, `ip netns` and nginx need root; the crawls and their reads then
# run as root too, so one user owns the data directories.
if [ "$(id -u)" != 0 ]; then
  exec sudo -- "$0" "${orig_args[@]}"
fi

selected=()
for s in "${SITES[@]}"; do
  name=${s%%|*}
  if [ -z "$want" ] || [[ ",$want," == *",$name,"* ]]; then selected+=("$s"); fi
done
[ ${#selected[@]} -gt 0 ] || { echo "real-docs: no site matches --sites $want" >&2; exit 2; }

# --- packages
if [ "$install" = 1 ]; then
  missing=()
  for s in "${selected[@]}"; do
    IFS='|' read -r _ pkg _ _ _ <<<"$s"
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  dpkg-query -W -f='${Status}' nginx-light 2>/dev/null | grep -q "install ok installed" \
    || command -v nginx >/dev/null || missing+=(nginx-light)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "real-docs: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

[ -n "$out" ] || out=$(mktemp -d /tmp/real-docs.XXXXXX)
mkdir -p "$out"
out=$(readlink -f "$out")
ns="crawldeck-realdocs-$$"
nginx_pid=""

cleanup() {
  if [ -n "$nginx_pid" ]; then
    kill "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  ip netns delete "$ns" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- nginx in a private network namespace
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
mkdir -p "$out/nginx/tmp"
{
  echo "worker_processes 1;"
  echo "pid $out/nginx/nginx.pid;"
  echo "error_log $out/nginx/error.log;"
  echo "events { worker_connections 512; }"
  echo "http {"
  echo "  include /etc/nginx/mime.types;"
  echo "  default_type application/octet-stream;"
  echo "  access_log off;"
  for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $out/nginx/tmp;"; done
  for s in "${selected[@]}"; do
    IFS='|' read -r name _ root _ port <<<"$s"
    echo "  server { listen 127.0.0.1:$port; server_name $name; root $root; index index.html; }"
  done
  echo "}"
} >"$out/nginx/nginx.conf"
# In the foreground of `timeout`, so it cannot outlive the longest run this
# script can take; stopped by its pid at exit.
npasses=$(wc -w <<<"$passes")
bound=$(( ${#selected[@]} * (npasses * (2 * timeout_s + 60) + timeout_s) + 600 ))
ip netns exec "$ns" timeout "$bound" nginx -c "$out/nginx/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 50); do
  [ -s "$out/nginx/nginx.pid" ] && break
  kill -0 "$nginx_pid" 2>/dev/null || { echo "real-docs: nginx did not start: $(cat "$out/nginx/error.log")" >&2; exit 1; }
  sleep 0.1
done

# --- twice the detector's sensitivity: count thresholds halved, the
# near-duplicate distance doubled (keys as in assets/crawl.toml). The two
# structural limits stay: a run of 2 segments (`/alloc/alloc/`, `/test/test/`
# in rustdoc) and a path 7 deep (`/src/core/up/up/stdarch/crates/…`) are
# ordinary paths, not weaker evidence of a loop.
cat >"$out/sensitive.toml" <<'EOF'
[traps]
max_segment_repeats = 3
max_path_depth = 12
max_query_variants = 100
max_counter_run = 12
max_near_duplicates = 10
near_duplicate_bits = 12
max_new_urls_per_page = 15.0
budget_window = 25
EOF

ok=1
rows_default=() rows_sensitive=()
for s in "${selected[@]}"; do
  IFS='|' read -r name pkg root index port <<<"$s"
  base="http://127.0.0.1:$port"
  version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo '?')
  echo "real-docs: $name ($pkg $version, $root)" >&2
  # The reachable set depends only on the package's files: kept in --out and
  # reused by a later run of the same version (the Rust reference takes minutes).
  reach="$out/$name-${version//[^A-Za-z0-9.+-]/_}.reach.json"
  if [ ! -s "$reach" ]; then
    timeout "$timeout_s" python3 "$helper" reach "$root" "$base" "$index" "$reach.tmp" >&2 \
      || { echo "real-docs: no reachable set for $name" >&2; ok=0; continue; }
    mv "$reach.tmp" "$reach"
  fi
  for pass in $passes; do
    data="$out/$name.$pass"
    rm -rf "$data"
    config=()
    [ "$pass" = sensitive ] && config=(--config "$out/sensitive.toml")
    echo "real-docs: crawling $name ($pass)" >&2
    set +e
    ip netns exec "$ns" timeout -k 30 "$timeout_s" \
      "$bin" crawl --headless "$base$index" --data "$data" --delay "$delay" "${config[@]}" --json \
      >"$data.out" 2>"$data.err"
    rc=$?
    set -e
    [ "$rc" = 0 ] || echo "real-docs: crawl of $name ($pass) exited $rc (124: timed out)" >&2
    timeout "$timeout_s" python3 "$helper" report "$name ($pass)" "$root" "$base" "$reach" "$data" "$data.out" "$bin" "$data.row.json" \
      || { echo "real-docs: no report for $name ($pass)" >&2; ok=0; continue; }
    if [ "$pass" = default ]; then rows_default+=("$data.row.json"); else rows_sensitive+=("$data.row.json"); fi
    python3 - "$data.row.json" <<'EOF' || ok=0
import json, sys
r = json.load(open(sys.argv[1]))["row"]
sys.exit(0 if r["coverage"] == 100.0 and r["alerts"] == 0 and r["quarantined"] == 0
         and r["genuine"] == r["near_groups"] else 1)
EOF
  done
done

echo
if [ ${#rows_default[@]} -gt 0 ]; then
  echo "Default settings (politeness delay $delay):"
  python3 "$helper" table "${rows_default[@]}"
  echo
fi
if [ ${#rows_sensitive[@]} -gt 0 ]; then
  echo "Detector at twice its default sensitivity ($out/sensitive.toml):"
  python3 "$helper" table "${rows_sensitive[@]}"
  echo
fi
echo "crawls and results: $out"
[ "$ok" = 1 ]

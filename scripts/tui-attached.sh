#!/usr/bin/env bash
# A headless crawl with the terminal UI attached in a 120×40 pseudo-terminal
# (`script`) for its whole run, to measure what a viewer costs the crawl on
# the shared bench:
#
#   ../shared/bench/run.sh --site full tui-attached -- "$PWD/scripts/tui-attached.sh" \
#       "$PWD/target/release/crawldeck" {out_dir}/data --seeds {seeds_file} --scope any ...
#
# BINARY DATA_DIR CRAWL_ARGS...; the UI's screen goes to DATA_DIR.tty.
set -u
[ $# -ge 2 ] || { echo "tui-attached: BINARY DATA_DIR CRAWL_ARGS..." >&2; exit 2; }
bin=$1
data=$2
shift 2
"$bin" crawl --headless --data "$data" "$@" 2>/dev/null &
crawl=$!
for _ in $(seq 500); do
    [ -S "$data/control.sock" ] && break
    sleep 0.01
done
# The viewer's input is a FIFO held open here: `script` ends at its input's end.
input="$data.input"
mkfifo "$input"
exec 3<>"$input"
script -qfec "stty cols 120 rows 40; $bin attach $data" /dev/null <&3 > "$data.tty" &
wait $crawl
status=$?
# The viewer ends on SIGTERM, and `script` with it.
pkill -TERM -f -x "$bin attach $data" 2>/dev/null
rm -f "$input"
exit $status

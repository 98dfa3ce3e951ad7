#!/usr/bin/env bash
# The exports stream with bounded memory (issue #52, BENCHMARKS.md "Exports"):
#
#   scripts/export-memory.sh            # 100,000 operations (and 10,000 to compare)
#   N=200000 scripts/export-memory.sh
#
# Starts the reference server on a fresh SQLite file with one tenant holding N
# operations (stablecoin-server/examples/export_memory.rs), then downloads
# GET /v1/exports/operations as CSV and as JSON lines with curl (to /dev/null) while
# sampling the server's resident memory (VmRSS, /proc/<pid>/status) every 20 ms. Prints
# the export's size, the server's RSS before, the peak during, and the growth. A
# bounded export grows the server by a constant (its pages and chunks), whatever N; an
# export that gathered the range in memory would grow by about the export's size.
# Runs on the memory store (records in RAM before the export: the growth is the
# export's own) at 10,000 and N operations, then on SQLite at N (the growth there adds
# the readers' page caches, 64 MiB per connection, 4 readers, which any read of that
# much data fills, and which a second export reuses).
# Dev profile (the machine has no release build); the bound is structural, the absolute
# numbers are the debug build's.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-100000}"
cargo build -p stablecoin-server --example export_memory
BIN=target/debug/examples/export_memory

measure() { # n storage
  local n="$1" storage="$2" out pid base key
  out="$(mktemp)"
  "$BIN" "$n" "$storage" > "$out" &
  pid=$!
  for _ in $(seq 1 600); do grep -q READY "$out" && break; sleep 0.5; done
  read -r _ base key count < <(grep READY "$out")
  for format in csv jsonl csv; do
    local before peak=0 size
    before=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    ( while kill -0 $pid 2>/dev/null; do awk '/VmRSS/ {print $2}' /proc/$pid/status; sleep 0.02; done ) > "$out.rss" &
    local sampler=$!
    size=$(curl -sS -H "X-API-Key: $key" -o /dev/null -w '%{size_download} %{time_total}' \
      "$base/v1/exports/operations?format=$format")
    kill $sampler 2>/dev/null || true; wait $sampler 2>/dev/null || true
    peak=$(sort -n "$out.rss" | tail -1)
    echo "storage=$storage operations=$count format=$format bytes_and_seconds=$size rss_before_kib=$before rss_peak_kib=$peak growth_kib=$((peak - before))"
  done
  kill $pid; wait $pid 2>/dev/null || true
  rm -f "$out" "$out.rss"; rm -rf "${TMPDIR:-/tmp}/export-memory-$pid"
}

measure 10000 memory
measure "$N" memory
measure "$N" sqlite

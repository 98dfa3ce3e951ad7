# Sourced by bench-sustained.sh: CPU quotas and CPU accounting for the processes of a
# benchmark, with Linux control groups (v1 `cpu`/`cpuacct`, or v2 `cpu.max`/`cpu.stat`).
# Needs root (this machine's benches run as root); without a writable cgroup tree
# cg_setup fails with a message.
#
#   cg_setup                   creates the bench's group (once per run of the script)
#   cg_join NAME QUOTA PID...  puts the PIDs (whole processes) in the subgroup NAME,
#                              held to QUOTA cores (e.g. 0.5; empty: no quota); the
#                              processes they fork later stay in it
#   cg_usage_ms NAME           CPU time used by NAME's processes so far, in ms
#   cg_teardown                removes the groups (their processes must have exited)
#
# Why groups, not `taskset`: a quota of half a core is what an operator buys per node
# (a container's CPU limit), and the accounting covers every thread and every child
# (each PostgreSQL backend is a process forked by the postmaster).

CG_NAME="stablecoin-bench-$$"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  CG_V=2; CG_CPU="/sys/fs/cgroup/$CG_NAME"; CG_ACCT="$CG_CPU"
else
  CG_V=1; CG_CPU="/sys/fs/cgroup/cpu/$CG_NAME"; CG_ACCT="/sys/fs/cgroup/cpuacct/$CG_NAME"
fi

cg_setup() {
  if [ "$CG_V" = 2 ]; then
    mkdir -p "$CG_CPU" && echo "+cpu" > "$CG_CPU/cgroup.subtree_control"
  else
    mkdir -p "$CG_CPU" "$CG_ACCT"
  fi || { echo "cannot create control groups under /sys/fs/cgroup (root needed)" >&2; return 1; }
}

cg_join() {
  local name="$1" quota="$2" pid
  shift 2
  mkdir -p "$CG_CPU/$name" "$CG_ACCT/$name"
  if [ -n "$quota" ]; then
    local us
    us="$(awk -v q="$quota" 'BEGIN { printf "%d", q * 100000 }')"
    if [ "$CG_V" = 2 ]; then
      echo "$us 100000" > "$CG_CPU/$name/cpu.max"
    else
      echo 100000 > "$CG_CPU/$name/cpu.cfs_period_us"
      echo "$us" > "$CG_CPU/$name/cpu.cfs_quota_us"
    fi
  fi
  for pid in "$@"; do
    echo "$pid" > "$CG_CPU/$name/cgroup.procs" 2>/dev/null || true
    [ "$CG_V" = 2 ] || echo "$pid" > "$CG_ACCT/$name/cgroup.procs" 2>/dev/null || true
  done
}

cg_usage_ms() {
  [ -d "$CG_ACCT/$1" ] || { echo 0; return; }
  if [ "$CG_V" = 2 ]; then
    awk '/^usage_usec/ {printf "%d", $2 / 1000}' "$CG_ACCT/$1/cpu.stat"
  else
    awk '{printf "%d", $1 / 1000000}' "$CG_ACCT/$1/cpuacct.usage"
  fi
}

cg_teardown() {
  local d
  for d in "$CG_CPU" "$CG_ACCT"; do
    [ -d "$d" ] || continue
    # Anything still inside (a PostgreSQL cluster that outlives the bench) goes back to
    # the root group first.
    for sub in "$d"/*/; do
      [ -f "$sub/cgroup.procs" ] || continue
      while read -r pid; do echo "$pid" > "$(dirname "$d")/cgroup.procs" 2>/dev/null || true; done < "$sub/cgroup.procs"
      rmdir "$sub" 2>/dev/null || true
    done
    rmdir "$d" 2>/dev/null || true
  done
}

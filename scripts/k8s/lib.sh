# shellcheck shell=bash
# Sourced by scripts/k8stest: phases and their times, the processes, network
# namespaces and cgroups the test makes, and their removal on any exit.
# Everything the test makes is named with its pid ($id), and is recorded
# here as it is made, so that cleanup removes exactly that.

id="aj$$"
pids=()       # processes started, each in the test's cgroup
netns=()      # network namespaces made
cg_made=()    # cgroup directories made (each hierarchy), in order of making
phase_names=() phase_secs=()
phase_name="" phase_start=$SECONDS

say() { echo "k8stest: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }

# phase NAME: ends the phase before (its time is recorded) and starts NAME.
phase() {
  if [ -n "$phase_name" ]; then
    phase_names+=("$phase_name") phase_secs+=("$((SECONDS - phase_start))")
    say "-- $phase_name: $((SECONDS - phase_start)) s"
  fi
  phase_name="$1" phase_start=$SECONDS
  [ -z "$1" ] || say "== $1"
}

phase_table() {
  local i
  printf '%-44s %8s\n' phase seconds >&2
  for i in "${!phase_names[@]}"; do printf '%-44s %8s\n' "${phase_names[$i]}" "${phase_secs[$i]}" >&2; done
}

# The cgroup hierarchies: every mounted v1 hierarchy and the unified one.
cg_roots=()
for d in /sys/fs/cgroup/*/; do
  d="${d%/}"
  if [ -f "$d/cgroup.procs" ]; then cg_roots+=("$d"); fi
done
if [ -f /sys/fs/cgroup/cgroup.procs ]; then cg_roots=(/sys/fs/cgroup); fi

# The test's own cgroup: one path that lies at or below this process's
# cgroup in every hierarchy (kubelet's --cgroup-root is one path for all).
own_cgroup() {
  local deepest="/" line path
  while IFS= read -r line; do
    path="${line#*:*:}"
    case "$path" in "$deepest"*) deepest="$path" ;; esac
  done </proc/self/cgroup
  while IFS= read -r line; do
    path="${line#*:*:}"
    case "$deepest/" in "${path%/}/"*) ;; *) die "the cgroups of this process are not nested ($path vs $deepest): cannot pick one --cgroup-root below all of them" ;; esac
  done </proc/self/cgroup
  echo "${deepest%/}"
}

# cg_make PATH: makes PATH (relative to each hierarchy's root) in every
# hierarchy, with each parent it needed, and records what it made.
cg_make() {
  local root rel part dir
  for root in "${cg_roots[@]}"; do
    rel=""
    for part in ${1//\// }; do
      rel="$rel/$part" dir="$root$rel"
      if [ ! -d "$dir" ]; then
        mkdir "$dir"
        cg_made+=("$dir")
        if [ -f "$dir/cpuset.cpus" ]; then
          cat "$(dirname "$dir")/cpuset.cpus" >"$dir/cpuset.cpus"
          cat "$(dirname "$dir")/cpuset.mems" >"$dir/cpuset.mems"
        fi
      fi
    done
  done
}

# start NAME CMD...: CMD in the background, in the test's cgroup "sys"
# (so that everything it starts is found again), output in $tmp/log/NAME.
start() {
  local name="$1"
  shift
  # shellcheck disable=SC2016
  bash -c 'for r in "${@:2:$1}"; do echo $$ >"$r/cgroup.procs"; done; shift $(($1 + 1)); exec "$@"' \
    - "${#cg_roots[@]}" "${cg_roots[@]/%/$cgroup/sys}" "$@" >"$tmp/log/$name" 2>&1 &
  pids+=("$!")
  disown "$!"  # killed at cleanup without the shell's "Killed" notices
  eval "pid_${name//[^A-Za-z0-9]/_}=$!"
}

# in_ns NS CMD...: CMD in network namespace NS, the rest as the caller's
# (not `ip netns exec`, which remounts /sys and loses /sys/fs/cgroup).
in_ns() {
  local ns="$1"
  shift
  nsenter --net="/run/netns/$id-$ns" -- "$@"
}

ns_add() {
  ip netns add "$id-$1"
  netns+=("$id-$1")
  in_ns "$1" ip link set lo up
}

# Every process of the test's cgroup tree, killed until none is left.
kill_tree() {
  local root="$1" tries=0 left p
  [ -d "$root" ] || return 0
  while :; do
    left=0
    while IFS= read -r p; do
      kill -9 "$p" 2>/dev/null || true
      left=1
    done < <(find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null)
    [ "$left" = 1 ] || return 0
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { say "cleanup: processes left in $root"; return 1; }
    sleep 0.1
  done
}

cleanup() {
  local rc=$? root pid ns i dir
  trap - EXIT INT TERM
  set +e
  phase "cleanup"
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  if [ -n "${cgroup:-}" ]; then
    for root in "${cg_roots[@]}"; do
      case "$root" in */pids | */freezer | /sys/fs/cgroup) kill_tree "$root$cgroup" ;; esac
    done
    for root in "${cg_roots[@]}"; do kill_tree "$root$cgroup"; done
    # The cgroups below ours (kubelet's, runc's), deepest first, then
    # those this script made.
    for root in "${cg_roots[@]}"; do
      [ -d "$root$cgroup" ] && find "$root$cgroup" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    for ((i = ${#cg_made[@]} - 1; i >= 0; i--)); do [ ! -d "${cg_made[$i]}" ] || rmdir "${cg_made[$i]}" 2>/dev/null || say "cleanup: cannot remove ${cg_made[$i]}"; done
  fi
  for ns in "${netns[@]}"; do ip netns del "$ns" 2>/dev/null || say "cleanup: cannot remove netns $ns"; done
  if [ -n "${tmp:-}" ] && [ -d "$tmp" ]; then
    # Mounts under $tmp (there should be none outside the nodes' own
    # mount namespaces), deepest first.
    awk -v t="$tmp" '$5 == t || index($5, t "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r dir; do umount -l "$dir"; done
    if [ "$rc" != 0 ] && [ "$rc" != 130 ] && [ "${AGENTJAIL_K8S_KEEP:-0}" != 1 ] && [ -d "$tmp/log" ]; then
      # The logs go with the directory: their ends, for the step's log.
      for dir in "$tmp"/log/*; do
        echo "---- ${dir##*/} (last lines)" >&2
        tail -n 8 "$dir" | cut -c1-240 >&2
      done
    fi
    if [ "${AGENTJAIL_K8S_KEEP:-0}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  fi
  phase ""
  phase_table
  if [ "$rc" = 0 ]; then say "passed"; else say "FAILED (exit $rc)"; fi
  exit "$rc"
}

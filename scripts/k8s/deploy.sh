# shellcheck shell=bash disable=SC2154 # from scripts/k8stest, lib.sh, cluster.sh, start's eval and the eval of manifest.py's output
# Sourced by scripts/k8stest: deploys agentjail as a user would (the image
# imported into each node's containerd, the Secrets made with kubectl,
# deploy/kubernetes/ applied with kubectl apply -k), then runs the checks
# from the client namespace. Needs cluster.sh's helpers.

image=localhost/agentjail:dev

# client CMD...: CMD in the client's network namespace, with a mount
# namespace of its own whose /etc/resolv.conf names the test's DNS server.
client() {
  # shellcheck disable=SC2016
  nsenter --net="/run/netns/$id-cl" -- unshare --mount --propagation private \
    bash -c 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' - "$tmp/client/resolv.conf" "$@"
}

# checks SUBCOMMAND ARGS...: one check of scripts/k8s/checks.py.
checks() {
  client env K8S_NAME="$svc_name" K8S_PORT="$svc_port" K8S_CA="$tmp/tls/ca.crt" K8S_TOKEN_FILE="$tmp/client/token" \
    K8S_NODES="$(pod_ip n1) $(pod_ip n2)" /usr/bin/python3 -X dev "$repo/scripts/k8s/checks.py" "$@"
}

# pod_ip N: the address of the agentjail pod on node N.
pod_ip() {
  kc -n "$ns" get pods -l "$selector" --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].status.podIP}'
}

pod_of() {
  kc -n "$ns" get pods -l "$selector" --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].metadata.name}'
}

# wait_ready N [SECS]: both endpoints (N=2) or one (N=1) ready.
wait_endpoints() {
  local want="$1" secs="${2:-180}" got
  for _ in $(seq "$secs"); do
    got="$(ready_endpoints "$ns" "$svc")"
    [ "$(wc -w <<<"$got")" = "$want" ] && { echo "$got"; return 0; }
    sleep 1
  done
  kc -n "$ns" get pods -o wide >&2
  kc -n "$ns" describe pods >&2
  die "not $want ready endpoints of $svc after $secs s (ready: $got)"
}

# set_tokens LINE...: the tokens Secret holds these "NAME TOKEN" lines.
set_tokens() {
  printf '%s\n' "$@" >"$tmp/tokens"
  kc -n "$ns" create secret generic "$tokens_secret" --from-file="$tokens_key=$tmp/tokens" \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
}

deploy_agentjail() {
  local rendered="$tmp/rendered.yaml" d="$tmp/tls"
  phase "import the image into both containerds"
  # Both at once: each is mostly one core decompressing layers.
  ctr_import n1 "$tmp/agentjail.tar" "$image" &
  ctr_import n2 "$tmp/agentjail.tar" "$image" &
  if ! wait -n || ! wait -n; then die "the image could not be imported"; fi
  phase "deploy agentjail (kubectl apply -k)"
  kc kustomize "$repo/deploy/kubernetes" | kc create --dry-run=client -o json -f - >"$rendered"
  # What the manifests name: the namespace, the headless Service and its
  # port, the DaemonSet's selector, the Secrets it mounts.
  eval "$(/usr/bin/python3 "$repo/scripts/k8s/manifest.py" "$rendered")"
  say "deploy/kubernetes: namespace $ns, Service $svc:$svc_port, DaemonSet $ds, Secrets $tokens_secret ($tokens_key) and $tls_secret"
  svc_name="$svc.$ns.svc.cluster.local"
  mkdir -p "$d" "$tmp/client"
  (
    cd "$d" || exit
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
      -days 2 -subj /CN=agentjail-k8stest-ca 2>/dev/null
    cert tls "/CN=$svc_name" "DNS:$svc_name,DNS:$svc.$ns.svc,DNS:$svc.$ns"
  )
  kc get namespace "$ns" >/dev/null 2>&1 || kc create namespace "$ns" --save-config >/dev/null
  token1="t1-$(openssl rand -hex 24)" token2="t2-$(openssl rand -hex 24)"
  set_tokens "k8stest $token1"
  printf '%s\n' "$token1" >"$tmp/client/token"
  kc -n "$ns" create secret tls "$tls_secret" --cert="$d/tls.crt" --key="$d/tls.key" >/dev/null
  kc apply -k "$repo/deploy/kubernetes" >"$tmp/log/apply"
  wait_endpoints 2 >/dev/null
  printf 'nameserver %s\noptions timeout:1 attempts:2\n' "$client_ip" >"$tmp/client/resolv.conf"
  start dns nsenter --net="/run/netns/$id-cl" -- env AGENTJAIL_DNS_SERVED="$tmp/client/dns-served" \
    /usr/bin/python3 "$repo/scripts/k8s/dns.py" "$client_ip" "$svc_name" \
    "$ns" "$svc" "$bin/kubectl" --kubeconfig "$tmp/pki/admin.kubeconfig"
  # Until the client resolves the Service's name to both pods.
  client /usr/bin/python3 -c '
import socket, sys, time
for _ in range(120):
    try:
        if len({a[4][0] for a in socket.getaddrinfo(sys.argv[1], 0, type=socket.SOCK_STREAM)}) == 2:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.5)
sys.exit("the test'"'"'s DNS server does not answer " + sys.argv[1] + " with two addresses after 60 s")' "$svc_name"
}

# daemon_pid N: the host pid of the agentjail daemon of node N's pod (the
# process named agentjail in its container's cgroup).
daemon_pid() {
  local cid p
  cid="$(kc -n "$ns" get pod "$(pod_of "$1")" -o jsonpath='{.status.containerStatuses[0].containerID}')"
  cid="${cid#*://}"
  while IFS= read -r p; do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentjail ]; then echo "$p"; return 0; fi
  done < <(find "/sys/fs/cgroup/pids$cgroup/$1" -type d -name "*$cid*" -exec cat {}/cgroup.procs \; 2>/dev/null)
  die "no agentjail process in the cgroup of container $cid on $1"
}

restarts() {
  kc -n "$ns" get pod "$(pod_of "$1")" -o jsonpath='{.status.containerStatuses[0].restartCount}'
}

# wait_signal FILE PID: until the check (PID) makes FILE; fails when the
# check ended first.
wait_signal() {
  for _ in $(seq 900); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || { wait "$2"; die "the check ended before it was ready for the test's action"; }
    sleep 0.1
  done
  die "the check was not ready for the test's action in 90 s"
}

# want CHECK: whether AGENTJAIL_K8S_CHECKS (names, default all) has CHECK.
want() {
  case " ${AGENTJAIL_K8S_CHECKS:-spread sessions auth spill kill drain kubelet} " in *" $1 "*) return 0 ;; esac
  return 1
}

checks_run() {
  local c
  for c in spread sessions auth spill kill drain kubelet; do
    if want "$c"; then "check_$c"; else say "check $c left out (AGENTJAIL_K8S_CHECKS)"; fi
  done
}

check_spread() {
  local out
  phase "check: endpoints and spreading"
  checks spread 20
  # The CLI too: agentjail run --url, as a user outside the cluster would.
  out="$(client "$repo/bin/agentjail" run --json --url "https://$svc_name:$svc_port" --token-file "$tmp/client/token" \
    --ca "$tmp/tls/ca.crt" -c 'print(6 * 7)')" || die "agentjail run --url https://$svc_name:$svc_port failed: $out"
  /usr/bin/python3 -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["status"] == "ok" and r["stdout"] == "42\n", r' "$out" ||
    die "agentjail run --url: unexpected result $out"
  say "ok: agentjail run --url https://$svc_name:$svc_port --token-file --ca: status ok, stdout 42"
}

check_sessions() {
  phase "check: sessions and 421"
  checks sessions
}

check_auth() {
  local before
  phase "check: tokens, rotation, plain HTTP"
  checks auth
  before="$(restarts n1) $(restarts n2) $(pod_of n1) $(pod_of n2)"
  set_tokens "k8stest $token1" "k8stest2 $token2"
  checks token "$token2" 200 120
  set_tokens "k8stest2 $token2"
  checks token "$token1" 401 120
  printf '%s\n' "$token2" >"$tmp/client/token"
  checks token "$token2" 200 0
  [ "$(restarts n1) $(restarts n2) $(pod_of n1) $(pod_of n2)" = "$before" ] ||
    die "the pods restarted during the token rotation: $before -> $(restarts n1) $(restarts n2) $(pod_of n1) $(pod_of n2)"
  say "ok: the rotation needed no restart (restarts and pods unchanged: $before)"
}

check_spill() {
  phase "check: one node full, runs spill"
  checks spill 12
}

check_kill() {
  local f="$tmp/client" before pid t0
  phase "check: kill -9 of n1's daemon"
  before="$(restarts n1)"
  rm -f "$f/ready" "$f/killed" "$f/back"
  checks kill "$f/ready" "$f/killed" "$f/back" &
  t0=$!
  wait_signal "$f/ready" "$t0"
  pid="$(daemon_pid n1)"
  kill -9 "$pid"
  touch "$f/killed"
  say "killed n1's daemon (pid $pid)"
  for _ in $(seq 120); do
    [ "$(restarts n1)" != "$before" ] && [ "$(wc -w <<<"$(ready_endpoints "$ns" "$svc")")" = 2 ] && break
    sleep 1
  done
  [ "$(restarts n1)" != "$before" ] || die "kubelet did not restart n1's daemon in 120 s"
  say "kubelet restarted n1's daemon (restarts $before -> $(restarts n1))"
  touch "$f/back"
  wait "$t0" || die "the kill check failed"
  sweep_check n1
}

check_drain() {
  local f="$tmp/client" before t0
  phase "check: n1's pod deleted (drain)"
  rm -f "$f/ready" "$f/back"
  checks drain "$f/ready" "$f/back" &
  t0=$!
  wait_signal "$f/ready" "$t0"
  before="$(pod_of n1)"
  kc -n "$ns" delete pod "$before" --wait=false >/dev/null
  for _ in $(seq 180); do
    [ "$(pod_of n1)" != "$before" ] && [ "$(wc -w <<<"$(ready_endpoints "$ns" "$svc")")" = 2 ] && break
    sleep 1
  done
  say "n1's pod $before replaced by $(pod_of n1)"
  touch "$f/back"
  wait "$t0" || die "the drain check failed"
}

check_kubelet() {
  local f="$tmp/client" t0 left ip got
  phase "check: n2's kubelet stopped"
  ip="$(pod_ip n2)"
  got="$(wait_endpoints 2 120)"
  rm -f "$f/ready" "$f/left"
  checks kubelet "$f/ready" "$f/left" 30 "$f/dns-served" &
  t0=$!
  wait_signal "$f/ready" "$t0"
  kill "$pid_kubelet_n2"
  left=$SECONDS
  say "stopped n2's kubelet (ready endpoints: $got)"
  # n2's pod (its daemon still runs) leaves the ready set when the node
  # controller finds n2 NotReady (node-monitor-grace-period).
  for _ in $(seq 240); do
    got="$(ready_endpoints "$ns" "$svc")"
    case " $got " in *" $ip "*) ;; *) break ;; esac
    sleep 0.5
  done
  case " $got " in *" $ip "*) die "n2's endpoint $ip is still ready 120 s after its kubelet stopped" ;; esac
  touch "$f/left"
  say "n2's endpoint $ip left the ready set $((SECONDS - left)) s after its kubelet stopped (node n2: $(kc get node n2 -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'); ready: $got)"
  wait "$t0" || die "the kubelet check failed"
}

# sweep_check N: below node N's pod cgroup, in every hierarchy, only the
# cgroups of its running containers (the daemon's and the sandbox's): the
# killed daemon's container and its jails left none. Prints what the new
# daemon's container holds below it.
sweep_check() {
  local uid live holder root pod dir bad=() inner=()
  uid="$(kc -n "$ns" get pod "$(pod_of "$1")" -o jsonpath='{.metadata.uid}')"
  holder="holder_$1" holder="${!holder}"
  sleep 2
  live=" $(nsenter -t "$holder" -m -n -- ctr -a "$tmp/$1/containerd.sock" -n k8s.io tasks ls | awk '$3 == "RUNNING" {printf "%s ", $1}')"
  for root in "${cg_roots[@]}"; do
    while IFS= read -r pod; do
      for dir in "$pod"/*/; do
        [ -d "$dir" ] || continue
        dir="${dir%/}"
        case "$live" in *" $(basename "$dir") "*) mapfile -t -O "${#inner[@]}" inner < <(cd "$dir" && find . -mindepth 1 -type d) ;; *) bad+=("$dir") ;; esac
      done
    done < <(find "$root$cgroup/$1" -type d -name "pod$uid" 2>/dev/null)
  done
  ((${#bad[@]} == 0)) || die "cgroups left below $1's pod after the kill: ${bad[*]}"
  say "ok: below $1's pod cgroup, in every hierarchy, only its running containers' cgroups (below them now: $(printf '%s\n' "${inner[@]}" | sort -u | tr '\n' ' '))"
}

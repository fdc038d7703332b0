# shellcheck shell=bash disable=SC2154 # $pause_image from cluster.sh, $pid_kubelet_n2 from start's eval
# Sourced by scripts/k8stest --cluster-only: a DaemonSet of the pause image
# behind a headless Service, to check the cluster itself: one pod a node,
# both endpoints ready, a stopped kubelet's endpoint not ready.
placeholder_check() {
  local i ready
  kc apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Service
metadata: {name: placeholder, namespace: default}
spec: {clusterIP: None, selector: {app: placeholder}, ports: [{port: 8443}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: placeholder, namespace: default}
spec:
  selector: {matchLabels: {app: placeholder}}
  template:
    metadata: {labels: {app: placeholder}}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: pause, image: "$pause_image", imagePullPolicy: Never}]
EOF2
  for i in $(seq 120); do
    ready="$(ready_endpoints default placeholder)"
    [ "$(wc -w <<<"$ready")" = 2 ] && break
    sleep 1
  done
  [ "$(wc -w <<<"$ready")" = 2 ] || { kc get pods -o wide >&2; kc describe pods >&2; die "the placeholder DaemonSet has not two ready endpoints"; }
  say "ok: two ready endpoints: $ready"
  kill "$pid_kubelet_n2"
  wait "$pid_kubelet_n2" 2>/dev/null || true
  for i in $(seq 60); do
    ready="$(ready_endpoints default placeholder)"
    [ "$(wc -w <<<"$ready")" = 1 ] && break
    sleep 1
  done
  [ "$(wc -w <<<"$ready")" = 1 ] || die "n2's kubelet stopped, but its endpoint is still ready after 60 s"
  say "ok: n2's kubelet stopped: its endpoint left the ready set after $i s ($ready left)"
}

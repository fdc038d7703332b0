# shellcheck shell=bash disable=SC2154 # $tmp, $bin, $cgroup from scripts/k8stest, $id from lib.sh, $pid_* from start's eval
# Sourced by scripts/k8stest: brings up a two-node Kubernetes cluster on
# this machine, all of it in network namespaces, cgroups and a directory
# the test made. Needs lib.sh's helpers and $tmp, $bin, $cgroup.
#
# Network (no route outward anywhere; addresses exist only in these
# namespaces):
#   $id-ctl  etcd, API server, controller manager, scheduler; bridge br0
#            10.200.0.1/24 joining the others
#   $id-n1   node n1: 10.200.0.11, pods 10.201.1.0/24 (CNI bridge cni0)
#   $id-n2   node n2: 10.200.0.12, pods 10.201.2.0/24
#   $id-cl   the client: 10.200.0.20; the test's DNS server listens there
# Each node also has a mount namespace of its own (a private /run,
# /var/log, /var/lib, and kubelet's kernel tunables as files), held by a
# sleeping process, in which its containerd and kubelet run.

api=10.200.0.1
node_ip_n1=10.200.0.11 node_ip_n2=10.200.0.12 client_ip=10.200.0.20
pod_cidr_n1=10.201.1.0/24 pod_cidr_n2=10.201.2.0/24
pause_image=localhost/agentjail-k8stest-pause:v1

kc() { in_ns ctl "$bin/kubectl" --kubeconfig "$tmp/pki/admin.kubeconfig" "$@"; }

net_up() {
  local n
  ns_add ctl
  in_ns ctl ip link add br0 type bridge
  in_ns ctl ip addr add "$api/24" dev br0
  in_ns ctl ip link set br0 up
  for n in n1 n2 cl; do
    ns_add "$n"
    ip -n "$id-ctl" link add "v-$n" type veth peer name eth0 netns "$id-$n"
    in_ns ctl ip link set "v-$n" master br0 up
  done
  in_ns n1 ip addr add "$node_ip_n1/24" dev eth0
  in_ns n2 ip addr add "$node_ip_n2/24" dev eth0
  in_ns cl ip addr add "$client_ip/24" dev eth0
  for n in n1 n2 cl; do in_ns "$n" ip link set eth0 up; done
  in_ns n1 ip route add "$pod_cidr_n2" via "$node_ip_n2"
  in_ns n2 ip route add "$pod_cidr_n1" via "$node_ip_n1"
  for n in ctl cl; do
    in_ns "$n" ip route add "$pod_cidr_n1" via "$node_ip_n1"
    in_ns "$n" ip route add "$pod_cidr_n2" via "$node_ip_n2"
  done
  for n in n1 n2; do in_ns "$n" sysctl -qw net.ipv4.ip_forward=1; done
}

# pki: a CA, the API server's certificate, one client certificate for the
# components and kubectl (system:masters: a test cluster, no RBAC per
# component), the service account key.
pki() {
  local d="$tmp/pki"
  mkdir -p "$d"
  (
    cd "$d" || exit
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
      -days 2 -subj /CN=k8stest-ca 2>/dev/null
    cert apiserver /CN=kube-apiserver "IP:$api,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    cert admin "/O=system:masters/CN=k8stest-admin" "DNS:admin"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cat >admin.kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
- name: k8stest
  cluster: {server: "https://$api:6443", certificate-authority: "$d/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$d/admin.crt", client-key: "$d/admin.key"}
contexts:
- name: k8stest
  context: {cluster: k8stest, user: admin}
current-context: k8stest
EOF
  )
}

# cert NAME SUBJECT SANS: NAME.crt and NAME.key, signed by ca in the cwd.
cert() {
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3") 2>/dev/null
}

control_plane() {
  local d="$tmp/pki"
  mkdir -p "$tmp/etcd"
  start etcd nsenter --net="/run/netns/$id-ctl" -- etcd --name k8stest --data-dir "$tmp/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster k8stest=http://127.0.0.1:2380
  start apiserver nsenter --net="/run/netns/$id-ctl" -- "$bin/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address="$api" --advertise-address="$api" --secure-port=6443 --cert-dir="$tmp/apiserver" \
    --tls-cert-file="$d/apiserver.crt" --tls-private-key-file="$d/apiserver.key" --client-ca-file="$d/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$d/sa.pub" \
    --service-account-signing-key-file="$d/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
    --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate="$d/admin.crt" --kubelet-client-key="$d/admin.key" --kubelet-preferred-address-types=InternalIP
  for _ in $(seq 120); do
    kc get --raw /readyz >/dev/null 2>&1 && break
    kill -0 "$pid_apiserver" 2>/dev/null || { tail -20 "$tmp/log/apiserver" "$tmp/log/etcd" >&2; die "the API server exited"; }
    sleep 0.5
  done
  kc get --raw /readyz >/dev/null || { tail -20 "$tmp/log/apiserver" >&2; die "the API server is not ready after 60 s"; }
  # Short grace periods: a node whose kubelet stops is NotReady (and its
  # pods' endpoints not ready) within seconds.
  start controller-manager nsenter --net="/run/netns/$id-ctl" -- "$bin/kube-controller-manager" --kubeconfig="$d/admin.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=false \
    --service-account-private-key-file="$d/sa.key" --root-ca-file="$d/ca.crt" \
    --node-monitor-period=1s --node-monitor-grace-period=8s
  start scheduler nsenter --net="/run/netns/$id-ctl" -- "$bin/kube-scheduler" --kubeconfig="$d/admin.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false
}

# node N: its mount namespace, containerd and kubelet.
node() {
  local n="$1" d="$tmp/$1" ip cidr holder
  ip="node_ip_$n" ip="${!ip}" cidr="pod_cidr_$n" cidr="${!cidr}"
  mkdir -p "$d"/{cni,ipam,kubelet,runc,tunables,containerd,plugins}
  cg_make "$cgroup/$n"
  # kubelet checks these kernel settings and, unless they already hold,
  # sets them host-wide: here it reads files that hold them.
  printf '1\n' >"$d/tunables/overcommit_memory"
  printf '0\n' >"$d/tunables/panic_on_oom"
  printf '10\n' >"$d/tunables/panic"
  printf '1\n' >"$d/tunables/panic_on_oops"
  printf '1000000\n' >"$d/tunables/root_maxkeys"
  printf '25000000\n' >"$d/tunables/root_maxbytes"
  # shellcheck disable=SC2016
  start "holder-$n" nsenter --net="/run/netns/$id-$n" -- unshare --mount --propagation private bash -c '
    set -e
    for m in /run /var/log /var/lib; do mount -t tmpfs -o mode=755 "k8stest-'"$n"'" "$m"; done
    t='"$d/tunables"'
    mount --bind "$t/overcommit_memory" /proc/sys/vm/overcommit_memory
    mount --bind "$t/panic_on_oom" /proc/sys/vm/panic_on_oom
    mount --bind "$t/panic" /proc/sys/kernel/panic
    mount --bind "$t/panic_on_oops" /proc/sys/kernel/panic_on_oops
    mount --bind "$t/root_maxkeys" /proc/sys/kernel/keys/root_maxkeys
    mount --bind "$t/root_maxbytes" /proc/sys/kernel/keys/root_maxbytes
    touch '"$d/ready"'
    exec sleep infinity'
  for _ in $(seq 50); do [ -e "$d/ready" ] && break; sleep 0.1; done
  [ -e "$d/ready" ] || { cat "$tmp/log/holder-$n" >&2; die "node $n: its mount namespace could not be set up"; }
  holder="pid_holder_$n" holder="${!holder}"
  eval "holder_$n=$holder"
  cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  disable_apparmor = true
  # No CAP_SYS_RESOURCE in some sandboxes (CI here): no oom_score_adj
  # below containerd's own, or runc fails to start any container.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
  cat >"$d/cni/10-k8stest.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "k8stest", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$d/ipam", "ranges": [[{"subnet": "$cidr"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
EOF
  printf 'nameserver 127.0.0.1\n' >"$d/resolv.conf"
  kubelet_config "$n" "$ip"
  start "containerd-$n" nsenter -t "$holder" -m -n -- containerd --config "$d/containerd.toml"
  for _ in $(seq 100); do [ -S "$d/containerd.sock" ] && break; sleep 0.1; done
  [ -S "$d/containerd.sock" ] || { tail -20 "$tmp/log/containerd-$n" >&2; die "node $n: containerd did not start"; }
  ctr_import "$n" "$tmp/pause.tar" "$pause_image"
}

# kubelet_config N IP: node N's kubelet configuration file.
kubelet_config() {
  local n="$1" ip="$2" d="$tmp/$1"
  cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$ip"
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: "unix://$d/containerd.sock"
cgroupDriver: cgroupfs
cgroupRoot: "$cgroup/$n"
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failSwapOn: false
failCgroupV1: false
protectKernelDefaults: true
makeIPTablesUtilChains: false
podLogsDir: "$d/pod-logs"
volumePluginDir: "$d/plugins"
resolvConf: "$d/resolv.conf"
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$tmp/pki/ca.crt"}
authorization: {mode: AlwaysAllow}
syncFrequency: 5s
# The node controller's grace period is 8 s (control_plane): the node's
# heartbeat must come well within it, or a healthy node is NotReady for
# a moment every time, and its pods' endpoints with it. The lease is
# renewed every quarter of its duration (1 s), the status sent every 4 s;
# with the defaults (10 s each) both nodes flapped every 10 s.
nodeLeaseDurationSeconds: 4
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 4s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "1Mi", "nodefs.available": "0%", "imagefs.available": "0%", "nodefs.inodesFree": "0%"}
serializeImagePulls: false
EOF
}

# kubelet_start N: (again) starts node N's kubelet.
kubelet_start() {
  local n="$1" d="$tmp/$1" ip holder
  ip="node_ip_$n" ip="${!ip}" holder="holder_$n" holder="${!holder}"
  start "kubelet-$n" nsenter -t "$holder" -m -n -- "$bin/kubelet" --config="$d/kubelet.yaml" \
    --kubeconfig="$tmp/pki/admin.kubeconfig" --root-dir="$d/kubelet" --hostname-override="$n" --node-ip="$ip"
}

# ctr_import N ARCHIVE NAME: loads an OCI archive into node N's containerd
# (the k8s.io namespace, which its CRI uses) and checks NAME is there.
ctr_import() {
  local n="$1" holder images
  holder="holder_$n" holder="${!holder}"
  nsenter -t "$holder" -m -n -- ctr -a "$tmp/$n/containerd.sock" -n k8s.io images import "$2" >/dev/null ||
    die "node $n: ctr could not import $2"
  images="$(nsenter -t "$holder" -m -n -- ctr -a "$tmp/$n/containerd.sock" -n k8s.io images ls -q)"
  grep -qxF "$3" <<<"$images" || die "node $n: $3 is not among the images after importing $2: $(tr '\n' ' ' <<<"$images")"
}

# pause_image_build: the sandbox image, from scripts/k8s/pause.c.
pause_image_build() {
  local d="$tmp/pause"
  mkdir -p "$d"
  gcc -static -O2 -o "$d/pause" scripts/k8s/pause.c
  umoci init --layout "$d/oci"
  umoci new --image "$d/oci:v1"
  umoci unpack --image "$d/oci:v1" "$d/bundle" >/dev/null
  cp "$d/pause" "$d/bundle/rootfs/pause"
  umoci repack --image "$d/oci:v1" "$d/bundle" >/dev/null
  umoci config --image "$d/oci:v1" --config.entrypoint /pause --config.user 65535:65535
  # ctr names an image of an OCI archive by its io.containerd.image.name.
  python3 - "$d/oci/index.json" "$pause_image" <<'EOF'
import json, sys
p, name = sys.argv[1:]
i = json.load(open(p))
for m in i["manifests"]:
    m.setdefault("annotations", {})["io.containerd.image.name"] = name
json.dump(i, open(p, "w"))
EOF
  tar -C "$d/oci" -cf "$tmp/pause.tar" .
}

nodes_ready() {
  for _ in $(seq 180); do
    [ "$(kc get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True)" = 2 ] && return 0
    sleep 1
  done
  kc get nodes -o wide >&2 || true
  tail -30 "$tmp/log/kubelet-n1" >&2
  die "the two nodes are not Ready after 180 s"
}

# ready_endpoints NAMESPACE SERVICE: the ready addresses of SERVICE.
ready_endpoints() {
  kc -n "$1" get endpointslices -l "kubernetes.io/service-name=$2" \
    -o jsonpath='{range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}' 2>/dev/null || true
}

"""Reads `kubectl kustomize deploy/kubernetes` (the manifests a user
applies) and prints, as shell assignments, what scripts/k8stest needs to
know of them: the namespace, the headless Service and its port, the
DaemonSet and its selector, and the Secrets the DaemonSet mounts (the one
holding the tokens file and its key, the TLS one).
    python3 manifest.py RENDERED.yaml
Only the standard library: the rendered YAML is parsed by kubectl itself
into JSON first (kubectl create --dry-run=client -o json), so here it is
a sequence of JSON objects (or a List)."""

import json
import shlex
import sys

text, items, pos, dec = open(sys.argv[1]).read(), [], 0, json.JSONDecoder()
while True:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos == len(text):
        break
    doc, pos = dec.raw_decode(text, pos)
    items += doc["items"] if doc.get("kind") == "List" else [doc]
svc = next(i for i in items if i["kind"] == "Service" and i["spec"].get("clusterIP") == "None")
ds = next(i for i in items if i["kind"] == "DaemonSet")
spec = ds["spec"]["template"]["spec"]
secrets = {}
for v in spec.get("volumes", []):
    if "secret" in v:
        secrets[v["name"]] = v["secret"]
    for src in (v.get("projected") or {}).get("sources", []):
        if "secret" in src:
            secrets[v["name"]] = src["secret"]
tokens = tls = None
for name, sec in secrets.items():
    keys = [it["key"] for it in sec.get("items", [])]
    if "tls.crt" in keys or "tls" in name or "tls" in sec["secretName"]:
        tls = sec["secretName"]
    else:
        tokens = (sec["secretName"], keys[0] if keys else "tokens")
out = {
    "ns": ds["metadata"].get("namespace", "default"),
    "svc": svc["metadata"]["name"],
    "svc_port": str(svc["spec"]["ports"][0]["port"]),
    "ds": ds["metadata"]["name"],
    "selector": ",".join(f"{k}={v}" for k, v in ds["spec"]["selector"]["matchLabels"].items()),
    "tokens_secret": tokens[0] if tokens else "",
    "tokens_key": tokens[1] if tokens else "",
    "tls_secret": tls or "",
}
for k, v in out.items():
    print(f"{k}={shlex.quote(v)}")

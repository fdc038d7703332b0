// Package deploy holds the files users apply or build (deploy/kubernetes,
// deploy/image); its tests check them without a cluster: the manifests
// parse, name what the configuration names, and agree with it on ports,
// paths, grace and memory; the configuration passes the daemon's own
// validation; the image's package list has one source.
package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"agentjail/daemon"
)

// obj is one decoded YAML document.
type obj = map[string]any

// get walks keys (map keys, or list indexes as ints) down from v; nil when
// one is missing.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(obj)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func list(v any) []any { l, _ := v.([]any); return l }

// docs decodes every YAML document of a file.
func docs(t *testing.T, file string) []obj {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []obj
	for {
		var d obj
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, file)
		if d != nil {
			out = append(out, d)
		}
	}
}

// manifests is deploy/kubernetes: the objects of each YAML file by kind,
// the kustomization, and the configuration.
type manifests struct {
	kustomization obj
	byKind        map[string][]obj
	config        *daemon.Config
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{byKind: map[string][]obj{}}
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		for _, d := range docs(t, f) {
			kind, _ := d["kind"].(string)
			require.NotEmpty(t, kind, "%s: a document without kind", f)
			require.NotEmpty(t, get(d, "apiVersion"), "%s: %s without apiVersion", f, kind)
			if kind == "Kustomization" {
				m.kustomization = d
				continue
			}
			require.NotEmpty(t, get(d, "metadata", "name"), "%s: %s without metadata.name", f, kind)
			m.byKind[kind] = append(m.byKind[kind], d)
		}
	}
	require.NotNil(t, m.kustomization, "kubernetes/kustomization.yaml")
	cfg, err := daemon.LoadConfig("kubernetes/config.toml")
	require.NoError(t, err, "kubernetes/config.toml must pass the daemon's validation")
	m.config = cfg
	return m
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	return b
}

func (m *manifests) one(t *testing.T, kind string) obj {
	t.Helper()
	require.Len(t, m.byKind[kind], 1, "one %s", kind)
	return m.byKind[kind][0]
}

// TestKustomizationNamesItsFiles: every resource and generator file
// exists; the Secrets' examples are not applied; the image entry is the
// DaemonSet's image, IfNotPresent.
func TestKustomizationNamesItsFiles(t *testing.T) {
	m := load(t)
	k := m.kustomization
	assert.Equal(t, "agentjail", get(k, "namespace"))
	for _, r := range list(get(k, "resources")) {
		assert.FileExists(t, filepath.Join("kubernetes", r.(string)))
		assert.NotContains(t, r, "example", "a Secret example holds placeholders: never applied")
	}
	gen := get(k, "configMapGenerator", 0)
	assert.Equal(t, "agentjail-config", get(gen, "name"))
	assert.Equal(t, []any{"config.toml"}, get(gen, "files"))
	ds := m.one(t, "DaemonSet")
	c := get(ds, "spec", "template", "spec", "containers", 0)
	image := get(c, "image").(string)
	assert.Equal(t, "localhost/agentjail:dev", image)
	assert.Equal(t, "IfNotPresent", get(c, "imagePullPolicy"))
	img := get(k, "images", 0)
	assert.Equal(t, strings.Split(image, ":")[0], get(img, "name"), "the images entry must name the DaemonSet's image")
	assert.Equal(t, "dev", get(img, "newTag"))
}

// TestManifestsMatchTheConfig: the DaemonSet mounts the ConfigMap where
// the image's command reads it, and the Secrets where config.toml's
// [remote] names its files, with the keys the Secrets have; ports agree.
func TestManifestsMatchTheConfig(t *testing.T) {
	m := load(t)
	r := m.config.Remote
	require.NotEmpty(t, r.Listen)
	require.False(t, r.InsecurePlaintext)
	ds := m.one(t, "DaemonSet")
	pod := get(ds, "spec", "template", "spec")
	c := get(pod, "containers", 0)

	// Where each volume is mounted.
	mounts := map[string]obj{}
	for _, v := range list(get(c, "volumeMounts")) {
		mounts[get(v, "name").(string)] = v.(obj)
	}
	// Each file the daemon reads: the volume and key that give it.
	secretKeys := map[string][]string{}
	for _, s := range m.secretExamples(t) {
		name := get(s, "metadata", "name").(string)
		for k := range get(s, "stringData").(obj) {
			secretKeys[name] = append(secretKeys[name], k)
		}
	}
	assert.ElementsMatch(t, []string{"tls.crt", "tls.key"}, secretKeys["agentjail-tls"], "kubectl create secret tls makes these keys")
	assert.Equal(t, []string{"tokens"}, secretKeys["agentjail-tokens"])
	files := map[string]string{r.TLSCert: "agentjail-tls", r.TLSKey: "agentjail-tls", r.TokensFile: "agentjail-tokens"}
	for file, secret := range files {
		found := false
		for _, v := range list(get(pod, "volumes")) {
			if get(v, "secret", "secretName") != secret {
				continue
			}
			mt := mounts[get(v, "name").(string)]
			require.NotNil(t, mt, "volume of %s not mounted", secret)
			assert.Nil(t, mt["subPath"], "%s: a subPath mount never sees the Secret change", secret)
			assert.Equal(t, path.Dir(file), mt["mountPath"], "config.toml reads %s from Secret %s", file, secret)
			assert.Contains(t, secretKeys[secret], path.Base(file), "Secret %s has no key %s", secret, path.Base(file))
			// 0400: yaml reads the octal literal as 256.
			assert.Equal(t, 0o400, get(v, "secret", "defaultMode"), "%s: the daemon runs as root and warns of a world-readable token file", secret)
			found = true
		}
		assert.True(t, found, "no volume of Secret %s for %s", secret, file)
	}
	// The configuration, where the image's command reads it.
	var cfgVol obj
	for _, v := range list(get(pod, "volumes")) {
		if get(v, "configMap", "name") == "agentjail-config" {
			cfgVol = v.(obj)
		}
	}
	require.NotNil(t, cfgVol, "the ConfigMap agentjail-config (configMapGenerator) is a volume")
	mt := mounts[cfgVol["name"].(string)]
	assert.Equal(t, "config.toml", mt["subPath"])
	assert.Equal(t, daemon.DefaultConfigPath, mt["mountPath"])
	assert.Contains(t, string(mustRead(t, "image/Dockerfile")), `CMD ["serve", "--config", "`+daemon.DefaultConfigPath+`"]`)

	// One port everywhere: listen, containerPort, probes, Service.
	_, port, _ := strings.Cut(r.Listen, ":")
	p, _ := strconv.Atoi(port)
	assert.Equal(t, p, get(c, "ports", 0, "containerPort"))
	for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
		assert.Equal(t, "/v1/health", get(c, probe, "httpGet", "path"), probe)
		assert.Equal(t, p, get(c, probe, "httpGet", "port"), probe)
		assert.Equal(t, "HTTPS", get(c, probe, "httpGet", "scheme"), probe)
	}
	svc := m.one(t, "Service")
	assert.Equal(t, "None", get(svc, "spec", "clusterIP"))
	assert.Equal(t, false, get(svc, "spec", "publishNotReadyAddresses"))
	assert.Equal(t, p, get(svc, "spec", "ports", 0, "port"))
	assert.Equal(t, get(ds, "spec", "selector", "matchLabels"), get(svc, "spec", "selector"))

	// AGENTJAIL_ADVERTISE from the pod's IP, the port of listen.
	env := map[string]any{}
	for _, e := range list(get(c, "env")) {
		env[get(e, "name").(string)] = e
	}
	assert.Equal(t, "status.podIP", get(env["POD_IP"], "valueFrom", "fieldRef", "fieldPath"))
	assert.Equal(t, "$(POD_IP):"+port, get(env["AGENTJAIL_ADVERTISE"], "value"))
	assert.Empty(t, r.Advertise, "advertise set in config.toml would hide $AGENTJAIL_ADVERTISE")
	assert.Empty(t, r.Node, "node set in config.toml would give every pod the same name")
}

// TestGraceAndMemoryCoverTheConfig: the preStop drain waits as long as
// the longest run; the termination grace covers that and the shutdown
// grace; the memory limit holds every jail at its most.
func TestGraceAndMemoryCoverTheConfig(t *testing.T) {
	m := load(t)
	cfg := m.config
	pod := get(m.one(t, "DaemonSet"), "spec", "template", "spec")
	c := get(pod, "containers", 0)
	longest := time.Duration(cfg.Limits.Max.WallTimeMs) * time.Millisecond

	cmd := list(get(c, "lifecycle", "preStop", "exec", "command"))
	require.GreaterOrEqual(t, len(cmd), 4)
	assert.Equal(t, []any{"/usr/local/bin/agentjail", "drain", "--wait"}, cmd[:3])
	wait, err := time.ParseDuration(cmd[3].(string))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, wait, longest, "preStop must wait for the longest run (limits.max.wall_time_ms)")

	grace := time.Duration(get(pod, "terminationGracePeriodSeconds").(int)) * time.Second
	assert.GreaterOrEqual(t, grace, wait+time.Duration(cfg.Admission.ShutdownGrace),
		"terminationGracePeriodSeconds must cover the preStop wait and admission.shutdown_grace")
	liveness := get(c, "livenessProbe").(obj)
	assert.Greater(t, liveness["periodSeconds"].(int)*liveness["failureThreshold"].(int), int(grace/time.Second),
		"a draining daemon answers 503: liveness must not restart it before the grace ends")

	limit := quantity(t, get(c, "resources", "limits", "memory").(string))
	jails := int64(cfg.Admission.MaxConcurrent+cfg.Admission.MaxSessions) * cfg.Limits.Max.MemoryBytes
	assert.GreaterOrEqual(t, limit, jails+cfg.Jail.ZygoteMemoryBytes,
		"memory limit: (max_concurrent + max_sessions) x limits.max.memory_bytes + zygote_memory_bytes")
	assert.Equal(t, true, get(c, "securityContext", "privileged"))
}

// quantity reads a Kubernetes memory quantity with a binary suffix.
func quantity(t *testing.T, q string) int64 {
	t.Helper()
	mult := map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
	for s, m := range mult {
		if n, ok := strings.CutSuffix(q, s); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			require.NoError(t, err, q)
			return v * m
		}
	}
	v, err := strconv.ParseInt(q, 10, 64)
	require.NoError(t, err, "quantity %q: want a number with Ki, Mi, Gi or Ti", q)
	return v
}

// secretExamples are the Secret templates; their placeholders are never
// valid (a token line of more than two words, a PEM without base64).
func (m *manifests) secretExamples(t *testing.T) []obj {
	t.Helper()
	out := m.byKind["Secret"]
	require.Len(t, out, 2)
	for _, s := range out {
		if tok, ok := get(s, "stringData", "tokens").(string); ok {
			for _, line := range strings.Split(tok, "\n") {
				if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
					assert.Greater(t, len(f), 2, "the example's token line must not be a valid NAME TOKEN line: %q", line)
				}
			}
		}
	}
	return out
}

// TestOnePackageList: the Dockerfile and scripts/image both read
// deploy/image/packages and name no package themselves; the list has
// what scripts/deps --scientific installs to run jails.
func TestOnePackageList(t *testing.T) {
	var pkgs []string
	for _, line := range strings.Split(string(mustRead(t, "image/packages")), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			require.Regexp(t, `^[a-z0-9][a-z0-9+.-]+$`, line, "one Debian package a line")
			pkgs = append(pkgs, line)
		}
	}
	dockerfile := string(mustRead(t, "image/Dockerfile"))
	script := string(mustRead(t, "../scripts/image"))
	assert.Contains(t, dockerfile, "COPY deploy/image/packages /tmp/packages")
	assert.Regexp(t, `apt-get install -y --no-install-recommends \\\s+\$\(sed -e 's/#\.\*//' /tmp/packages\)`, dockerfile)
	assert.Contains(t, script, "pkgfile=deploy/image/packages")
	assert.Contains(t, script, `--include="$(IFS=,; echo "${pkgs[*]}")"`)
	code := func(s string) string { // the lines that are not comments
		var b strings.Builder
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	for _, p := range pkgs {
		word := regexp.MustCompile(`(^|[\s,"'])` + regexp.QuoteMeta(p) + `($|[\s,"'])`)
		assert.False(t, word.MatchString(code(dockerfile)), "the Dockerfile names package %s: keep it in deploy/image/packages", p)
		if p != "python3" { // scripts/image runs the host's python3 to edit index.json
			assert.False(t, word.MatchString(code(script)), "scripts/image names package %s: keep it in deploy/image/packages", p)
		}
	}
	out, err := exec.Command("../scripts/deps", "--list", "--scientific").Output()
	require.NoError(t, err)
	for _, p := range strings.Fields(string(out)) {
		if p == "gcc" || p == "libc6-dev" || p == "musl-tools" {
			continue // to build bin/agentjail, which the image gets built (static)
		}
		assert.True(t, slices.Contains(pkgs, p), "scripts/deps --scientific installs %s on a host; the image lacks it", p)
	}
}

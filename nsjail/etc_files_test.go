package nsjail

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostEtc copies the single files the standard library reads, with their
// directories first, following a link to a regular file, skipping what
// the host lacks, and nothing else of the directories they are in.
func TestHostEtcCopiesTheLibraryFiles(t *testing.T) {
	etc := t.TempDir()
	for p, c := range map[string]string{"services": "http 80/tcp\n", "mime.types": "text/markdown md\n",
		"ssl/certs/real.crt": "CERTS", "ssl/private/key.pem": "SECRET", "ssl/certs/0a1b2c3d.0": "x", "shadow": "root:x"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(etc, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(etc, p), []byte(c), 0o644))
	}
	require.NoError(t, os.Symlink("real.crt", filepath.Join(etc, "ssl/certs/ca-certificates.crt")))
	e, err := hostEtc(etc, nil)
	require.NoError(t, err)
	var got []string
	for _, en := range e.Entries {
		switch {
		case en.Dir:
			got = append(got, en.Path+"/")
		default:
			got = append(got, en.Path+"="+string(en.Content))
		}
	}
	// No protocols or openssl.cnf on this "host": none in the jail.
	assert.Equal(t, []string{"services=http 80/tcp\n", "mime.types=text/markdown md\n", "ssl/", "ssl/certs/",
		"ssl/certs/ca-certificates.crt=CERTS"}, got)
}

// A jail's libraries find service and protocol names, media types and
// the CA certificates (issue 37 item 3), in runs and sessions.
func TestEtcHasWhatLibrariesRead(t *testing.T) {
	code := `import mimetypes, os, socket, ssl
print("servbyname", socket.getservbyname("http"), socket.getservbyport(443))
print("gai", socket.getaddrinfo("localhost", "http", type=socket.SOCK_STREAM)[0][4][1])
print("proto", socket.getprotobyname("tcp"), socket.getprotobyname("udp"))
print("mime", mimetypes.guess_type("a.md")[0], mimetypes.guess_type("a.webp")[0])
ctx = ssl.create_default_context()
names = {dict(x[0] for x in c["subject"]).get("commonName") for c in ctx.get_ca_certs()}
print("cas", len(names) > 50, "ISRG Root X1" in names, ctx.verify_mode == ssl.CERT_REQUIRED)
print("private", os.path.exists("/etc/ssl/private"))
try: open("/etc/services", "a"); print("write OK")
except OSError as e: print("write", "refused" if e.errno in (13, 30) else e.errno)  # EACCES (a file of its own /etc), EROFS (the shared one)
`
	want := "servbyname 80 https\ngai 80\nproto 6 17\nmime text/markdown image/webp\ncas True True True\nprivate False\nwrite refused\n"
	inRunAndSession(t, code, func(s *Spec) { s.Etc = testEtc() }, func(t *testing.T, out string) {
		assert.Equal(t, want, out)
	})
}

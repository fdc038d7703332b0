package nsjail

// The package's public data types that are plain data, in a file without
// a build tag, so that code which only reads or writes them (the daemon's
// request decoding, its feedback) builds on any system.

// StartMode says how a run's interpreter starts.
type StartMode string

const (
	StartCold StartMode = "cold" // a fresh python3 is exec'd in a fresh jail
	StartWarm StartMode = "warm" // a fork of the environment's zygote, in fresh namespaces
)

// CollectLimits bound what Collect returns. A zero or negative field takes
// DefaultCollectLimits' value.
type CollectLimits struct {
	FileBytes  int64 // largest file collected, in bytes; default 8 MiB
	TotalBytes int64 // all collected files together, in bytes; default 16 MiB
	Files      int   // most files looked at (collected or refused); default 100
}

// DefaultCollectLimits are the limits used for fields left at zero.
func DefaultCollectLimits() CollectLimits {
	return CollectLimits{FileBytes: 8 << 20, TotalBytes: 16 << 20, Files: 100}
}

func (l CollectLimits) withDefaults() CollectLimits {
	d := DefaultCollectLimits()
	if l.FileBytes <= 0 {
		l.FileBytes = d.FileBytes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = d.TotalBytes
	}
	if l.Files <= 0 {
		l.Files = d.Files
	}
	return l
}

// CollectedFile is one entry of the result's "files".
type CollectedFile struct {
	Path    string // relative to /workspace; for a pattern that matched nothing, the pattern
	Size    int64  // bytes; also set on a file refused for its size
	Content []byte // nil exactly when Error is set; empty (not nil) for an empty file
	Error   string // why the file was not collected
}

// MaxCollectPatterns, MaxCollectPatternLen: a request names a few outputs,
// not a file system walk.
const (
	MaxCollectPatterns   = 64
	MaxCollectPatternLen = 1024
)

// Etc is what a jail's /etc holds beyond agentjail's own files (passwd,
// group, hosts, hostname, nsswitch.conf): the entries of the host's /etc
// that the runtime's libraries resolve through (HostEtc), and files the
// daemon adds for an environment (a matplotlib font cache built once).
// It is made once per environment and shared, read-only, by every jail of
// it: its entries are never changed once it is in use.
type Etc struct {
	Entries []EtcEntry // each directory before what it holds
	// MatplotlibCache, when set, names a font cache file among Entries,
	// below "matplotlib/": the jail's matplotlib (MPLCONFIGDIR=/tmp/matplotlib)
	// finds it there through a link, instead of building its own on every
	// run.
	MatplotlibCache string
}

// EtcEntry is one entry of a jail's /etc.
type EtcEntry struct {
	Path    string // below /etc, e.g. "alternatives/libblas.so.3-x86_64-linux-gnu"
	Dir     bool   // a directory (mode 0755)
	Link    string // a symbolic link's target, as on the host
	Content []byte // a regular file's bytes (mode 0444), unless Dir or Link
}

package nsjail

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"agentjail/nsjail/internal/wire"
)

// NewID returns a job id "j-" followed by a ULID: sortable by creation
// time, unique without coordination.
func NewID() string { return "j-" + ulid() }

// NewSessionID returns a session id: "s-" followed by a ULID.
func NewSessionID() string { return "s-" + ulid() }

// ulid is a ULID: 48 bits of milliseconds, 80 random bits, in Crockford's
// base32.
func ulid() string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ" // Crockford's base32
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	_, _ = rand.Read(b[6:])
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// UIDRange hands out a dedicated host uid (used as uid and gid) to each
// running jail, so that no two jails share per-user kernel limits or file
// ownership, and none is root or the caller. Each uid is drawn at random
// from the free ones: the uid a jail sees in its /proc/self/uid_map says
// nothing about how many jails ran before it (sequential uids let a tenant
// count everyone else's runs between two of its own). A uid is never held
// by two running jails of one Runner; it is free again once its jail has
// been waited for (separate processes, such as several `agentjail run`,
// draw from the same range independently and rarely meet).
type UIDRange struct {
	Base, Size uint32

	mu   sync.Mutex
	used map[uint32]bool
}

// Default range of host uids for jails: far above any uid a distribution
// hands out (and above the usual subordinate ranges from 100000).
const (
	DefaultUIDBase = 2_000_000_000
	DefaultUIDSize = 1_000_000
)

// Validate checks the range against the ids that must never be used.
func (r *UIDRange) Validate(callerUID int) error {
	if r.Size == 0 || r.Base == 0 || uint64(r.Base)+uint64(r.Size) > 1<<32-1 {
		return fmt.Errorf("uid range %d+%d: must be non-empty, above 0 and below 2^32-1", r.Base, r.Size)
	}
	if c := uint64(callerUID); c >= uint64(r.Base) && c < uint64(r.Base)+uint64(r.Size) {
		return fmt.Errorf("uid range %d+%d contains the caller's uid %d", r.Base, r.Size, callerUID)
	}
	return nil
}

// Acquire returns a uid no other jail of this Runner holds, drawn at
// random: a random offset, then the next free one after it.
func (r *UIDRange) Acquire() (uint32, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	start := binary.LittleEndian.Uint32(b[:]) % r.Size
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used == nil {
		r.used = map[uint32]bool{}
	}
	for i := uint32(0); i < r.Size; i++ {
		u := r.Base + (start+i)%r.Size
		if !r.used[u] {
			r.used[u] = true
			return u, nil
		}
	}
	return 0, fmt.Errorf("all %d uids of the jail uid range are in use", r.Size)
}

// Release gives a uid back.
func (r *UIDRange) Release(u uint32) {
	r.mu.Lock()
	delete(r.used, u)
	r.mu.Unlock()
}

// jailID is the uid and gid of the jail's user inside its namespace
// (bootstrap_linux.h's AJ_JAIL_ID).
const jailID = wire.JailID

// uidEnv is the environment variable that gives the bootstrap the jail's
// host uid (bootstrap_linux.h's AJ_UID_ENV); zygoteEnv=1 has the
// bootstrap wait for its parent to write its maps (a zygote's, of many
// ids) and keep CAP_SETUID and CAP_SETGID (AJ_ZYGOTE_ENV).
//
// nestEnv, a warm run's, gives the jail's uid as its zygote's user
// namespace maps it: the bootstrap makes the jail's namespaces inside the
// zygote's (AJ_NEST_ENV).
const (
	uidEnv    = wire.UIDEnv
	zygoteEnv = wire.ZygoteEnv
	nestEnv   = wire.NestEnv
)

//go:build !linux || !cgo

package boot

import "agentjail/nsjail/internal/wire"

// Without cgo there is no C, and no jail: nsjail.NewRunner says so.
func init() { wire.Boot = wire.BootNoCgo }

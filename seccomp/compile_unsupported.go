//go:build linux && (!cgo || agentjail_nolibseccomp)

package seccomp

import "fmt"

// Compile needs libseccomp, which needs cgo: this binary was built with
// CGO_ENABLED=0 or, as scripts/build does for the agentjail binary (which
// runs only the embedded program), with the agentjail_nolibseccomp tag.
// Rebuild with cgo and Debian's libseccomp-dev installed, without the tag.
func (p *Policy) Compile() (*Program, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("seccomp: compiling the policy needs libseccomp, but this binary was built without it (no cgo, or the agentjail_nolibseccomp tag): %w", errUnsupported)
}

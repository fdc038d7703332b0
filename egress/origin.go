package egress

// OriginForm is the host a report gives an origin-form request (GET /path,
// which the proxy refuses) whose Host header names no valid host.
const OriginForm = "(origin-form)"

// originTarget is what a report lists for an origin-form request: the
// host its Host header names (port 80 unless it says another), or
// OriginForm.
func originTarget(host string) Target {
	if t, err := parseTarget(host, 80); err == nil {
		return t
	}
	return Target{Host: OriginForm}
}

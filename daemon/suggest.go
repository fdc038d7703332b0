package daemon

// "Did you mean": the configuration's unknown keys (checkTable) and the
// request's unknown fields (unknownField) suggest the name meant.

// nearest is the name closest to k by edit distance, if it is a likely typo.
func nearest(k string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(k, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

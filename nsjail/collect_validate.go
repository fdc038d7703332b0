package nsjail

import (
	"fmt"
	"path"
	"strings"
)

// ValidateCollect checks the request's "collect" patterns: each a relative
// path without ".." (as for "files"), at most MaxCollectPatternLen bytes and
// 255 per element, every element valid path.Match syntax; at most
// MaxCollectPatterns of them. Errors are *FieldError "collect[i]".
func ValidateCollect(globs []string) error {
	if len(globs) > MaxCollectPatterns {
		return fieldErr("collect", "at most %d patterns, got %d", MaxCollectPatterns, len(globs))
	}
	for i, g := range globs {
		if _, err := cleanPattern(g); err != nil {
			return fieldErr(fmt.Sprintf("collect[%d]", i), "%v", err)
		}
	}
	return nil
}

func cleanPattern(g string) (string, error) {
	if len(g) > MaxCollectPatternLen {
		return "", fmt.Errorf("pattern is %d bytes long, at most %d", len(g), MaxCollectPatternLen)
	}
	c, err := CleanRelPath(g)
	if err != nil {
		return "", err
	}
	for _, el := range strings.Split(c, "/") {
		if len(el) > 255 {
			return "", fmt.Errorf("pattern %q has an element longer than 255 bytes", g)
		}
		if _, err := path.Match(el, ""); err != nil {
			return "", fmt.Errorf("pattern %q: %v (path.Match syntax: * ? [a-z] and \\ to escape)", g, err)
		}
	}
	return c, nil
}

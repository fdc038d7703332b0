// Package scriptstest holds the tests of the shell scripts in scripts/
// that no Go package runs: the test runner's steps and the dependency
// sets. It has no code of its own.
package scriptstest

// Package noboot holds only a test: a binary that imports nsjail but not
// nsjail/boot gets none of boot's process-wide effects, and a runner
// that says what to import.
package noboot

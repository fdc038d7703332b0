//go:build !linux

package cgroup

import (
	"fmt"
	"time"
)

// Manager is only implemented on Linux.
type Manager struct{}

// Group is only implemented on Linux.
type Group struct{}

// Open fails with ErrUnsupported outside Linux.
func Open(subtree string) (*Manager, error) {
	return nil, fmt.Errorf("opening cgroup subtree %s: %w", subtree, ErrUnsupported)
}

func (m *Manager) Version() Version                         { return "" }
func (m *Manager) AttachWaits() bool                        { return false }
func (m *Manager) Controllers() []string                    { return nil }
func (m *Manager) Create(string, Resources) (*Group, error) { return nil, ErrUnsupported }
func (m *Manager) Stale() ([]string, error)                 { return nil, ErrUnsupported }
func (m *Manager) Remove(string) error                      { return ErrUnsupported }
func (g *Group) Name() string                               { return "" }
func (g *Group) Resources() Resources                       { return Resources{} }
func (g *Group) Attach(int) error                           { return ErrUnsupported }
func (g *Group) JoinFiles() ([]int, error)                  { return nil, ErrUnsupported }
func (g *Group) Rename(string) error                        { return ErrUnsupported }
func (g *Group) CPUTime() (time.Duration, error)            { return 0, ErrUnsupported }
func (g *Group) Stats() (Stats, error)                      { return Stats{}, ErrUnsupported }
func (g *Group) Kill() error                                { return ErrUnsupported }
func (g *Group) Delete() error                              { return nil }
func (g *Group) OOMEvents() (<-chan struct{}, error)        { return nil, ErrUnsupported }
func (g *Group) OOMKills() (int64, error)                   { return 0, ErrUnsupported }

func (g *Group) SetIdle(bool) error { return ErrUnsupported }

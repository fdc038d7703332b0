package cgroup

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A Manager keeps an O_PATH descriptor of each directory its jail groups
// are made in (the subtree's base in each v1 hierarchy, /X/<subtree> on
// v2), opened once by Open. A group's mkdir, lock, rename and rmdir then
// name one component relative to it, instead of a whole path whose every
// component the kernel looks up again (kernfs) on every run.

// keepBases opens the bases. A base it cannot open is left to whole
// paths (fd -1): the same calls, one lookup per component.
func (m *Manager) keepBases() {
	var dirs []string
	if m.version == V2 {
		dirs = []string{m.v2base}
	} else {
		for _, c := range m.ctrls {
			dirs = append(dirs, c.base)
		}
	}
	m.baseDirs = dirs
	m.baseFDs = make([]int, len(dirs))
	for i, d := range dirs {
		fd, err := openFile(d, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			fd = -1
		}
		m.baseFDs[i] = fd
	}
}

// at is dir as a directory fd and one name in it, when dir's parent is a
// kept base; otherwise AT_FDCWD and dir itself.
func (m *Manager) at(dir string) (int, string) {
	parent := filepath.Dir(dir)
	for i, b := range m.baseDirs {
		if b == parent && m.baseFDs[i] >= 0 {
			return m.baseFDs[i], filepath.Base(dir)
		}
	}
	return unix.AT_FDCWD, dir
}

func (m *Manager) mkdir(dir string) error {
	fd, name := m.at(dir)
	return unix.Mkdirat(fd, name, 0o755)
}

func (m *Manager) rmdir(dir string) error {
	fd, name := m.at(dir)
	return unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
}

// rename renames a group's directory to another of the same base.
func (m *Manager) rename(from, to string) error {
	fd, fromName := m.at(from)
	tfd, toName := m.at(to)
	return unix.Renameat(fd, fromName, tfd, toName)
}

// lockDir is lockDir (fileio_linux.go) of a group's directory, opened
// relative to its base.
func (m *Manager) lockDir(dir string) (int, error) {
	fd, name := m.at(dir)
	return lockDirAt(fd, name, dir)
}

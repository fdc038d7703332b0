package systest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that goroutines may share: a log, or a child
// process's output, that a test reads while it is written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

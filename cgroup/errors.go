package cgroup

import "errors"

// Sentinel errors. Functions wrap them with what they were doing
// ("creating group x: ...: %w"); test with errors.Is.
var (
	// ErrUnsupported: no usable cgroup file system (not Linux, or nothing
	// mounted at /sys/fs/cgroup).
	ErrUnsupported = errors.New("cgroups are not available")

	// ErrNoController: a controller this package needs (or a limit asks
	// for) is not available to this process.
	ErrNoController = errors.New("cgroup controller not available")

	// ErrNotWritable: this process may not create groups below its own
	// cgroup (not root, read-only mount, or not delegated).
	ErrNotWritable = errors.New("cgroup hierarchy not writable")

	// ErrOwnCgroupBusy (v2): the cgroup this process runs in also holds
	// other processes, so it cannot become an inner node with controllers.
	ErrOwnCgroupBusy = errors.New("own cgroup holds other processes")

	// ErrInvalidName: a group or subtree name outside [A-Za-z0-9_.-]+ or
	// containing "..".
	ErrInvalidName = errors.New("invalid cgroup name")

	// ErrInvalidResources: a negative or out-of-range limit.
	ErrInvalidResources = errors.New("invalid resources")

	// ErrExists: Create found a group of that name already there.
	ErrExists = errors.New("cgroup already exists")

	// ErrGroupBusy: Remove found the group held by a live Group (in this
	// or another process); it is not stale.
	ErrGroupBusy = errors.New("cgroup in use by a live process")

	// ErrDeleted: the Group was deleted.
	ErrDeleted = errors.New("cgroup deleted")

	// ErrNotEmpty: processes were still in the group when the bounded
	// kill/wait gave up.
	ErrNotEmpty = errors.New("cgroup still has processes")
)

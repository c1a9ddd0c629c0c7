package store

import (
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// openNoLinks opens p, a path with no symbolic link in it when it was resolved, refusing one
// put anywhere in it since (openat2 RESOLVE_NO_SYMLINKS, Linux 5.6), so that a directory swapped
// for a link leaving the roots after it was checked is not followed. Without openat2 (an older
// kernel, a seccomp filter) only the last component is held (O_NOFOLLOW).
func openNoLinks(p string) (*os.File, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), p), nil
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	default:
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
}

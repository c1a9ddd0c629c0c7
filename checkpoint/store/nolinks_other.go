//go:build !linux

package store

import (
	"os"
	"syscall"
)

// openNoLinks opens p, refusing a symbolic link put in place of its last component since it
// was resolved (O_NOFOLLOW; Linux also refuses one in any component).
func openNoLinks(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

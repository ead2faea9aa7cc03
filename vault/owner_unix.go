//go:build unix

package vault

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/pikod/pikod/contracts"
)

// checkOwner refuses a file or directory that another uid owns: whoever
// owns it could swap the key or the items.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultNotOwner,
			"%s is owned by uid %d, not by you (uid %d)", path, st.Uid, uid)
	}
	return nil
}

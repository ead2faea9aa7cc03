package daemon

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/pikod/pikod/contracts"
)

// storageFull turns a write that failed for want of disk space (ENOSPC,
// EDQUOT) into storage_full: what could not be recorded, how much is free
// where pikod keeps its state, and what to do. what says what the refusal
// means for the caller ("nothing was sent", "the settings are unchanged").
// Any other error is returned as it is.
func (d *daemon) storageFull(err error, what string) error {
	if err == nil || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	free := "unknown"
	var st syscall.Statfs_t
	if syscall.Statfs(d.cfg.StateDir, &st) == nil {
		free = fmt.Sprintf("%d bytes", uint64(st.Bavail)*uint64(st.Bsize))
	}
	d.log.Error().Str("state_dir", d.cfg.StateDir).Str("free", free).Msg("storage full: " + what)
	return contracts.WithHint(contracts.Errorf(contracts.ErrResourceExhausted, "storage_full",
		"the disk holding pikod's state (%s) is full (%s free): pikod could not record it, so %s", d.cfg.StateDir, free, what),
		"free space on that disk (old receipts go with a lower retention: 'pikoctl mcp receipts --prune'), then try again; nothing stored before is lost, and pikod needs no restart")
}

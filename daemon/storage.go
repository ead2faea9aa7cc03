package daemon

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/pikod/pikod/contracts"
)

// storageFull turns a write that failed for want of disk space (ENOSPC,
// EDQUOT) into storage_full: what could not be recorded, how much is free
// where pikod keeps its state, and what to do. what says what the refusal
// means for the caller ("nothing was sent", "the settings are unchanged").
// Any other error is returned as it is.
func (d *daemon) storageFull(err error, what string) error {
	if !isDiskFull(err) {
		return err
	}
	free := "unknown"
	if n := diskFree(d.cfg.StateDir); n >= 0 {
		free = fmt.Sprintf("%d bytes", n)
	}
	d.fullAt.Store(time.Now().UnixNano())
	d.log.Error().Str("state_dir", d.cfg.StateDir).Str("free", free).Msg("storage full: " + what)
	return contracts.WithHint(contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonStorageFull,
		"the disk holding pikod's state (%s) is full (%s free): pikod could not record it, so %s", d.cfg.StateDir, free, what),
		"free space on that disk (old receipts go with a lower retention: 'pikoctl mcp receipts --prune'), then try again; nothing stored before is lost, and pikod needs no restart")
}

// diskFullSlack is the free space above which a disk that was full counts
// as having room again.
const diskFullSlack = 16 << 20

// diskState is the free space where pikod keeps its state, and whether
// the disk is full: a write failed for want of space (at) and the free
// space has not come back above diskFullSlack since.
func (d *daemon) diskState() (free int64, full bool, at time.Time) {
	free = diskFree(d.cfg.StateDir)
	ns := d.fullAt.Load()
	if ns == 0 {
		return free, false, time.Time{}
	}
	if free >= diskFullSlack {
		d.fullAt.CompareAndSwap(ns, 0)
		return free, false, time.Time{}
	}
	return free, true, time.Unix(0, ns)
}

// isDiskFull tells a write that failed for want of disk space.
func isDiskFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT))
}

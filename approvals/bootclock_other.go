//go:build !linux && !darwin

package approvals

import "time"

// Without a boot clock, expiry goes by the wall clock alone.
func bootID() string { return "" }

func sinceBoot() (time.Duration, bool) { return 0, false }

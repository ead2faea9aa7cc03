package testsupport

import "time"

// LegacyReceipt is a receipt exactly as pikod stored them before callers
// were kept: these fields, in this order, without caller. Tests plant it
// to prove older chains still verify and read back.
type LegacyReceipt struct {
	ID              string    `json:"id"`
	Seq             uint64    `json:"seq"`
	Prev            string    `json:"prev"`
	Kind            string    `json:"kind"`
	Server          string    `json:"server"`
	Tool            string    `json:"tool"`
	ArgumentsDigest string    `json:"argumentsDigest,omitempty"`
	ActionID        string    `json:"actionId,omitempty"`
	Status          string    `json:"status"`
	SourceID        string    `json:"sourceId,omitempty"`
	Error           string    `json:"error,omitempty"`
	NotSent         bool      `json:"notSent,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
}

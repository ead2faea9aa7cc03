package approvals

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

func pidKey(pid int) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(pid))
}

// PutProcess durably records a process pikod started (or found escaping),
// keyed by pid; rec is the supervisor's own encoding.
func (db *DB) PutProcess(pid int, rec []byte) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketProcesses).Put(pidKey(pid), bytes.Clone(rec))
	})
	if err != nil {
		return fmt.Errorf("recording process %d: %w", pid, err)
	}
	return nil
}

// DeleteProcess forgets a process record.
func (db *DB) DeleteProcess(pid int) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketProcesses).Delete(pidKey(pid))
	})
	if err != nil {
		return fmt.Errorf("forgetting process %d: %w", pid, err)
	}
	return nil
}

// ListProcesses returns every recorded process.
func (db *DB) ListProcesses() ([][]byte, error) {
	var out [][]byte
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketProcesses).ForEach(func(_, v []byte) error {
			out = append(out, bytes.Clone(v))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing recorded processes: %w", err)
	}
	return out, nil
}

package approvals

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// maxTaskUpdates bounds the status updates a task record keeps (the
// newest ones).
const maxTaskUpdates = 50

// TaskRecord is a task pikod created with an approved action (the legacy
// tasks utility): what created it and every status change pikod saw,
// recorded against that action and its receipt. Strings from the server
// are made safe by the caller before they get here.
type TaskRecord struct {
	Server string `json:"server"`
	TaskID string `json:"taskId"`
	Tool   string `json:"tool"`
	// ActionID and ReceiptID are the creating action and its receipt
	// (mcp_task_create).
	ActionID      string `json:"actionId"`
	ReceiptID     string `json:"receiptId,omitempty"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	LastUpdatedAt string `json:"lastUpdatedAt,omitempty"`
	TTL           *int64 `json:"ttl,omitempty"`
	PollInterval  *int64 `json:"pollInterval,omitempty"`
	// CancelActionID is the latest approved cancellation.
	CancelActionID string `json:"cancelActionId,omitempty"`
	// ResultSourceID and ResultReceiptID are the latest tasks/result.
	ResultSourceID  string                 `json:"resultSourceId,omitempty"`
	ResultReceiptID string                 `json:"resultReceiptId,omitempty"`
	Updates         []contracts.TaskUpdate `json:"updates,omitempty"`
}

// Info is the record as extensions.mcp.tasks shows it.
func (r TaskRecord) Info() contracts.TaskInfo {
	return contracts.TaskInfo{
		TaskID: r.TaskID, Status: r.Status, StatusMessage: r.StatusMessage, CreatedAt: r.CreatedAt,
		LastUpdatedAt: r.LastUpdatedAt, TTL: r.TTL, PollInterval: r.PollInterval,
		Recorded: true, Tool: r.Tool, ActionID: r.ActionID, ReceiptID: r.ReceiptID, CancelActionID: r.CancelActionID,
		ResultSourceID: r.ResultSourceID, ResultReceiptID: r.ResultReceiptID, Updates: r.Updates,
	}
}

// TaskObservation is a task's status as a server reported it.
type TaskObservation struct {
	Status, StatusMessage, LastUpdatedAt string
	// Via names what showed it: tools/call, tasks/get, tasks/list,
	// tasks/cancel.
	Via string
}

func taskKey(server, taskID string) []byte {
	return []byte(server + "\x00" + taskID)
}

// RecordTask stores a task pikod just created, with its first status
// (Via tools/call). A record for the same server and task id is replaced.
func (l *Ledger) RecordTask(rec TaskRecord) error {
	if rec.Server == "" || rec.TaskID == "" || rec.ActionID == "" {
		return fmt.Errorf("recording a task: server, task id and action are required: %w", contracts.ErrInvalidArgument)
	}
	rec.Updates = []contracts.TaskUpdate{{Status: rec.Status, StatusMessage: rec.StatusMessage, Via: "tools/call",
		At: l.stamp().Format(time.RFC3339Nano)}}
	err := l.db.Update(func(tx *bolt.Tx) error {
		return putTask(tx, &rec)
	})
	if err != nil {
		return fmt.Errorf("recording task %q of %q: %w", rec.TaskID, rec.Server, err)
	}
	return nil
}

func putTask(tx *bolt.Tx, rec *TaskRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTasks).Put(taskKey(rec.Server, rec.TaskID), v)
}

func getTask(tx *bolt.Tx, server, taskID string) (*TaskRecord, error) {
	v := tx.Bucket(bucketTasks).Get(taskKey(server, taskID))
	if v == nil {
		return nil, nil
	}
	var rec TaskRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("decoding the record of task %q: %w", taskID, err)
	}
	return &rec, nil
}

// Task returns the record of a task pikod created; ok is false for a task
// it has no record of.
func (l *Ledger) Task(server, taskID string) (rec TaskRecord, ok bool, err error) {
	err = l.db.View(func(tx *bolt.Tx) error {
		r, err := getTask(tx, server, taskID)
		if r != nil {
			rec, ok = *r, true
		}
		return err
	})
	return rec, ok, err
}

// updateTask edits the record of a task, if pikod has one, in one Update,
// and returns it as it now stands.
func (l *Ledger) updateTask(server, taskID string, edit func(rec *TaskRecord)) (TaskRecord, bool, error) {
	var (
		out TaskRecord
		ok  bool
	)
	err := l.db.Update(func(tx *bolt.Tx) error {
		rec, err := getTask(tx, server, taskID)
		if err != nil || rec == nil {
			return err
		}
		edit(rec)
		out, ok = *rec, true
		return putTask(tx, rec)
	})
	if err != nil {
		return TaskRecord{}, false, fmt.Errorf("updating task %q of %q: %w", taskID, server, err)
	}
	return out, ok, nil
}

// ObserveTask records a status the server reported for a task pikod
// created: a new status or status message is appended to its updates
// (keeping the last 50). A task pikod has no record of is left alone (ok
// false).
func (l *Ledger) ObserveTask(server, taskID string, o TaskObservation) (TaskRecord, bool, error) {
	// Most observations change nothing (a list of tasks pikod did not
	// create, a status seen before): those cost a read, not a write.
	rec, ok, err := l.Task(server, taskID)
	if err != nil || !ok {
		return rec, ok, err
	}
	if rec.Status == o.Status && rec.StatusMessage == o.StatusMessage && (o.LastUpdatedAt == "" || o.LastUpdatedAt == rec.LastUpdatedAt) {
		return rec, true, nil
	}
	return l.updateTask(server, taskID, func(rec *TaskRecord) {
		if o.LastUpdatedAt != "" {
			rec.LastUpdatedAt = o.LastUpdatedAt
		}
		if o.Status == rec.Status && o.StatusMessage == rec.StatusMessage {
			return
		}
		rec.Status, rec.StatusMessage = o.Status, o.StatusMessage
		rec.Updates = append(rec.Updates, contracts.TaskUpdate{Status: o.Status, StatusMessage: o.StatusMessage, Via: o.Via,
			At: l.stamp().Format(time.RFC3339Nano)})
		if n := len(rec.Updates); n > maxTaskUpdates {
			rec.Updates = append([]contracts.TaskUpdate(nil), rec.Updates[n-maxTaskUpdates:]...)
		}
	})
}

// TaskCancelled records the approved cancellation actionID on the task's
// record.
func (l *Ledger) TaskCancelled(server, taskID, actionID string) error {
	_, _, err := l.updateTask(server, taskID, func(rec *TaskRecord) { rec.CancelActionID = actionID })
	return err
}

// TaskResult records where the latest tasks/result of a task is retained.
func (l *Ledger) TaskResult(server, taskID, sourceID, receiptID string) error {
	_, _, err := l.updateTask(server, taskID, func(rec *TaskRecord) {
		rec.ResultSourceID, rec.ResultReceiptID = sourceID, receiptID
	})
	return err
}

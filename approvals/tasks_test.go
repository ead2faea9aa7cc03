package approvals

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

func testMigrationTasks(t *testing.T) {
	// A database written by schema 7 gains tasks/, and a task recorded
	// after the migration survives a reopen.
	db, path := reopenAtSchema(t, schemaOf(t, "tasks")-1, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketTasks) })
	tombs := filepath.Join(filepath.Dir(path), "tombstones")
	l, err := OpenLedger(db, tombs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordTask(TaskRecord{Server: "s", TaskID: "t1", Tool: "slow", ActionID: "act_x", Status: "working"}); err != nil {
		t.Fatalf("RecordTask after migration: %v", err)
	}
	l.Close()
	db.Close()
	db, err = Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err = OpenLedger(db, tombs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec, ok, err := l.Task("s", "t1")
	if err != nil || !ok || rec.Tool != "slow" || rec.Status != "working" {
		t.Fatalf("Task after reopen = %+v, %v, %v", rec, ok, err)
	}
}

func TestTaskRecords(t *testing.T) {
	in := newInstance(t)
	l := in.l
	if err := l.RecordTask(TaskRecord{Server: "s", TaskID: "t1", Tool: "slow", ActionID: "act_x", ReceiptID: "rcpt_y", Status: "working"}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordTask(TaskRecord{Server: "s", TaskID: ""}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("RecordTask without a task id = %v, want ErrInvalidArgument", err)
	}
	// The same status again adds no update; a new message does.
	steps := []TaskObservation{
		{Status: "working", Via: "tasks/get"},
		{Status: "working", StatusMessage: "stage 1", Via: "tasks/get"},
		{Status: "working", StatusMessage: "stage 1", Via: "tasks/list"},
		{Status: "cancelled", Via: "tasks/cancel"},
	}
	for _, o := range steps {
		if _, ok, err := l.ObserveTask("s", "t1", o); err != nil || !ok {
			t.Fatalf("ObserveTask(%+v) = %v, %v", o, ok, err)
		}
	}
	rec, ok, err := l.Task("s", "t1")
	if err != nil || !ok {
		t.Fatalf("Task = %v, %v", ok, err)
	}
	var got []string
	for _, u := range rec.Updates {
		got = append(got, u.Status+"/"+u.StatusMessage+"/"+u.Via)
	}
	want := []string{"working//tools/call", "working/stage 1/tasks/get", "cancelled//tasks/cancel"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("updates = %v, want %v", got, want)
	}
	if info := rec.Info(); info.ActionID != "act_x" || info.ReceiptID != "rcpt_y" || info.Status != "cancelled" || !info.Recorded {
		t.Errorf("Info = %+v", info)
	}
	// Another server's task of the same id is another task, unknown here.
	if _, ok, err := l.ObserveTask("other", "t1", TaskObservation{Status: "working", Via: "tasks/get"}); ok || err != nil {
		t.Errorf("ObserveTask of an unrecorded task = %v, %v; want not recorded", ok, err)
	}
	// Updates are bounded, newest kept.
	for i := range 2 * maxTaskUpdates {
		if _, _, err := l.ObserveTask("s", "t1", TaskObservation{Status: "working", StatusMessage: fmt.Sprint(i), Via: "tasks/get"}); err != nil {
			t.Fatal(err)
		}
	}
	rec, _, _ = l.Task("s", "t1")
	if n := len(rec.Updates); n != maxTaskUpdates || rec.Updates[n-1].StatusMessage != fmt.Sprint(2*maxTaskUpdates-1) {
		t.Errorf("after many updates: %d kept, last %+v", n, rec.Updates[n-1])
	}
	if err := l.TaskCancelled("s", "t1", "act_c"); err != nil {
		t.Fatal(err)
	}
	if err := l.TaskResult("s", "t1", "src_r", "rcpt_r"); err != nil {
		t.Fatal(err)
	}
	rec, _, _ = l.Task("s", "t1")
	if rec.CancelActionID != "act_c" || rec.ResultSourceID != "src_r" || rec.ResultReceiptID != "rcpt_r" {
		t.Errorf("record = %+v", rec)
	}
}

func TestTaskActionDigests(t *testing.T) {
	in := newInstance(t)
	args := []byte(`{"taskId":"t1"}`)
	plain, err := in.l.Prepare("s", "tasks/cancel", args, "", fp0, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	cancel, err := in.l.PrepareKind(contracts.ReceiptTaskCancel, "s", "tasks/cancel", args, "", fp0, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	create, err := in.l.PrepareKind(contracts.ReceiptTaskCreate, "s", "tasks/cancel", args, "", fp0, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Digest != contracts.ActionDigest("s", "tasks/cancel", args, fp0) {
		t.Errorf("a plain action's digest changed")
	}
	if plain.Digest == cancel.Digest || cancel.Digest == create.Digest || plain.Digest == create.Digest {
		t.Errorf("digests of different kinds collide: %s %s %s", plain.Digest, cancel.Digest, create.Digest)
	}
	if cancel.Kind != contracts.ReceiptTaskCancel {
		t.Errorf("cancel action kind = %q", cancel.Kind)
	}
	if _, err := in.l.PrepareKind(contracts.ReceiptRead, "s", "t", args, "", fp0, contracts.Caller{}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("PrepareKind(mcp_read) = %v, want ErrInvalidArgument", err)
	}
}

package approvals

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// A write that fails inside a shared transaction gets its own error and
// leaves nothing behind; the writes it shared the transaction with are
// stored all the same.
func TestGroupCommitFailingWriteAlone(t *testing.T) {
	db, _ := openTemp(t)
	g := db.group
	bucket := []byte("grouptest")
	if err := db.bolt.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	// The first write holds the committer inside its transaction until the
	// three others are queued, so those three share the next one.
	release, inside := make(chan struct{}), make(chan struct{})
	var once, entered sync.Once
	// Runs before the database closes (cleanups run last in, first out),
	// so a failing test cannot leave the committer held.
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	held := make(chan error, 1)
	go func() {
		held <- g.update(func(tx *bolt.Tx) error {
			entered.Do(func() { close(inside) })
			<-release
			return tx.Bucket(bucket).Put([]byte("first"), []byte("1"))
		}, nil)
	}()
	// The others are queued only once the first is inside its
	// transaction: queued earlier, they could share it.
	<-inside
	errs := make([]error, 3)
	afters := make([]int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			errs[i] = g.update(func(tx *bolt.Tx) error {
				if err := tx.Bucket(bucket).Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
					return err
				}
				if i == 1 {
					return errors.New("refused by its own check")
				}
				return nil
			}, func() { afters[i]++ })
		})
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued behind the held one, want 3", n)
		}
	}
	once.Do(func() { close(release) })
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("held write: %v", err)
	}
	if errs[0] != nil || errs[2] != nil || errs[1] == nil || errs[1].Error() != "refused by its own check" {
		t.Fatalf("errors = %v, want only the second write refused with its own error", errs)
	}
	if afters[0] != 1 || afters[1] != 0 || afters[2] != 1 {
		t.Fatalf("after hooks ran %v times, want once for each stored write and never for the refused one", afters)
	}
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for _, k := range []string{"first", "k0", "k2"} {
			if b.Get([]byte(k)) == nil {
				t.Errorf("%s missing: a write that shared a transaction with a refused one was lost", k)
			}
		}
		if b.Get([]byte("k1")) != nil {
			t.Errorf("the refused write's key is stored")
		}
		return nil
	})
}

// Many calls ending at once: every action, receipt and retained source is
// stored, the receipts form one unbroken chain, and everything is still
// there after a reopen.
func TestSettleConcurrentCalls(t *testing.T) {
	in := newInstance(t)
	src, err := OpenSourceStore(in.db, filepath.Join(in.dir, "sources"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.inlineMax = 100 // some inline, some in files
	const calls = 40
	type done struct {
		action, receipt, source string
	}
	out := make([]done, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			a, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "fs", "write", []byte(`{"n":1}`), fp0, contracts.Caller{})
			if err != nil {
				t.Errorf("BeginDirect: %v", err)
				return
			}
			text := fmt.Appendf(nil, `{"content":[{"type":"text","text":"call %d %0*d"}]}`, i, i*10, 0)
			st, err := src.Stage("fs", "write", text)
			if err != nil {
				t.Errorf("Stage: %v", err)
				return
			}
			s, err := in.l.Settle(Settlement{
				Receipt:  Receipt{Kind: contracts.ReceiptAutonomous, Server: "fs", Tool: "write", ActionID: a.ID, Status: contracts.CallCompleted},
				Source:   st,
				ActionID: a.ID, State: contracts.ActionCompleted,
			})
			if err != nil || s.FinishErr != nil {
				t.Errorf("Settle: %v, finish: %v", err, s.FinishErr)
				return
			}
			out[i] = done{a.ID, s.Receipt.ID, st.Meta().ID}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	in.restart()
	src, err = OpenSourceStore(in.db, filepath.Join(in.dir, "sources"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i, d := range out {
		a := in.state(d.action)
		if a.State != contracts.ActionCompleted || a.ReceiptID != d.receipt || a.SourceID != d.source {
			t.Errorf("call %d: action %s is %s with receipt %q and source %q, want completed with %s and %s",
				i, d.action, a.State, a.ReceiptID, a.SourceID, d.receipt, d.source)
		}
		r, err := in.l.Receipt(d.receipt)
		if err != nil || r.SourceID != d.source || r.ActionID != d.action {
			t.Errorf("call %d: receipt %s = %+v, %v", i, d.receipt, r, err)
		}
		got, err := src.Read(d.source, 0, 0)
		if err != nil || got.Text != fmt.Sprintf(`{"content":[{"type":"text","text":"call %d %0*d"}]}`, i, i*10, 0) {
			t.Errorf("call %d: source %s = %q, %v", i, d.source, got.Text, err)
		}
	}
	v, err := in.l.VerifyReceipts()
	if err != nil || !v.OK || v.Checked != calls {
		t.Fatalf("VerifyReceipts = %+v, %v; want an unbroken chain of %d", v, err, calls)
	}
	if got := src.UsedBytes(); got <= 0 {
		t.Errorf("UsedBytes = %d after %d retained results", got, calls)
	}
}

// A staged source whose call could not be settled leaves no file behind.
func TestSettleFailureDiscardsStagedSource(t *testing.T) {
	in := newInstance(t)
	dir := filepath.Join(in.dir, "sources")
	src, err := OpenSourceStore(in.db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.inlineMax = -1
	st, err := src.Stage("fs", "write", []byte(`{"content":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, st.Meta().ID)); err != nil {
		t.Fatalf("staged source file: %v", err)
	}
	// A receipt without a kind is refused before anything is written.
	if _, err := in.l.Settle(Settlement{Receipt: Receipt{Server: "fs", Tool: "write"}, Source: st}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Fatalf("Settle with an invalid receipt = %v, want invalid argument", err)
	}
	if _, err := os.Stat(filepath.Join(dir, st.Meta().ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("staged source file after a failed settle: %v, want it removed", err)
	}
	if _, err := src.Meta(st.Meta().ID); err == nil {
		t.Fatalf("a source whose settle failed has metadata")
	}
}

// A write that finds nothing committing commits at once (inline); the
// writes that arrive while it commits share one transaction after it, and
// each returns only once its own is on disk.
func TestGroupCommitQueuesBehindInline(t *testing.T) {
	db, _ := openTemp(t)
	g := db.group
	bucket := []byte("grouptest")
	if err := db.bolt.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	release, inside := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	first := make(chan error, 1)
	go func() {
		first <- g.update(func(tx *bolt.Tx) error {
			close(inside)
			<-release
			return tx.Bucket(bucket).Put([]byte("first"), []byte("1"))
		}, nil)
	}()
	<-inside
	const n = 8
	var (
		mu  sync.Mutex
		txs = map[*bolt.Tx]int{}
		wg  sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			err := g.update(func(tx *bolt.Tx) error {
				mu.Lock()
				txs[tx]++
				mu.Unlock()
				return tx.Bucket(bucket).Put(fmt.Appendf(nil, "w%d", i), []byte("1"))
			}, nil)
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		})
	}
	// Every write is queued behind the held one before it goes on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		queued := len(g.queue)
		g.mu.Unlock()
		if queued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d writes queued behind a commit in progress", queued, n)
		}
	}
	once.Do(func() { close(release) })
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(txs) != 1 {
		t.Errorf("the %d queued writes went into %d transactions, want one shared", n, len(txs))
	}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if k := tx.Bucket(bucket).Stats().KeyN; k != n+1 {
			t.Errorf("%d keys stored, want %d", k, n+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestReceiptRetention: the retention settings prune the oldest receipts
// (on demand here; in the background every --retention-interval), the
// chain still verifies from the checkpoint, which --verify names, and the
// receipts left are the newest.
func TestReceiptRetention(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	// echo is granted as a read (countServer).
	var sources []string
	for i := range 12 {
		res := callTool(t, d, "fx", "echo", fmt.Sprintf(`{"text":"r%d"}`, i))
		sources = append(sources, res.OriginalResultSourceID)
	}
	settings := readSettings(t, d)
	with := strings.Replace(string(settings.Settings), `{"servers":`, `{"retention":{"receipts":{"maxCount":5}},"servers":`, 1)
	res := configureMCP(t, d, with)
	if res.Unchanged {
		t.Fatalf("a retention change was taken as unchanged: %+v", res)
	}
	out := ctlOK(t, d, "", "mcp", "receipts", "--prune")
	if !strings.Contains(out, "pruned 7 receipts") || !strings.Contains(out, "5 kept") {
		t.Errorf("receipts --prune printed %q, want 7 pruned and 5 kept", out)
	}
	v, text := verifyChain(t, d, true)
	if len(v.Pruned) != 1 || v.Pruned[0].FromSeq != 1 || v.Pruned[0].ToSeq != 7 || v.Checked != 5 {
		t.Errorf("verification after pruning: %+v", v)
	}
	for _, want := range []string{"pruned at ", ": 7 receipts, sequence 1 to 7", "receipt chain intact: 5 receipts, sequence 8 to 12",
		"(continuing the checkpoint of sequence 7)"} {
		if !strings.Contains(text, want) {
			t.Errorf("--verify lacks %q:\n%s", want, text)
		}
	}
	// A pruned receipt took its retained result with it; a kept one's
	// result still reads.
	if we := d.callErr(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: sources[0]}); we.Reason() != "unknown_source" ||
		!strings.Contains(we.Message, "retention prunes its receipt") {
		t.Errorf("the result of a pruned receipt reads as %+v", we)
	}
	var kept contracts.SourceReadResult
	d.callInto(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: sources[11]}, &kept)
	if !strings.Contains(kept.Text, "r11") {
		t.Errorf("the result of a kept receipt reads %q", kept.Text)
	}
	list := receiptsJSON(t, d)
	if len(list.Receipts) != 5 || list.Receipts[len(list.Receipts)-1].Seq != 8 {
		t.Errorf("the receipts left: %d, oldest seq %d", len(list.Receipts), list.Receipts[len(list.Receipts)-1].Seq)
	}
	// A bad bound is refused and nothing changes.
	bad := strings.Replace(string(settings.Settings), `{"servers":`, `{"retention":{"receipts":{"maxAge":"soon"}},"servers":`, 1)
	if _, stderr, code := runCtl(t, d, bad, "mcp", "configure", "-"); code == 0 || !strings.Contains(stderr, `retention.receipts.maxAge: "soon" is not a duration`) {
		t.Errorf("a bad maxAge: exit %d, %s", code, stderr)
	}
	// An export holds the checkpoint and the receipts kept; it verifies
	// from the file alone, and an edit to it is found.
	file := filepath.Join(t.TempDir(), "receipts.jsonl")
	if out := ctlOK(t, d, "", "mcp", "receipts", "--export", file); !strings.Contains(out, "exported 5 receipts") {
		t.Errorf("--export printed %q", out)
	}
	if _, stderr, code := runCtl(t, d, "", "mcp", "receipts", "--export", file); code == 0 || !strings.Contains(stderr, "already exists") {
		t.Errorf("a second export to the same file: exit %d %s", code, stderr)
	}
	if out := ctlOK(t, d, "", "mcp", "receipts", "--verify", file); !strings.Contains(out, "receipt chain intact: 5 receipts, sequence 8 to 12") ||
		!strings.Contains(out, "pruned at ") {
		t.Errorf("--verify FILE printed:\n%s", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := os.WriteFile(tampered, []byte(strings.Replace(string(b), `"text":"r9"`, `"text":"r0"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	edited := strings.Join(append(lines[:3:3], lines[4:]...), "\n") + "\n" // a receipt removed
	if err := os.WriteFile(tampered, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runCtl(t, d, "", "mcp", "receipts", "--verify", tampered); code != 1 || !strings.Contains(out, "BROKEN") {
		t.Errorf("a tampered export: exit %d\n%s", code, out)
	}
	// Status and doctor show the footprint.
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	if s := st.Storage; s == nil || s.Receipts != 5 || s.ReceiptBytes <= 0 || s.DatabaseBytes <= 0 || s.OldestReceipt == "" ||
		s.SourceCapBytes <= 0 || s.LastPrune == nil || s.LastPrune.Pruned != 7 {
		t.Errorf("status storage: %+v", st.Storage)
	}
	if out, _, _ := runCtl(t, d, "", "doctor"); !strings.Contains(out, "storage") || !strings.Contains(out, "5 receipts") || !strings.Contains(out, "last prune") {
		t.Errorf("doctor lacks the storage line:\n%s", out)
	}
	// The pruned records survive a restart as checkpoints.
	d.restart()
	if v, _ := verifyChain(t, d, true); len(v.Pruned) != 1 || v.Checked != 5 {
		t.Errorf("after a restart: %+v", v)
	}
}

// TestCompactAtStart: after retention pruned most receipts, a start with
// --compact gives the freed pages back: pikod.db shrinks, the log says so,
// and every receipt kept and the chain are as before.
func TestCompactAtStart(t *testing.T) {
	t.Parallel()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t, withPikodArgs("--compact"))
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog)))
	connectServer(t, d, "fx")
	long := strings.Repeat("x", 2000)
	for i := range 400 {
		callTool(t, d, "fx", "echo", fmt.Sprintf(`{"text":"%s%d"}`, long, i))
	}
	settings := readSettings(t, d)
	configureMCP(t, d, strings.Replace(string(settings.Settings), `{"servers":`, `{"retention":{"receipts":{"maxCount":3}},"servers":`, 1))
	ctlOK(t, d, "", "mcp", "receipts", "--prune")
	kept := receiptsJSON(t, d)
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	before := st.Storage.DatabaseBytes
	d.restart()
	d.waitLog(t, "database compacted")
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	if st.Storage.DatabaseBytes >= before {
		t.Errorf("pikod.db is %d bytes after compaction, %d before", st.Storage.DatabaseBytes, before)
	}
	t.Logf("pikod.db %d -> %d bytes", before, st.Storage.DatabaseBytes)
	if again := receiptsJSON(t, d); fmt.Sprint(again.Receipts) != fmt.Sprint(kept.Receipts) {
		t.Errorf("the receipts kept changed across the compaction")
	}
	verifyChain(t, d, true)
}

// TestCompactOnline: with pikod serving and calls running, 'pikoctl mcp
// compact' shrinks pikod.db, every call succeeds with its receipt, the
// receipts kept are the same, the chain verifies, and status and doctor
// name the compaction.
func TestCompactOnline(t *testing.T) {
	t.Parallel()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog)))
	connectServer(t, d, "fx")
	long := strings.Repeat("x", 2000)
	for i := range 300 {
		callTool(t, d, "fx", "echo", fmt.Sprintf(`{"text":"%s%d"}`, long, i))
	}
	settings := readSettings(t, d)
	configureMCP(t, d, strings.Replace(string(settings.Settings), `{"servers":`, `{"retention":{"receipts":{"maxCount":3}},"servers":`, 1))
	ctlOK(t, d, "", "mcp", "receipts", "--prune")
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	before := st.Storage.DatabaseBytes

	// Calls go on from four clients while the compaction runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var during []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := d.tryCall(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "echo",
					Arguments: json.RawMessage(fmt.Sprintf(`{"text":"during-%d-%d"}`, w, i))})
				var cr contracts.CallResult
				if err != nil || json.Unmarshal(res, &cr) != nil || cr.Status != contracts.CallCompleted {
					t.Errorf("a call during the compaction: %s %v", res, err)
					return
				}
				mu.Lock()
				during = append(during, cr.ReceiptID)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	out := ctlOK(t, d, "", "mcp", "compact")
	close(stop)
	wg.Wait()
	if !strings.Contains(out, "compacted pikod.db: ") || !strings.Contains(out, "writes waited") {
		t.Errorf("pikoctl mcp compact printed %q", out)
	}
	t.Log(strings.TrimSpace(out))
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	c := st.Storage.LastCompaction
	if c == nil || c.Trigger != "asked" || !c.Compacted || c.AfterBytes >= before || c.HeldMs <= 0 || c.HeldMs > c.TookMs {
		t.Errorf("status after the compaction: %+v (the file was %d bytes)", c, before)
	}
	if len(during) == 0 {
		t.Fatalf("no call completed while the compaction ran")
	}
	for _, id := range during {
		var one contracts.ReceiptsResult
		d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{ID: id}, &one)
		if len(one.Receipts) != 1 {
			t.Errorf("receipt %s of a call during the compaction: %+v", id, one)
		}
	}
	if v, _ := verifyChain(t, d, true); v.Checked < uint64(len(during)) {
		t.Errorf("verified %d receipts, want at least the %d made during the compaction", v.Checked, len(during))
	}
	if out, _, _ := runCtl(t, d, "", "doctor"); !strings.Contains(out, "last compaction (asked, ") {
		t.Errorf("doctor does not name the compaction:\n%s", out)
	}
	// The compacted file is the one a restart opens.
	d.restart()
	verifyChain(t, d, true)
}

package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// Caller identity: every action and receipt records who asked, the pid
// and executable the kernel reports for the socket's peer and what the
// connection declared in system.hello, and pikoctl shows it, the approval
// review before the owner decides.

// runCtlPID is runCtl that also returns the pid pikoctl ran as.
func runCtlPID(t testing.TB, d *daemon, stdin string, args ...string) (stdout, stderr string, code, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pikoctlBin, append([]string{"--socket", d.socket}, args...)...)
	cmd.Env = minimalEnv(t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running pikoctl %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), cmd.Process.Pid
}

// rawClient speaks the socket protocol by hand on one connection, so what
// it declares in system.hello holds for the calls it makes after.
type rawClient struct {
	c  net.Conn
	r  *bufio.Reader
	id int
}

func dialRawClient(t testing.TB, d *daemon) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("unix", d.socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{c: c, r: bufio.NewReaderSize(c, 1<<16)}
}

// call sends one request and decodes the result into out, skipping the
// notifications sent before it.
func (rc *rawClient) call(t testing.TB, method string, params, out any) {
	t.Helper()
	rc.id++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rc.id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.c.SetDeadline(time.Now().Add(callTimeout))
	if _, err := rc.c.Write(append(req, '\n')); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		line, err := rc.r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", method, err)
		}
		var resp struct {
			ID     *int             `json:"id"`
			Result json.RawMessage  `json:"result"`
			Error  *contracts.Error `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("%s: decoding %q: %v", method, line, err)
		}
		if resp.ID == nil {
			continue
		}
		if *resp.ID != rc.id || resp.Error != nil {
			t.Fatalf("%s: answer %s", method, line)
		}
		if out != nil {
			if err := json.Unmarshal(resp.Result, out); err != nil {
				t.Fatalf("%s: decoding result %s: %v", method, resp.Result, err)
			}
		}
		return
	}
}

// prepareOn makes a count call on rc that must become a prepared action.
func (rc *rawClient) prepareOn(t testing.TB, nonce string) contracts.CallResult {
	t.Helper()
	var res contracts.CallResult
	rc.call(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "count", Arguments: json.RawMessage(fmt.Sprintf(`{"nonce":%q}`, nonce))}, &res)
	if res.Status != contracts.CallApprovalRequired || res.ActionID == "" {
		t.Fatalf("count on a raw connection: %+v, want approval_required", res)
	}
	return res
}

// actionsByID lists every action with 'pikoctl --json mcp actions'.
func actionsByID(t testing.TB, d *daemon) map[string]contracts.ActionSummary {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, "", "--json", "mcp", "actions")
	if code != 0 {
		t.Fatalf("pikoctl --json mcp actions: exit %d: %s", code, stderr)
	}
	var res contracts.ActionsListResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("decoding %q: %v", stdout, err)
	}
	out := map[string]contracts.ActionSummary{}
	for _, a := range res.Actions {
		out[a.ID] = a
	}
	return out
}

// receiptByID reads one receipt with 'pikoctl --json mcp receipt'.
func receiptByID(t testing.TB, d *daemon, id string) contracts.ReceiptInfo {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, "", "--json", "mcp", "receipt", id)
	var res contracts.ReceiptsResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Receipts) != 1 {
		t.Fatalf("pikoctl --json mcp receipt %s: exit %d\n%s\n%s", id, code, stdout, stderr)
	}
	return res.Receipts[0]
}

// ctlOut runs pikoctl, which must exit 0, and returns its stdout.
func ctlOut(t testing.TB, d *daemon, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, "", args...)
	if code != 0 {
		t.Fatalf("pikoctl %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	return stdout
}

// wantCaller checks a recorded caller against the pid and executable the
// kernel knows and what was declared (zero: nothing).
func wantCaller(t testing.TB, what string, got contracts.Caller, pid int, exe string, client contracts.ClientInfo, via string) {
	t.Helper()
	switch {
	case got.IsZero():
		t.Errorf("%s records no caller, want pid %d %s", what, pid, exe)
	case got.PID != pid || got.Executable != exe:
		t.Errorf("%s caller = pid %d %q, want pid %d %q", what, got.PID, got.Executable, pid, exe)
	case got.Client != client || got.Via != via:
		t.Errorf("%s caller declares %+v via %q, want %+v via %q", what, got.Client, got.Via, client, via)
	}
}

func resolved(t testing.TB, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCallerPikoctl prepares an action with pikoctl, approves it at a
// pseudo-terminal and checks the action, its review, the approval review
// and the receipt name the pikoctl that asked, not the one that approved.
func TestCallerPikoctl(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	bin := resolved(t, pikoctlBin)

	nonce := "caller-" + randomHex(t, 8)
	stdout, stderr, code, pid := runCtlPID(t, d, fmt.Sprintf(`{"nonce":%q}`, nonce), "--json", "mcp", "call", "fx", "count")
	var prep contracts.CallResult
	if code != 4 || json.Unmarshal([]byte(stdout), &prep) != nil || prep.ActionID == "" {
		t.Fatalf("pikoctl mcp call fx count: exit %d\n%s\n%s", code, stdout, stderr)
	}
	asked := fmt.Sprintf("pid %d %s", pid, bin)

	wantCaller(t, "the listed action", actionsByID(t, d)[prep.ActionID].Caller, pid, bin, contracts.ClientInfo{}, "")
	r := review(t, d, prep.ActionID)
	wantCaller(t, "the review", r.Caller, pid, bin, contracts.ClientInfo{}, "")
	table := ctlOut(t, d, "mcp", "actions")
	if !strings.HasPrefix(table, "ACTION") || !strings.Contains(table, "CALLER") || !strings.Contains(table, fmt.Sprintf("pikoctl[%d]", pid)) {
		t.Errorf("pikoctl mcp actions does not show pikoctl[%d]:\n%s", pid, table)
	}
	if wide := ctlOut(t, d, "--wide", "mcp", "actions"); !strings.Contains(wide, asked) {
		t.Errorf("pikoctl --wide mcp actions does not show %q:\n%s", asked, wide)
	}
	if out := ctlOut(t, d, "mcp", "review", prep.ActionID); !strings.Contains(out, "asked by:  "+asked+"\n") {
		t.Errorf("pikoctl mcp review does not say who asked (%s):\n%s", asked, out)
	}

	// The owner sees who asked before deciding.
	p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
	p.waitFor(t, approvePrompt)
	screen := p.out.String()
	if i, j := strings.Index(screen, "asked by:  "+asked), strings.Index(screen, approvePrompt); i < 0 || i > j {
		t.Fatalf("the approval review does not show %q before the question:\n%s", asked, screen)
	}
	if !strings.Contains(screen, fmt.Sprintf("asked by pikoctl[%d]", pid)) {
		t.Errorf("the question does not name the caller pikoctl[%d]:\n%s", pid, screen)
	}
	p.typeLine(t, suffixOf(prep.Digest))
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("pikoctl mcp approve: exit %d\n%s", code, out)
	}
	wantNonce(t, callLog, nonce, 1)
	done := wantState(t, d, prep.ActionID, contracts.ActionCompleted)
	wantCaller(t, "the completed action", done.Caller, pid, bin, contracts.ClientInfo{}, "")

	// The receipt names who asked for the action, not the approver.
	rec := receiptByID(t, d, done.ReceiptID)
	wantCaller(t, "the mcp_approved receipt", rec.Caller, pid, bin, contracts.ClientInfo{}, "")
	if one := ctlOut(t, d, "mcp", "receipt", done.ReceiptID); !strings.Contains(one, "caller:    "+asked+"\n") {
		t.Errorf("pikoctl mcp receipt does not show the caller %q:\n%s", asked, one)
	}

	// A read call leaves a receipt naming its own pikoctl.
	stdout, stderr, code, readPID := runCtlPID(t, d, `{"text":"hi"}`, "--json", "mcp", "call", "fx", "echo")
	var read contracts.CallResult
	if code != 0 || json.Unmarshal([]byte(stdout), &read) != nil || read.ReceiptKind != contracts.ReceiptRead {
		t.Fatalf("pikoctl mcp call fx echo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantCaller(t, "the mcp_read receipt", receiptByID(t, d, read.ReceiptID).Caller, readPID, bin, contracts.ClientInfo{}, "")
	list := ctlOut(t, d, "mcp", "receipts")
	for _, want := range []string{"CALLER", fmt.Sprintf("pikoctl[%d]", pid), fmt.Sprintf("pikoctl[%d]", readPID)} {
		if !strings.Contains(list, want) {
			t.Errorf("pikoctl mcp receipts lacks %q:\n%s", want, list)
		}
	}
	if v, _ := verifyChain(t, d, true); v.Checked != 2 {
		t.Errorf("verified %d receipts, want 2", v.Checked)
	}
}

// TestCallerDeclared declares a client on a raw socket connection: its
// actions and receipts record the name, version and via as declared, next
// to the kernel's pid and executable; another connection's do not.
func TestCallerDeclared(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	self := resolved(t, os.Args[0])
	if exe, err := os.Executable(); err == nil {
		self = resolved(t, exe)
	}
	bridge := dialRawClient(t, d)
	host := contracts.ClientInfo{Name: "claude-code", Version: "2.1.0"}
	var hello contracts.HelloResult
	bridge.call(t, contracts.MethodHello, contracts.HelloParams{APIVersion: contracts.APIVersion, Client: host, Via: "pikoctl mcp serve"}, &hello)
	if hello.APIVersion != contracts.APIVersion {
		t.Fatalf("hello = %+v", hello)
	}
	prep := bridge.prepareOn(t, "declared-"+randomHex(t, 4))
	var read contracts.CallResult
	bridge.call(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}, &read)

	plain := dialRawClient(t, d)
	plainPrep := plain.prepareOn(t, "plain-"+randomHex(t, 4))

	acts := actionsByID(t, d)
	wantCaller(t, "the declared connection's action", acts[prep.ActionID].Caller, os.Getpid(), self, host, "pikoctl mcp serve")
	wantCaller(t, "another connection's action", acts[plainPrep.ActionID].Caller, os.Getpid(), self, contracts.ClientInfo{}, "")
	wantCaller(t, "the declared connection's read receipt", receiptByID(t, d, read.ReceiptID).Caller, os.Getpid(), self, host, "pikoctl mcp serve")

	want := fmt.Sprintf("claude-code 2.1.0 (declared) via pikoctl mcp serve, pid %d %s", os.Getpid(), self)
	if out := ctlOut(t, d, "mcp", "review", prep.ActionID); !strings.Contains(out, "asked by:  "+want+"\n") {
		t.Errorf("pikoctl mcp review does not show %q:\n%s", want, out)
	}
	if out := ctlOut(t, d, "mcp", "receipt", read.ReceiptID); !strings.Contains(out, "caller:    "+want+"\n") {
		t.Errorf("pikoctl mcp receipt does not show %q:\n%s", want, out)
	}
	if out := ctlOut(t, d, "mcp", "actions"); !strings.Contains(out, "claude-code (declared)") {
		t.Errorf("pikoctl mcp actions does not show the declared name:\n%s", out)
	}

	// A later hello that declares nothing keeps the declaration.
	bridge.call(t, contracts.MethodHello, contracts.HelloParams{}, nil)
	again := bridge.prepareOn(t, "again-"+randomHex(t, 4))
	wantCaller(t, "the action after a bare hello", actionsByID(t, d)[again.ActionID].Caller, os.Getpid(), self, host, "pikoctl mcp serve")
}

// TestCallerHostileDeclaration declares a 10 KB name full of escape
// sequences: it is stored bounded and every human output shows it
// rendered visibly, never acting on the terminal.
func TestCallerHostileDeclaration(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	hostile := "\x1b]0;pwned\x07\x1b[2J\u202e" + strings.Repeat("\x1b[31mA\x1b[0m", 10_000/9)
	if len(hostile) < 10_000 {
		t.Fatalf("the hostile name is only %d bytes", len(hostile))
	}
	rc := dialRawClient(t, d)
	rc.call(t, contracts.MethodHello, contracts.HelloParams{Client: contracts.ClientInfo{Name: hostile, Version: "\x1b[1m" + strings.Repeat("9", 5000)},
		Via: "\x9b2J" + strings.Repeat("v", 5000)}, nil)
	prep := rc.prepareOn(t, "hostile-"+randomHex(t, 4))
	var read contracts.CallResult
	rc.call(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}, &read)

	c := actionsByID(t, d)[prep.ActionID].Caller
	if c.Client.Name == "" {
		t.Fatalf("the hostile connection's action has caller %+v", c)
	}
	for what, tc := range map[string]struct {
		s   string
		max int
	}{
		"name": {c.Client.Name, contracts.MaxClientNameChars}, "version": {c.Client.Version, contracts.MaxClientVersionChars},
		"via": {c.Via, contracts.MaxViaChars},
	} {
		if n := utf8.RuneCountInString(tc.s); n > tc.max {
			t.Errorf("the declared %s is stored as %d characters, want at most %d", what, n, tc.max)
		}
	}
	if c.PID != os.Getpid() {
		t.Errorf("the kernel's pid %d was replaced: %+v", os.Getpid(), c)
	}

	for _, args := range [][]string{
		{"mcp", "actions"}, {"--wide", "mcp", "actions"}, {"mcp", "review", prep.ActionID},
		{"mcp", "receipts"}, {"--wide", "mcp", "receipts"}, {"mcp", "receipt", read.ReceiptID},
	} {
		out := ctlOut(t, d, args...)
		if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") {
			t.Errorf("pikoctl %v printed a raw control character:\n%q", args, out)
		}
		if !strings.Contains(out, `\u{001B}`) {
			t.Errorf("pikoctl %v does not show the declared escape visibly:\n%s", args, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 1000 {
				t.Errorf("pikoctl %v printed a %d-character line: the declaration is not bounded", args, n)
			}
		}
	}
	if out := ctlOut(t, d, "mcp", "review", prep.ActionID); !strings.Contains(out, "(declared)") || !strings.Contains(out, fmt.Sprintf("pid %d ", os.Getpid())) {
		t.Errorf("pikoctl mcp review does not mark the name declared next to the kernel's pid:\n%s", out)
	}
}

// plantLegacyReceipts chains receipts in the old encoding into a stopped
// daemon's database, as an older pikod would have, and returns their ids.
func plantLegacyReceipts(t testing.TB, dbPath string, n int) []string {
	t.Helper()
	db, err := bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		var head struct {
			Seq  uint64 `json:"seq"`
			ID   string `json:"id"`
			Hash string `json:"hash"`
		}
		if v := meta.Get([]byte("receipts_head")); v != nil {
			if err := json.Unmarshal(v, &head); err != nil {
				return err
			}
		}
		for i := range n {
			r := testsupport.LegacyReceipt{ID: "rcpt_legacy" + strings.Repeat(fmt.Sprint(i%10), 20), Seq: head.Seq + 1, Prev: head.Hash,
				Kind: contracts.ReceiptRead, Server: "fx", Tool: "echo", ArgumentsDigest: strings.Repeat("ab", 32),
				Status: contracts.CallCompleted, CreatedAt: time.Now().Add(-time.Hour).UTC()}
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			key := binary.BigEndian.AppendUint64(nil, r.Seq)
			tkey := append(binary.BigEndian.AppendUint64(nil, uint64(r.CreatedAt.UnixNano())), r.ID...)
			head.Seq, head.ID, head.Hash = r.Seq, r.ID, sha256Hex(v)
			hv, _ := json.Marshal(head)
			if err := errors.Join(tx.Bucket([]byte("receipts")).Put([]byte(r.ID), v), tx.Bucket([]byte("receipts_by_seq")).Put(key, []byte(r.ID)),
				tx.Bucket([]byte("receipts_by_time")).Put(tkey, nil), meta.Put([]byte("receipts_head"), hv)); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("planting legacy receipts: %v", err)
	}
	return ids
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestCallerReceiptChainOldAndNew verifies a chain that begins with
// receipts stored before callers were kept and goes on with receipts that
// name their caller; editing a stored caller offline breaks it.
func TestCallerReceiptChainOldAndNew(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	d.stop(t)
	legacy := plantLegacyReceipts(t, filepath.Join(d.stateDir, "pikod.db"), 2)
	d.start(t)
	if v, _ := verifyChain(t, d, true); v.Checked != 2 {
		t.Fatalf("the old chain verified %d receipts, want 2", v.Checked)
	}
	if out := ctlOut(t, d, "mcp", "receipt", legacy[0]); !strings.Contains(out, "caller:    unknown\n") {
		t.Errorf("a receipt from before callers were kept:\n%s", out)
	}
	connectServer(t, d, "fx")
	stdout, stderr, code, pid := runCtlPID(t, d, `{"text":"new"}`, "--json", "mcp", "call", "fx", "echo")
	var read contracts.CallResult
	if code != 0 || json.Unmarshal([]byte(stdout), &read) != nil || read.ReceiptID == "" {
		t.Fatalf("pikoctl mcp call fx echo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rec := receiptByID(t, d, read.ReceiptID)
	wantCaller(t, "the new receipt", rec.Caller, pid, resolved(t, pikoctlBin), contracts.ClientInfo{}, "")
	if v, _ := verifyChain(t, d, true); v.Checked != 3 || v.Head.ReceiptID != read.ReceiptID {
		t.Fatalf("the old and new chain verified %d receipts to %s, want 3 to %s", v.Checked, v.Head.ReceiptID, read.ReceiptID)
	}
	// One more, so the edited receipt is not the newest.
	callTool(t, d, "fx", "echo", `{"text":"after"}`)
	verifyChain(t, d, true)
	d.stop(t)

	dir := filepath.Join(t.TempDir(), "state")
	copyTree(t, d.stateDir, dir)
	db, err := bolt.Open(filepath.Join(dir, "pikod.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		rb := tx.Bucket([]byte("receipts"))
		v := rb.Get([]byte(read.ReceiptID))
		from := fmt.Sprintf(`"pid":%d`, pid)
		edited := bytes.Replace(bytes.Clone(v), []byte(from), []byte(fmt.Sprintf(`"pid":%d`, pid+1)), 1)
		if bytes.Equal(edited, v) {
			return fmt.Errorf("no %s in %s", from, v)
		}
		return rb.Put([]byte(read.ReceiptID), edited)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := startDaemon(t, withStateDir(dir))
	v, text := verifyChain(t, c, false)
	if v.Break == nil || v.Break.ReceiptID != read.ReceiptID || v.Break.Seq != 3 || v.Break.Problem != contracts.ChainContentMismatch {
		t.Errorf("after editing the caller's pid: break %+v, want content_mismatch at sequence 3 (%s)\n%s", v.Break, read.ReceiptID, text)
	}
}

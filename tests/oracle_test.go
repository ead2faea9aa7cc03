package tests

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// probe is one request of an attacker on the socket: what it sent and what
// came back (the result as the daemon wrote it, or the error's message).
type probe struct {
	method string
	params any
	reply  string
}

// runProbes sends every probe on one connection of its own (no terminal),
// a few at a time, and fills in the replies.
func runProbes(t *testing.T, d *daemon, probes []*probe) {
	t.Helper()
	c := d.client(t)
	var wg sync.WaitGroup
	work := make(chan *probe)
	for range 4 {
		wg.Go(func() {
			for p := range work {
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				var res json.RawMessage
				err := c.Call(ctx, p.method, p.params, &res)
				cancel()
				var we *contracts.Error
				switch {
				case err == nil:
					p.reply = withoutIDs(res)
				case errors.As(err, &we):
					p.reply = "error: " + we.Message + " " + we.Reason()
					if we.Data != nil && we.Data.Upstream != nil {
						p.reply += " upstream: " + we.Data.Upstream.Message
					}
				default:
					p.reply = "failed: " + err.Error()
				}
			}
		})
	}
	for _, p := range probes {
		work <- p
	}
	close(work)
	wg.Wait()
}

// candidates returns n strings shaped like right (same length, same
// alphabet), right among them at position at.
func candidates(t *testing.T, right string, n, at int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		if i == at {
			out[i] = right
			continue
		}
		c := fmt.Sprintf("%0*d", len(right), i)
		if strings.Trim(right, "0123456789") != "" {
			c = right[:len(right)-6] + fmt.Sprintf("%06x", i)
		}
		if c == right {
			c = strings.Repeat("z", len(right))
		}
		out[i] = c
	}
	return out
}

// batches cuts cands into groups of size.
func batches(cands []string, size int) [][]string {
	var out [][]string
	for len(cands) > 0 {
		n := min(size, len(cands))
		out = append(out, cands[:n])
		cands = cands[n:]
	}
	return out
}

// TestOracleApprovalPassphrase plays a local tool without a terminal that
// waits for the owner to approve an action with the approval passphrase
// and, while that request is in flight, sends 10,000 candidate
// passphrases through a granted echo tool, extensions.mcp.search, an
// unknown tool's name (an error that quotes it) and request ids. Before,
// pikod held the passphrase in the redaction set for the approval's
// length, so the right candidate came back as [REDACTED]. Now every
// candidate comes back as sent: the replies for the right one and a wrong
// one of the same shape are the same but for the candidate itself.
func TestOracleApprovalPassphrase(t *testing.T) {
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--call-log", callLog).with(
		"tools", []string{"count", "echo", "sleep"}, "readOnlyTools", []string{"echo"})))
	connectServer(t, d, "fx")
	pass := "owner-pass-" + randomHex(t, 3) // 6 hex digits the attacker must find
	setPassphrase(t, d, pass)

	// The owner approves a call that takes a while: its request carries
	// the passphrase and stays in flight.
	prep := prepare(t, d, "fx", "sleep", `{"ms":20000}`)
	approved := make(chan string, 1)
	go func() {
		out, code := approveOnPTY(t, d, prep.ActionID, pass)
		approved <- fmt.Sprintf("exit %d\n%s", code, out)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for review(t, d, prep.ActionID).State != contracts.ActionDispatched {
		if time.Now().After(deadline) {
			t.Fatalf("the approved call never started: %+v", review(t, d, prep.ActionID))
		}
		time.Sleep(50 * time.Millisecond)
	}

	const n = 10000
	cands := candidates(t, pass, n, 7331)
	var probes []*probe
	for _, b := range batches(cands, 100) { // 100 echo calls
		probes = append(probes, &probe{method: contracts.MethodMCPCall,
			params: contracts.CallParams{Server: "fx", Tool: "echo", Arguments: mustJSON(t, map[string]string{"text": strings.Join(b, " ")})}})
	}
	for _, b := range batches(cands, 500) { // 20 searches
		probes = append(probes, &probe{method: contracts.MethodMCPSearch, params: contracts.SearchParams{Query: strings.Join(b, " ")}})
	}
	for _, b := range batches(cands, 10) { // 1,000 unknown tools
		probes = append(probes, &probe{method: contracts.MethodMCPCall, params: contracts.CallParams{Server: "fx", Tool: strings.Join(b, " ")}})
	}
	// A wrong twin of every probe that holds the right candidate.
	wrong := strings.Repeat("q", len(pass))
	var twins []*probe
	for _, p := range probes {
		raw := string(mustJSON(t, p.params))
		if strings.Contains(raw, pass) {
			var params json.RawMessage = json.RawMessage(strings.ReplaceAll(raw, pass, wrong))
			twins = append(twins, p, &probe{method: p.method, params: params})
		}
	}
	start := time.Now()
	runProbes(t, d, probes)
	runProbes(t, d, twins[1:2])
	runProbes(t, d, twins[3:4])
	runProbes(t, d, twins[5:6])
	if st := review(t, d, prep.ActionID).State; st != contracts.ActionDispatched {
		t.Fatalf("the approval ended (%s) before the probes did: nothing was tested while it was in flight", st)
	}
	t.Logf("%d candidates in %d requests in %v while the approval was in flight", n, len(probes), time.Since(start).Round(time.Millisecond))

	for _, p := range probes {
		if strings.Contains(p.reply, redactedMark) {
			t.Errorf("%s: a reply holds %s: %.300s", p.method, redactedMark, p.reply)
		}
		if strings.HasPrefix(p.reply, "failed: ") {
			t.Errorf("%s: %s", p.method, p.reply)
		}
	}
	for i := 0; i < len(twins); i += 2 {
		right, w := twins[i], twins[i+1]
		if got := strings.ReplaceAll(right.reply, pass, wrong); got != w.reply {
			t.Errorf("%s: the replies for the right and a wrong candidate differ:\nright: %.400s\nwrong: %.400s", right.method, right.reply, w.reply)
		}
	}
	// Request ids come back as sent too.
	for _, id := range []string{pass, wrong} {
		raw, err := rawCallID(d.socket, id)
		if err != nil || strings.Contains(raw, redactedMark) || !strings.Contains(raw, id) {
			t.Errorf("a request with id %q: %v %.200s", id, err, raw)
		}
	}
	// The echo of the right candidate, as the caller got it.
	for _, p := range probes[:100] {
		if strings.Contains(string(mustJSON(t, p.params)), pass) && !strings.Contains(p.reply, pass) {
			t.Errorf("the echo of the batch with the right candidate lost it: %.300s", p.reply)
		}
	}

	// The owner's approval still goes through.
	select {
	case out := <-approved:
		if !strings.HasPrefix(out, "exit 0") {
			t.Errorf("the owner's approval: %s", out)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the approval never finished")
	}
}

// rawCallID sends a request for an unknown method with a string id on a
// connection of its own and returns the raw answer line.
func rawCallID(socket, id string) (string, error) {
	nc, err := net.Dial("unix", socket)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "no.such." + id})
	if _, err := nc.Write(append(req, '\n')); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return line, err
}

// withoutIDs is a result without the ids that differ from call to call
// (receipt, retained result), so two answers can be compared.
func withoutIDs(res json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil {
		return string(res)
	}
	delete(m, "receiptId")
	delete(m, "originalResultSourceId")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestOracleOtherServerCredential plays a local tool that has granted
// tools on server b and wants server a's 6-digit credential: it sends all
// the candidates through b's echo (the value in its own arguments) and
// through b's decode (base64 in the arguments, so the value b answers is
// in no argument: text a caller plants in a file a server reads works the
// same way). Before, pikod removed every server's values from every
// answer, so the right candidate came back as [REDACTED]. Now b's answers
// are redacted of b's values and of values too long to guess: the right
// and wrong candidates come back alike. a's own answers still lose a's
// value, and a's long token is removed from b's answers too.
func TestOracleOtherServerCredential(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("a", "--leak-env", "FX_PIN").with("readOnlyTools", []string{"leak-error"}),
		stdioFixture("b", "--decode-tool").with("readOnlyTools", []string{"echo", "decode"})))
	pin := fmt.Sprintf("%06d", mathrand.IntN(1000000))
	token := "a-long-token-" + randomHex(t, 12)
	storeSecret(t, d, "a", map[string]any{"env": map[string]string{"FX_PIN": pin, "FX_TOKEN": token}})
	connectServer(t, d, "a")
	connectServer(t, d, "b")

	cands := candidates(t, pin, 10000, 4242)
	var probes []*probe
	for _, b := range batches(cands, 100) {
		text := strings.Join(b, " ")
		probes = append(probes,
			&probe{method: contracts.MethodMCPCall, params: contracts.CallParams{Server: "b", Tool: "echo",
				Arguments: mustJSON(t, map[string]string{"text": text})}},
			&probe{method: contracts.MethodMCPCall, params: contracts.CallParams{Server: "b", Tool: "decode",
				Arguments: mustJSON(t, map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(text))})}})
	}
	runProbes(t, d, probes)
	for i, p := range probes {
		if strings.Contains(p.reply, redactedMark) {
			t.Errorf("b's answer holds %s: %.300s", redactedMark, p.reply)
		}
		batch := strings.Join(batches(cands, 100)[i/2], " ")
		if !strings.Contains(p.reply, batch) {
			t.Errorf("b's answer %d is not the batch as sent: %.300s", i, p.reply)
		}
	}
	// a's own answer still loses a's value.
	res := callTool(t, d, "a", "leak-error", `{"pad":0}`)
	if msg := fmt.Sprintf("%+v", res.Error); res.Error == nil || strings.Contains(msg, pin) || !strings.Contains(msg, redactedMark) {
		t.Errorf("a's leak-error: %s, want its value redacted", msg)
	}
	// a's long token is removed from b's answers: it cannot be guessed.
	res = callTool(t, d, "b", "decode", string(mustJSON(t, map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte("t=" + token))})))
	if got := callText(t, res); got != "t="+redactedMark {
		t.Errorf("b's decode of a's long token: %q, want it redacted", got)
	}
}

// TestRedactionProbeWarning: a connection whose answers need many
// redactions is logged at warn, with its pid and the count, never a
// value.
func TestRedactionProbeWarning(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("a", "--leak-env", "FX_TOKEN").with("readOnlyTools", []string{"leak-error"})))
	token := "probe-token-" + randomHex(t, 8)
	storeSecret(t, d, "a", map[string]any{"env": map[string]string{"FX_TOKEN": token}})
	connectServer(t, d, "a")
	var probes []*probe
	for range 150 {
		probes = append(probes, &probe{method: contracts.MethodMCPCall,
			params: contracts.CallParams{Server: "a", Tool: "leak-error", Arguments: json.RawMessage(`{"pad":0}`)}})
	}
	runProbes(t, d, probes)
	for _, p := range probes {
		if !strings.Contains(p.reply, redactedMark) {
			t.Fatalf("leak-error: %.300s, want the token redacted", p.reply)
		}
	}
	var lines []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if lines = d.logLines(t, "a caller may be probing"); len(lines) > 0 {
			break
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d probing warnings logged, want 1 (once a window):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[0], `"level":"warn"`) || !strings.Contains(lines[0], `"redactions":`) || !strings.Contains(lines[0], `"peer_pid":`) {
		t.Errorf("warning %s, want level warn with peer_pid and redactions", lines[0])
	}
	for _, l := range d.logLines(t) {
		if strings.Contains(l, token) {
			t.Errorf("the log holds the token: %s", l)
		}
	}
}

// TestOracleServerErrorEchoes: a server whose error message quotes the
// caller's argument (a validation error) was a test bench: the message was
// redacted with every stored value, so the right guess of the server's own
// PIN came back [REDACTED]. The error is now redacted through the view of
// the request: what the caller sent comes back as sent, right guess or
// wrong.
func TestOracleServerErrorEchoes(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("a", "--leak-env", "FX_PIN").with("readOnlyTools", []string{"leak-error", "error-echo"})))
	pin := fmt.Sprintf("%06d", mathrand.IntN(1000000))
	storeSecret(t, d, "a", map[string]any{"env": map[string]string{"FX_PIN": pin}})
	connectServer(t, d, "a")
	cands := candidates(t, pin, 10000, 99)
	var probes []*probe
	for _, b := range batches(cands, 100) {
		probes = append(probes, &probe{method: contracts.MethodMCPCall, params: contracts.CallParams{Server: "a", Tool: "error-echo",
			Arguments: mustJSON(t, map[string]string{"text": strings.Join(b, " ")})}})
	}
	runProbes(t, d, probes)
	for i, p := range probes {
		if strings.Contains(p.reply, redactedMark) {
			t.Errorf("a's error answer %d holds %s: %.300s", i, redactedMark, p.reply)
		}
		if batch := strings.Join(batches(cands, 100)[i], " "); !strings.Contains(p.reply, batch) {
			t.Errorf("a's error answer %d does not quote the batch as sent: %.300s", i, p.reply)
		}
	}
	// The receipts, listed to every client, quote no argument either: the
	// right guess and the wrong ones leave the same record.
	var recs contracts.ReceiptsResult
	d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Server: "a", Limit: 1000}, &recs)
	if len(recs.Receipts) < len(probes) {
		t.Fatalf("%d receipts for %d calls", len(recs.Receipts), len(probes))
	}
	for _, r := range recs.Receipts {
		if strings.Contains(r.Error, redactedMark) || !strings.Contains(r.Error, "[argument]") {
			t.Errorf("a receipt's error tells the guess apart: %.200s", r.Error)
			break
		}
	}
	// What the server says of its own accord is still redacted.
	res := callTool(t, d, "a", "leak-error", `{"pad":0}`)
	if msg := fmt.Sprintf("%+v", res.Error); res.Error == nil || strings.Contains(msg, pin) {
		t.Errorf("a's leak-error: %s, want its value redacted", msg)
	}
}

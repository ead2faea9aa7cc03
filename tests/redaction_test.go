package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// jsonStrings returns every string (object keys included) of a JSON text.
func jsonStrings(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("reading %.300s: %v", b, err)
		}
		if s, ok := tok.(string); ok {
			out = append(out, s)
		}
	}
}

// generationOf returns, as written, the connection generation of the one
// server in a status result.
func generationOf(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var st struct {
		Servers []struct {
			Generation json.Number `json:"generation"`
		} `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil || len(st.Servers) != 1 {
		t.Fatalf("status %.500s: %v", raw, err)
	}
	return st.Servers[0].Generation.String()
}

// TestRedactionShortAndNumericSecrets: credential values that occur all
// over ordinary output ("1796", the start of every connection generation
// in late 2026, and "false") are stored and used, but refused for
// redaction with a warning, and nothing breaks: every frame of secret,
// status, catalog and calls parses, and the CLI works. A 7-digit value
// that also occurs inside a JSON number on the wire is redacted from
// strings only: the number is untouched. Log lines stay valid JSON.
func TestRedactionShortAndNumericSecrets(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t, withPikodArgs("--log-level", "debug"))
	var w wireLog
	call := func(method string, params, out any) json.RawMessage {
		t.Helper()
		return w.result(t, d.socket, method, params, out)
	}
	call(contracts.MethodConfigure, map[string]any{"extension": "mcp", "settings": json.RawMessage(mcpSettings(t,
		stdioFixture("nx", "--name-env", "FX_NAME").with("readOnlyTools", []string{"echo"})))}, nil)
	call(contracts.MethodMCPConnect, contracts.ServerParams{Server: "nx"}, nil)
	gen := generationOf(t, call(contracts.MethodMCPStatus, contracts.StatusParams{Server: "nx"}, nil))
	if len(gen) < 12 {
		t.Fatalf("connection generation %s is too short to take values from", gen)
	}
	// The values come from a number the daemon puts on the wire: the
	// first four digits, and seven from inside it.
	short, seven := gen[:4], gen[3:10]
	t.Logf("generation %s: short value %q, 7-digit value %q", gen, short, seven)

	var res contracts.SecretResult
	call(contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "nx", Credentials: map[string]any{
		"env": map[string]string{"FX_SHORT": short, "FX_FALSE": "false", "FX_SEVEN": seven, "FX_NAME": "nx " + seven}}}, &res)
	if want := []string{"env.FX_FALSE", "env.FX_SHORT"}; !slices.Equal(res.Unprotected, want) {
		t.Errorf("extensions.secret unprotected = %q, want %q", res.Unprotected, want)
	}
	if !strings.Contains(res.Warning, "env.FX_SHORT") || !strings.Contains(res.Warning, "6 characters") {
		t.Errorf("extensions.secret warning = %q, want it to name env.FX_SHORT and the 6-character rule", res.Warning)
	}
	// pikoctl says it at entry too.
	creds := string(mustJSON(t, map[string]any{"env": map[string]string{"FX_SHORT": short, "FX_FALSE": "false", "FX_SEVEN": seven, "FX_NAME": "nx " + seven}}))
	_, stderr, code := runCtl(t, d, creds, "mcp", "secret", "nx")
	if code != 0 || !strings.Contains(stderr, "warning:") || !strings.Contains(stderr, "env.FX_FALSE") {
		t.Errorf("pikoctl mcp secret: exit %d, stderr %q; want a warning naming env.FX_FALSE", code, stderr)
	}

	// The new credentials take effect on a new connection (generation+1:
	// the same leading digits).
	call(contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "nx"}, nil)
	call(contracts.MethodMCPConnect, contracts.ServerParams{Server: "nx"}, nil)
	raw := call(contracts.MethodMCPStatus, contracts.StatusParams{}, nil)
	gen2 := generationOf(t, raw)
	if !strings.Contains(gen2, seven) || !bytes.Contains(raw, []byte(`"generation":`+gen2)) {
		t.Fatalf("status %.600s: generation %s lost the digits %s or was rewritten", raw, gen2, seven)
	}
	call(contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "nx"}, nil)
	text := "short=" + short + " false=false seven=" + seven + " in a word x" + seven + "y"
	var out contracts.CallResult
	// The caller sent the 7-digit value itself: it comes back as sent
	// (redacting it would tell the caller that it is a secret), so this
	// answer is kept out of the frames checked below.
	var own wireLog
	own.result(t, d.socket, contracts.MethodMCPCall, contracts.CallParams{Server: "nx", Tool: "echo", Arguments: mustJSON(t, map[string]string{"text": text})}, &out)
	if out.Status != contracts.CallCompleted {
		t.Fatalf("echo: %+v", out)
	}
	if got := callText(t, out); got != text {
		t.Errorf("echo text %q, want %q: the caller's own text, as it sent it", got, text)
	}
	call(contracts.MethodMCPReceipts, contracts.ReceiptsParams{}, nil)
	call(contracts.MethodSettings, map[string]any{"extension": "mcp"}, nil)

	// The CLI reads the same frames.
	for _, args := range [][]string{{"mcp", "status"}, {"--json", "mcp", "status"}, {"mcp", "catalog", "nx"}} {
		if stdout, stderr, code := runCtl(t, d, "", args...); code != 0 {
			t.Errorf("pikoctl %q: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	if stdout, stderr, code := runCtl(t, d, string(mustJSON(t, map[string]string{"text": text})), "mcp", "call", "nx", "echo"); code != 0 || !strings.Contains(stdout, seven) {
		t.Errorf("pikoctl mcp call: exit %d\n%s%s", code, stdout, stderr)
	}

	// Every frame parses; no string in one holds the 7-digit value.
	for _, f := range w.frames {
		if !json.Valid(f) {
			t.Fatalf("invalid frame %.500s", f)
		}
		for _, s := range jsonStrings(t, f) {
			if strings.Contains(s, seven) {
				t.Errorf("a frame's string holds %q: %q", seven, s)
			}
		}
	}
	d.stop(t)
	lines := d.logLines(t)
	if len(lines) == 0 {
		t.Fatal("no log lines")
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("log line is not JSON: %s", l)
			continue
		}
		for _, s := range jsonStrings(t, []byte(l)) {
			if strings.Contains(s, seven) {
				t.Errorf("log line holds %q in a string: %s", seven, l)
			}
		}
	}
	// The server named itself after a credential: the connected line
	// carries the generation as a number and the name redacted.
	if got := d.logLines(t, `"connected"`, `"server_name":"`+redactedMark+`"`, `"generation":`+gen2); len(got) == 0 {
		t.Errorf("no log line reports nx connected with its generation and its name redacted:\n%s", strings.Join(d.logLines(t, `"connected"`), "\n"))
	}
}

// canaryLetters is the alphabet of cut canaries: lowercase consonants
// without a-f, so no piece of one turns up in hex digests, base32 ids or
// English log text by chance.
const canaryLetters = "ghjklmnpqrstvwxz"

func newCutCanary(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(canaryLetters))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(canaryLetters[i.Int64()])
	}
	return b.String()
}

// assertNoPiece fails when b holds any 6 consecutive characters of secret
// (and so any longer prefix, suffix or middle of it).
func assertNoPiece(t testing.TB, where string, b []byte, secret string) {
	t.Helper()
	for i := 0; i+6 <= len(secret); i++ {
		if j := bytes.Index(b, []byte(secret[i:i+6])); j >= 0 {
			lo, hi := max(j-120, 0), min(j+120, len(b))
			t.Errorf("%s holds %q, a piece of the secret (characters %d-%d); around it:\n%s", where, secret[i:i+6], i, i+6, b[lo:hi])
			return
		}
	}
}

// stderrRingBytes is the daemon's stderr tail (mcpclient
// DefaultStderrRingBytes, documented in the README).
const stderrRingBytes = 16 << 10

// TestRedactionCutCanary: a server prints a 23-character credential where
// pikod cuts text to a length: at the end of the stderr tail's window, at
// the 1000-character bound of an upstream error message, and (through a
// caller) at the 200-character bound of a quoted tool name. Redaction
// comes before every cut, so no piece of 6 or more characters reaches a
// response, the log file, pikod's stderr or any file of the state
// directory (pikod.db with its receipts included).
func TestRedactionCutCanary(t *testing.T) {
	t.Parallel()
	secret := newCutCanary(t, 23)
	d := vaultDaemon(t, withPikodArgs("--log-level", "debug"))
	var w wireLog
	call := func(method string, params, out any) json.RawMessage {
		t.Helper()
		return w.result(t, d.socket, method, params, out)
	}
	// The tail keeps the last stderrRingBytes: the value's last 11
	// characters and its newline, then the filler.
	after := stderrRingBytes - 12
	call(contracts.MethodConfigure, map[string]any{"extension": "mcp", "settings": json.RawMessage(mcpSettings(t,
		stdioFixture("cx", "--leak-env", "FX_SECRET", "--stderr-leak-after", strconv.Itoa(after)).
			with("readOnlyTools", []string{"leak-error", "echo"})))}, nil)
	storeSecret(t, d, "cx", map[string]any{"env": map[string]string{"FX_SECRET": secret}})
	call(contracts.MethodMCPConnect, contracts.ServerParams{Server: "cx"}, nil)

	// The stderr tail: the window's start falls inside the value.
	var st contracts.StatusResult
	poll(t, "the filler to reach the stderr tail", func() bool {
		call(contracts.MethodMCPStatus, contracts.StatusParams{Server: "cx"}, &st)
		return strings.Count(st.Servers[0].StderrTail, "\n") >= after/80
	}, func() string { return st.Servers[0].StderrTail })
	assertNoPiece(t, "the stderr tail", []byte(st.Servers[0].StderrTail), secret)

	// An upstream error message of 990 dots and the value: the bound of
	// 1000 characters falls inside it.
	var res contracts.CallResult
	call(contracts.MethodMCPCall, contracts.CallParams{Server: "cx", Tool: "leak-error", Arguments: mustJSON(t, map[string]int{"pad": 990})}, &res)
	if res.Status != contracts.CallFailed || res.Error == nil || !strings.Contains(res.Error.Message, ".........") {
		t.Errorf("leak-error: %+v, want failed with the server's message", res)
	}
	for _, pad := range []int{0, 1980} {
		call(contracts.MethodMCPCall, contracts.CallParams{Server: "cx", Tool: "leak-error", Arguments: mustJSON(t, map[string]int{"pad": pad})}, nil)
	}
	// A caller names a tool of 190 characters and the value: unknown, and
	// the name is quoted up to 200 characters.
	// The answer quotes the caller's own text as it sent it, cut: redacted,
	// it would tell the caller that the name holds a secret. So that
	// answer is not among the frames checked below; nothing of it is kept.
	var own wireLog
	_, we := own.call(t, d.socket, contracts.MethodMCPCall, contracts.CallParams{Server: "cx", Tool: strings.Repeat("t", 190) + secret})
	if we == nil || we.Reason() != "unknown_tool" {
		t.Errorf("calling a tool named after the value: %v, want unknown_tool", we)
	} else if !strings.Contains(we.Message, strings.Repeat("t", 190)+secret[:10]+"…") {
		t.Errorf("unknown_tool message %q, want the caller's name as sent, cut at 200 characters", we.Message)
	}
	call(contracts.MethodMCPReceipts, contracts.ReceiptsParams{}, nil)
	var cli bytes.Buffer
	for _, args := range [][]string{{"mcp", "status", "cx"}, {"--json", "mcp", "status"}, {"--json", "mcp", "receipts"}} {
		stdout, stderr, _ := runCtl(t, d, "", args...)
		cli.WriteString(stdout + stderr)
	}
	stdout, stderr, _ := runCtl(t, d, `{"pad":990}`, "mcp", "call", "cx", "leak-error")
	cli.WriteString(stdout + stderr)

	p := d.current()
	d.stop(t)
	assertNoPiece(t, "the frames the daemon sent", w.all(), secret)
	assertNoPiece(t, "pikoctl's output", cli.Bytes(), secret)
	assertNoPiece(t, "pikod's stderr", []byte(p.stderr.String()+p.stdout.String()), secret)
	var files int
	err := filepath.WalkDir(d.stateDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assertNoPiece(t, path, b, secret)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the state directory: %v", err)
	}
	if n := len(d.logLines(t, "leak-error")); n == 0 {
		t.Errorf("the log never mentions the failing calls")
	}
	t.Logf("checked %d frames, %d state files", len(w.frames), files)
}

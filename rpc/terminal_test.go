//go:build linux || darwin

package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// callerEnv switches the test binary into a client that makes the calls
// it reads from stdin (one {"method","params"} per line) on the socket
// named by the variable, and writes one outcome per line to stdout. The
// tests start it in a new session with stdin a pipe: a peer without a
// terminal, as an agent's child process or a script is.
const callerEnv = "PIKO_RPC_CALLER"

func init() {
	if socket := os.Getenv(callerEnv); socket != "" {
		os.Exit(callerMain(socket))
	}
}

type callerCall struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type callerOutcome struct {
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *contracts.Error `json:"error,omitempty"`
	Failure string           `json:"failure,omitempty"`
}

func callerMain(socket string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "caller:", err)
		return 1
	}
	defer c.Close()
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var call callerCall
		if err := json.Unmarshal(sc.Bytes(), &call); err != nil {
			fmt.Fprintln(os.Stderr, "caller: bad line:", err)
			return 2
		}
		var params any
		if call.Params != nil {
			params = call.Params
		}
		var out callerOutcome
		err := c.Call(ctx, call.Method, params, &out.Result)
		var we *contracts.Error
		switch {
		case errors.As(err, &we):
			out.Error = we
		case err != nil:
			out.Failure = err.Error()
		}
		if err := enc.Encode(out); err != nil {
			return 1
		}
	}
	return 0
}

// callWithoutTerminal makes calls from a child process that has no
// controlling terminal and a pipe as stdin.
func callWithoutTerminal(t *testing.T, socket string, calls []callerCall) []callerOutcome {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, c := range calls {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), callerEnv+"="+socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("caller: %v; stderr:\n%s", err, stderr.String())
	}
	var outcomes []callerOutcome
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var o callerOutcome
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("caller output: %v\n%s", err, out)
		}
		outcomes = append(outcomes, o)
	}
	if len(outcomes) != len(calls) {
		t.Fatalf("caller answered %d calls, want %d; stderr:\n%s", len(outcomes), len(calls), stderr.String())
	}
	return outcomes
}

// tableServer registers a handler for every method of
// contracts.MethodTable that counts its calls.
type tableServer struct {
	*Server
	// mu guards the fields that follow.
	mu      sync.Mutex
	ran     map[string]int
	checked map[string]int
}

func newTableServer(opts Options, check func(context.Context, *Request) error) *tableServer {
	ts := &tableServer{ran: map[string]int{}, checked: map[string]int{}}
	if check != nil {
		opts.OwnerCheck = func(ctx context.Context, req *Request) error {
			ts.mu.Lock()
			ts.checked[req.Method]++
			ts.mu.Unlock()
			return check(ctx, req)
		}
	}
	ts.Server = NewServer(opts)
	for _, m := range contracts.MethodTable {
		ts.Register(m.Name, func(context.Context, *Request) (any, error) {
			ts.mu.Lock()
			ts.ran[m.Name]++
			ts.mu.Unlock()
			return "ran", nil
		})
	}
	return ts
}

func (ts *tableServer) counts(method string) (ran, checked int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.ran[method], ts.checked[method]
}

// terminalCases returns, for each method of the table, calls that must
// be checked and calls that must reach the handler without a terminal.
func terminalCases() (checked, free []callerCall) {
	for _, m := range contracts.MethodTable {
		if !m.TerminalOnly() {
			free = append(free, callerCall{Method: m.Name, Params: json.RawMessage(`{}`)})
			continue
		}
		checked = append(checked,
			callerCall{Method: m.Name},
			callerCall{Method: m.Name, Params: json.RawMessage(`{}`)},
			callerCall{Method: m.Name, Params: json.RawMessage(`{"passphrase":"whatever-it-is"}`)})
		if e := m.Exempt; e != nil {
			f := e.Field
			checked = append(checked,
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{%q:"not-%s"}`, f, e.Value))},
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{%q:[%q]}`, f, e.Value))},
				// encoding/json matches names case-insensitively and the
				// last duplicate wins: the handler would see "approve".
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{%q:%q,%q:"other"}`, f, e.Value, strings.ToUpper(f)))},
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{%q:%q,%q:"other"}`, f, e.Value, f))},
			)
			free = append(free,
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{%q:%q}`, f, e.Value))},
				callerCall{Method: m.Name, Params: json.RawMessage(fmt.Sprintf(`{"x":1,%q:"other",%q:%q}`, f, strings.ToUpper(f), e.Value))})
		}
	}
	return checked, free
}

// TestTerminalOnlyMethodsRefuseWithoutTerminal walks the method table:
// every call of a TerminalOnly method from a peer without a terminal is
// refused with terminal_required before its handler or the owner check
// runs; exempt calls and every other method reach their handler.
func TestTerminalOnlyMethodsRefuseWithoutTerminal(t *testing.T) {
	var logBuf testsupport.Buffer
	ts := newTableServer(Options{Log: zerolog.New(&logBuf)}, func(context.Context, *Request) error { return nil })
	socket := startServer(t, ts.Server)
	checked, free := terminalCases()
	if len(checked) == 0 {
		t.Fatal("the method table has no terminal-only method")
	}
	outcomes := callWithoutTerminal(t, socket, append(append([]callerCall{}, checked...), free...))
	for i, call := range checked {
		o := outcomes[i]
		if o.Error == nil || o.Error.Reason() != "terminal_required" || o.Error.Data.Check != contracts.TerminalNone ||
			!errors.Is(o.Error, contracts.ErrPermissionDenied) {
			t.Errorf("%s %s without a terminal: %+v, want permission denied, terminal_required, check %s", call.Method, call.Params, o, contracts.TerminalNone)
			continue
		}
		if !strings.Contains(o.Error.Message, "no controlling terminal") || !strings.Contains(o.Error.Message, call.Method) {
			t.Errorf("%s: message %q does not say the caller has no terminal and name the method", call.Method, o.Error.Message)
		}
		if o.Error.Data.Hint == "" {
			t.Errorf("%s: refusal without a hint", call.Method)
		}
	}
	// The handler of each method ran exactly for its free calls.
	wantRan := map[string]int{}
	for _, call := range free {
		wantRan[call.Method]++
	}
	for _, m := range contracts.MethodTable {
		if ran, chk := ts.counts(m.Name); ran != wantRan[m.Name] || chk != 0 {
			t.Errorf("%s: handler ran %d times, the owner check %d times; want %d (the exempt and free calls) and 0",
				m.Name, ran, chk, wantRan[m.Name])
		}
	}
	for i, call := range free {
		o := outcomes[len(checked)+i]
		if o.Error != nil || o.Failure != "" || string(o.Result) != `"ran"` {
			t.Errorf("%s %s without a terminal: %+v, want the handler's answer", call.Method, call.Params, o)
		}
	}
	if s := logBuf.String(); strings.Contains(s, "whatever-it-is") || !strings.Contains(s, "terminal-only call refused") {
		t.Errorf("the log must record refusals without params; log:\n%s", s)
	}
}

// TestTerminalOnlyOwnerCheck covers what follows the terminal checks: the
// owner check decides, and without one every terminal-only call is refused.
func TestTerminalOnlyOwnerCheck(t *testing.T) {
	passes := func(Peer, int) error { return nil }
	denied := errors.New("wrong passphrase")
	ts := newTableServer(Options{}, func(_ context.Context, req *Request) error {
		if strings.Contains(string(req.Params), `"passphrase":"right"`) {
			return nil
		}
		return contracts.Errorf(contracts.ErrPermissionDenied, "passphrase_wrong", "%v", denied)
	})
	ts.checkPeer = passes
	c := dial(t, startServer(t, ts.Server))

	unset := newTableServer(Options{}, nil)
	unset.checkPeer = passes
	cu := dial(t, startServer(t, unset.Server))

	for _, m := range contracts.MethodTable {
		if !m.TerminalOnly() {
			continue
		}
		var res string
		err := c.Call(callCtx(t), m.Name, map[string]string{"passphrase": "wrong"}, &res)
		var we *contracts.Error
		if !errors.As(err, &we) || we.Reason() != "passphrase_wrong" {
			t.Errorf("%s with a wrong passphrase: %v, want the owner check's passphrase_wrong", m.Name, err)
		}
		if ran, chk := ts.counts(m.Name); ran != 0 || chk != 1 {
			t.Errorf("%s: handler ran %d times, owner check %d times; want 0 and 1", m.Name, ran, chk)
		}
		if err := c.Call(callCtx(t), m.Name, map[string]string{"passphrase": "right"}, &res); err != nil || res != "ran" {
			t.Errorf("%s with the right passphrase: %q, %v; want the handler's answer", m.Name, res, err)
		}
		if ran, _ := ts.counts(m.Name); ran != 1 {
			t.Errorf("%s: handler ran %d times, want 1", m.Name, ran)
		}

		err = cu.Call(callCtx(t), m.Name, map[string]string{}, &res)
		if !errors.As(err, &we) || we.Reason() != "owner_check_unavailable" || !errors.Is(err, contracts.ErrPermissionDenied) {
			t.Errorf("%s on a server without an owner check: %v, want a refusal", m.Name, err)
		}
		if ran, _ := unset.counts(m.Name); ran != 0 {
			t.Errorf("%s: handler ran without an owner check", m.Name)
		}
	}
}

// TestTerminalCheckCannotBeMade: a peer whose pid is unknown (a listener
// not made by Listen) is refused as unchecked.
func TestTerminalCheckCannotBeMade(t *testing.T) {
	err := Peer{}.CheckTerminal(os.Getuid())
	var te *TerminalError
	if !errors.As(err, &te) || te.Check != contracts.TerminalUnchecked {
		t.Fatalf("CheckTerminal of pid 0 = %v, want %s", err, contracts.TerminalUnchecked)
	}
	if we := terminalRefusal(contracts.MethodMCPActionsApprove, te); we.Reason() != "terminal_required" || we.Data.Check != contracts.TerminalUnchecked {
		t.Errorf("refusal %+v", we)
	}
}

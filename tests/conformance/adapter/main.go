// Command adapter is the client under test of the official MCP client
// conformance suite (@modelcontextprotocol/conformance): the suite runs it
// as `--command ADAPTER`, with the scenario server's URL as the last
// argument, MCP_CONFORMANCE_SCENARIO and, for some scenarios,
// MCP_CONFORMANCE_CONTEXT.
//
// The adapter is pikod's owner, not an MCP or OAuth client: it starts a
// temporary pikod instance, configures the scenario's server with pikod's
// default settings (plus what the scenario's context requires), and then
// does what a person does, through pikoctl only: calls the scenario's tool,
// signs in when pikod asks (opening the authorization URL pikod printed
// the way a browser does), approves the prepared action at a terminal
// (a pseudo-terminal it drives), and exits. It always stops its pikod by
// pid and removes its temporary directory.
//
// It may import contracts (the wire's types) and creack/pty, nothing of
// pikod's MCP or OAuth code and no MCP or OAuth library
// (tests/deps_test.go).
//
// Usage: adapter [-bin DIR] [-log DIR] [-deadline D] [-protocol P] URL
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pikod/pikod/contracts"
)

// serverID is the id of the scenario's server in the settings.
const serverID = "conf"

// maxSignIns bounds how often the adapter signs in again when pikod asks.
// It is above the 3 authorization requests the suite allows, so that a
// pikod that keeps asking fails auth/scope-retry-limit instead of the
// adapter hiding it.
const maxSignIns = 5

func main() {
	os.Exit(realMain())
}

func realMain() int {
	self, _ := os.Executable()
	fs := flag.NewFlagSet("adapter", flag.ContinueOnError)
	binDir := fs.String("bin", filepath.Dir(self), "directory holding pikod and pikoctl")
	logDir := fs.String("log", "", "directory for the adapter's and pikod's logs (default: stderr only)")
	deadline := fs.Duration("deadline", 20*time.Second, "give up and clean up after this long (keep it under the suite's --timeout)")
	protocol := fs.String("protocol", "", "set the server's protocol setting (default: pikod's default)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "adapter: the scenario server's URL must be the last argument")
		return 2
	}
	target := fs.Arg(fs.NArg() - 1)
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")

	log := &logger{start: time.Now(), w: os.Stderr}
	base := ""
	if *logDir != "" {
		base = filepath.Join(*logDir, LogName(name, *protocol))
		f, err := os.OpenFile(base+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "adapter: opening the log: %v\n", err)
			return 1
		}
		defer f.Close()
		log.w = io.MultiWriter(os.Stderr, f)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()

	err := run(ctx, log, config{
		scenario: name, url: target, binDir: *binDir, logBase: base, protocol: *protocol,
	})
	if err != nil {
		log.printf("RESULT: failed: %v", err)
		return 1
	}
	log.printf("RESULT: ok")
	return 0
}

// LogName is the file name (without extension) of a scenario's logs.
func LogName(scenario, protocol string) string {
	n := strings.ReplaceAll(scenario, "/", "_")
	if protocol != "" {
		n += "." + protocol
	}
	return n
}

type config struct {
	scenario, url, binDir, logBase, protocol string
}

// errRefused marks a failure that is pikod's considered refusal (an error
// answer or a failed state with a reason), as opposed to the adapter's own
// trouble.
var errRefused = errors.New("pikod refused")

func run(ctx context.Context, log *logger, cfg config) error {
	sp, ok := scenarios[cfg.scenario]
	if !ok {
		return fmt.Errorf("unknown scenario %q: add it to tests/conformance/adapter/scenarios.go", cfg.scenario)
	}
	log.printf("scenario %s, server %s", cfg.scenario, cfg.url)
	vals, err := contextValues(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	if len(vals) > 0 {
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		log.printf("context members (values not logged): %s", strings.Join(keys, ", "))
	}

	dir, err := os.MkdirTemp("", "pkconf")
	if err != nil {
		return err
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			log.printf("removing %s: %v", dir, err)
		}
	}()
	in := &instance{
		pikod:      filepath.Join(cfg.binDir, "pikod"),
		pikoctl:    filepath.Join(cfg.binDir, "pikoctl"),
		dir:        dir,
		log:        log,
		stderrPath: filepath.Join(dir, "pikod.stderr"),
	}
	pikodLog := ""
	if cfg.logBase != "" {
		in.stderrPath = cfg.logBase + ".pikod-stderr"
		pikodLog = cfg.logBase + ".pikod-log.json"
	}
	defer in.stop(pikodLog)
	if err := in.start(ctx); err != nil {
		return err
	}

	entry := map[string]any{
		"id": serverID, "transport": "http", "url": cfg.url, "allowPrivateNetwork": true,
	}
	if sp.Extra != "" {
		var extra map[string]json.RawMessage
		if err := json.Unmarshal([]byte(sp.Extra), &extra); err != nil {
			return fmt.Errorf("the scenario's Extra is not a JSON object: %w", err)
		}
		for k, v := range extra {
			entry[k] = v
		}
	}
	if cfg.protocol != "" {
		entry["protocol"] = cfg.protocol
	}
	if sp.OAuth != "" {
		if sp.needsIssuer() {
			// Two steps, as an owner with a pre-registered client does:
			// ask pikod what discovery finds, then name that issuer.
			if err := configure(ctx, in, entry); err != nil {
				return err
			}
			issuer, err := discoverIssuer(ctx, in)
			if err != nil {
				return err
			}
			vals["issuer"] = issuer
		}
		oauth, err := fill(sp.OAuth, vals)
		if err != nil {
			return fmt.Errorf("the oauth settings: %w", err)
		}
		entry["oauth"] = oauth
	}
	if err := configure(ctx, in, entry); err != nil {
		return err
	}
	if sp.Secret != "" {
		secret, err := fill(sp.Secret, vals)
		if err != nil {
			return fmt.Errorf("the credentials: %w", err)
		}
		r := in.ctl(ctx, secret, "--json", "mcp", "secret", serverID)
		if r.code != 0 {
			return refused(log, "pikoctl mcp secret", r)
		}
		log.printf("credentials stored: %s", firstLineOf(r.stdout))
	}

	if sp.Tool == "" {
		r := in.ctl(ctx, nil, "mcp", "connect", serverID)
		log.printf("pikoctl mcp connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		if r.code != 0 {
			return refused(log, "pikoctl mcp connect", r)
		}
		return nil
	}
	if sp.Elicit {
		// The owner answers the server's elicitation at the terminal
		// while the call waits for it.
		ectx, stop := context.WithCancel(ctx)
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			in.answerElicitations(ectx)
		}()
		defer func() {
			stop()
			<-answered
		}()
	}
	err = callLoop(ctx, log, in, sp)
	switch {
	case err == nil && sp.Refusal:
		return errors.New("pikod completed the call: it should have refused to sign in")
	case err != nil && sp.Refusal && errors.Is(err, errRefused):
		log.printf("pikod refused, as the scenario requires: %v", err)
		return nil
	case err != nil && sp.GiveUpOK && errors.Is(err, errRefused):
		log.printf("pikod gave up, which the scenario allows: %v", err)
		return nil
	}
	return err
}

// signInReasons are the error reasons that ask the owner to sign in.
var signInReasons = map[string]bool{"needs_auth": true, "insufficient_scope": true}

// callLoop calls the tool as the owner would, until it completes: it
// approves a prepared action at the terminal and signs in whenever pikod
// says the server needs it (at most maxSignIns times).
func callLoop(ctx context.Context, log *logger, in *instance, sp spec) error {
	signIns := 0
	for round := 1; ; round++ {
		r := in.ctl(ctx, []byte(sp.Args), "--json", "mcp", "call", serverID, sp.Tool)
		log.printf("call %d: pikoctl mcp call %s %s %s: exit %d", round, serverID, sp.Tool, sp.Args, r.code)
		res, werr, err := callResult(r)
		if res != nil && res.Status == contracts.CallApprovalRequired {
			log.printf("call %d: prepared action %s; approving it at the terminal", round, res.ActionID)
			ar, aerr := in.approve(ctx, res.ActionID)
			if aerr != nil {
				return aerr
			}
			log.printf("approve: exit %d; terminal:\n%s", ar.code, indent(ar.stderr))
			res, werr, err = callResult(ar)
			r = ar
		}
		switch {
		case res != nil && res.Status == contracts.CallCompleted:
			log.printf("call %d completed: %s", round, snippet(res.Content))
			return nil
		case res != nil:
			msg := res.Status
			if res.Error != nil {
				msg += ": " + describe(res.Error)
			}
			log.printf("call %d ended %s", round, msg)
		case werr != nil:
			log.printf("call %d: pikod answered: %s", round, describe(werr))
		case err != nil:
			log.printf("call %d: no result from pikoctl (exit %d): %s %s", round, r.code, strings.TrimSpace(r.stdout), strings.TrimSpace(r.stderr))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}

		st, serr := in.status(ctx, serverID)
		if serr != nil {
			return serr
		}
		log.printf("status: state %s, protocol %q, last error %q", st.State, st.ProtocolVersion, st.LastError)
		callErr := werr
		if callErr == nil && res != nil {
			callErr = res.Error
		}
		// The owner signs in when pikod says the server needs it: the
		// server's state, or the call's error (a 403 insufficient_scope
		// refuses one request and may leave the connection up).
		needsSignIn := st.State == contracts.StateNeedsAuth
		if callErr != nil && signInReasons[callErr.Reason()] {
			needsSignIn = true
		}
		if !needsSignIn || !sp.SignIn {
			why := "the call did not complete"
			if callErr != nil {
				why = describe(callErr)
			}
			log.printf("pikod refused: %s; status %s: %s", why, st.State, st.LastError)
			return fmt.Errorf("%w: %s (state %s: %s)", errRefused, why, st.State, st.LastError)
		}
		if signIns == maxSignIns {
			return fmt.Errorf("pikod still needs a sign-in after %d sign-ins", signIns)
		}
		signIns++
		if err := signIn(ctx, log, in, sp, signIns); err != nil {
			return err
		}
	}
}

var urlRE = regexp.MustCompile(`https?://[^\s"'<>]+`)

// authorizationURL finds the authorization URL in a line of pikoctl's
// output: the first http(s) URL carrying response_type, else "".
func authorizationURL(line string) string {
	for _, u := range urlRE.FindAllString(line, -1) {
		if strings.Contains(u, "response_type=") {
			return u
		}
	}
	return ""
}

// signIn runs 'pikoctl mcp auth SERVER' and, when it prints an
// authorization URL, plays the browser. It waits until pikoctl reports
// the outcome.
func signIn(ctx context.Context, log *logger, in *instance, sp spec, n int) error {
	log.printf("sign-in %d: pikoctl mcp auth %s", n, serverID)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd := exec.CommandContext(actx, in.pikoctl, "--socket", in.socket, "mcp", "auth", serverID)
	cmd.Env, cmd.Dir = in.env, in.dir
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("starting pikoctl mcp auth: %w", err)
	}
	pw.Close()

	var (
		mu     sync.Mutex
		output strings.Builder
	)
	// browsed gets the browser's outcome once, if the scanner opened a URL;
	// a failed browser step cancels pikoctl, which would otherwise wait
	// for a callback that never comes.
	browsed := make(chan error, 1)
	opened := false
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.printf("pikoctl mcp auth: %s", redactLine(line))
			mu.Lock()
			output.WriteString(line + "\n")
			first := !opened
			mu.Unlock()
			if !first {
				continue
			}
			u := authorizationURL(line)
			if u == "" {
				continue
			}
			mu.Lock()
			opened = true
			mu.Unlock()
			if !sp.Browser {
				browsed <- errors.New("pikod asked for a browser sign-in, but this grant needs none")
				cancel()
				continue
			}
			go func() {
				err := browse(actx, log, u)
				if err != nil {
					cancel()
				}
				browsed <- err
			}()
		}
	}()
	werr := cmd.Wait()
	<-lines
	mu.Lock()
	wasOpened := opened
	out := output.String()
	mu.Unlock()
	if wasOpened {
		if berr := <-browsed; berr != nil {
			return berr
		}
	}
	code := cmd.ProcessState.ExitCode()
	log.printf("sign-in %d: pikoctl mcp auth exited %d", n, code)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if code != 0 {
		return refused(log, "pikoctl mcp auth", result{code: code, stderr: out})
	}
	if werr != nil && code == 0 {
		return werr
	}
	return nil
}

// configure saves the settings with the one server entry.
func configure(ctx context.Context, in *instance, entry map[string]any) error {
	b, err := json.Marshal(map[string]any{"servers": []any{entry}})
	if err != nil {
		return err
	}
	in.log.printf("configure: %s", b)
	r := in.ctl(ctx, b, "--json", "mcp", "configure", "-")
	if r.code != 0 {
		return refused(in.log, "pikoctl mcp configure", r)
	}
	return nil
}

// discoverIssuer asks pikod what OAuth discovery finds for the server and
// returns the authorization server's issuer.
func discoverIssuer(ctx context.Context, in *instance) (string, error) {
	r := in.ctl(ctx, nil, "--json", "mcp", "auth", serverID, "--discover")
	in.log.printf("pikoctl mcp auth %s --discover: exit %d: %s", serverID, r.code, strings.TrimSpace(r.stdout))
	if r.code != 0 {
		return "", refused(in.log, "pikoctl mcp auth --discover", r)
	}
	var v any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &v); err != nil {
		return "", fmt.Errorf("decoding the discovery result: %w", err)
	}
	issuer := findString(v, "issuer")
	if issuer == "" {
		return "", errors.New("the discovery result names no issuer")
	}
	in.log.printf("discovered issuer %s", issuer)
	return issuer, nil
}

// findString returns the first string member named key, searching objects
// depth-first (top-level members first).
func findString(v any, key string) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if s, ok := obj[key].(string); ok && s != "" {
		return s
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s := findString(obj[k], key); s != "" {
			return s
		}
	}
	return ""
}

// refused logs and returns pikod's refusal as pikoctl reported it.
func refused(log *logger, what string, r result) error {
	why := ""
	if e := wireError(r.stdout); e != nil {
		why = describe(e)
	} else {
		for line := range strings.SplitSeq(r.stderr, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "pikoctl: "); ok {
				why = rest
				break
			}
		}
		if why == "" {
			why = strings.TrimSpace(r.stderr)
		}
	}
	log.printf("pikod refused: %s (exit %d): %s", what, r.code, redactLine(why))
	return fmt.Errorf("%w: %s: %s", errRefused, what, why)
}

func describe(e *contracts.Error) string {
	s := e.Message
	if r := e.Reason(); r != "" {
		s = r + ": " + s
	}
	if e.Data != nil && e.Data.Hint != "" {
		s += " (hint: " + e.Data.Hint + ")"
	}
	return s
}

// contextValues reads MCP_CONFORMANCE_CONTEXT's string members.
func contextValues(raw string) (map[string]string, error) {
	vals := map[string]string{}
	if raw == "" {
		return vals, nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT is not a JSON object: %w", err)
	}
	for k, v := range obj {
		if s, ok := v.(string); ok {
			vals[k] = s
		}
	}
	return vals, nil
}

func redactLine(line string) string {
	return urlRE.ReplaceAllStringFunc(line, redactURL)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// logger writes timestamped lines (milliseconds since the adapter
// started) to the log file and stderr.
type logger struct {
	start time.Time
	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%6dms %s\n", time.Since(l.start).Milliseconds(), fmt.Sprintf(format, args...))
}

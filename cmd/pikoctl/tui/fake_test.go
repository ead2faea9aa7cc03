package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// fakePikod is a daemon for the console's tests: the real rpc server on a
// socket in a private directory, answering the methods the console makes
// from state the test sets, and recording every request. Settings are
// checked with contracts.ParseMCPSettings and saved with pikod's revision
// check, so what the console sends is judged as pikod would judge it.
type fakePikod struct {
	t      *testing.T
	socket string

	// mu guards the fields that follow.
	mu       sync.Mutex
	calls    []fakeCall
	status   contracts.StatusResult
	settings []byte
	revision uint64
	catalogs map[string]contracts.CatalogResult
	actions  []contracts.ActionSummary
	reviews  map[string]contracts.ActionReview
	// paused are the servers pause paused; a pause ends when resumedFile
	// exists (the resume command the console hands the terminal to
	// writes it).
	paused      map[string]bool
	resumedFile string
}

// fakeCall is one request the console made.
type fakeCall struct {
	method string
	params json.RawMessage
}

func startFake(t *testing.T) *fakePikod {
	t.Helper()
	// A short path: a socket's is bounded (108 bytes on Linux).
	dir, err := os.MkdirTemp("", "tui")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakePikod{t: t, socket: filepath.Join(dir, "s"), catalogs: map[string]contracts.CatalogResult{},
		reviews: map[string]contracts.ActionReview{}, paused: map[string]bool{}, settings: []byte(`{"servers":[]}`)}
	srv := rpc.NewServer(rpc.Options{})
	handle := func(method string, h func(json.RawMessage) (any, error)) {
		srv.Register(method, func(_ context.Context, req *rpc.Request) (any, error) {
			f.mu.Lock()
			f.calls = append(f.calls, fakeCall{method: method, params: append(json.RawMessage(nil), req.Params...)})
			f.mu.Unlock()
			return h(req.Params)
		})
	}
	handle(contracts.MethodMCPWatch, func(json.RawMessage) (any, error) { return contracts.WatchResult{}, nil })
	handle(contracts.MethodMCPRequests, func(json.RawMessage) (any, error) { return contracts.RequestsResult{}, nil })
	handle(contracts.MethodMCPStatus, func(json.RawMessage) (any, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.status
		st.Revision = f.revision
		st.Servers = slices.Clone(st.Servers)
		if _, err := os.Stat(f.resumedFile); f.resumedFile != "" && err == nil {
			clear(f.paused)
		}
		for i := range st.Servers {
			if f.paused[st.Servers[i].ID] {
				st.Servers[i].ConnectionState, st.Servers[i].State = st.Servers[i].State, contracts.StatePaused
				st.Servers[i].Pause = &contracts.PauseInfo{Since: "2026-12-01T18:00:00Z"}
			}
		}
		return st, nil
	})
	handle(contracts.MethodSettings, func(json.RawMessage) (any, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return contracts.SettingsResult{Extension: contracts.ExtensionMCP, Revision: f.revision, Settings: f.settings}, nil
	})
	handle(contracts.MethodConfigure, f.configure)
	handle(contracts.MethodMCPCatalog, func(raw json.RawMessage) (any, error) {
		var p contracts.CatalogParams
		_ = json.Unmarshal(raw, &p)
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.catalogs[p.Server]
		if !ok {
			return nil, contracts.Errorf(contracts.ErrNotFound, "unknown_server", "no server %q", p.Server)
		}
		return c, nil
	})
	handle(contracts.MethodMCPActionsList, func(json.RawMessage) (any, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return contracts.ActionsListResult{Actions: slices.Clone(f.actions)}, nil
	})
	handle(contracts.MethodMCPActionsReview, func(raw json.RawMessage) (any, error) {
		var p contracts.ActionParams
		_ = json.Unmarshal(raw, &p)
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.reviews[p.ActionID], nil
	})
	handle(contracts.MethodMCPPause, func(raw json.RawMessage) (any, error) {
		var p contracts.PauseParams
		_ = json.Unmarshal(raw, &p)
		f.mu.Lock()
		defer f.mu.Unlock()
		changed := !f.paused[p.Server]
		f.paused[p.Server] = true
		return contracts.PauseResult{Server: p.Server, Paused: true, Changed: changed, Pause: &contracts.PauseInfo{Since: "2026-12-01T18:00:00Z"}}, nil
	})
	handle(contracts.MethodMCPLogout, func(raw json.RawMessage) (any, error) {
		var p contracts.ServerParams
		_ = json.Unmarshal(raw, &p)
		return contracts.LogoutResult{Server: p.Server, Removed: true, WasConnected: true}, nil
	})
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the fake pikod: %v", err)
		}
	})
	return f
}

// configure saves or checks settings as pikod does: strictly parsed, the
// revision checked, the servers added, changed and removed named; every
// connected server changed is reported as applied live.
func (f *fakePikod) configure(raw json.RawMessage) (any, error) {
	var p contracts.ConfigureParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	next, err := contracts.ParseMCPSettings(p.Settings)
	if err != nil {
		return nil, contracts.WithReason(fmt.Errorf("invalid settings: %w", err), "invalid_settings")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.ExpectRevision != 0 && p.ExpectRevision != f.revision {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, "revision_moved", "settings are at revision %d, not %d", f.revision, p.ExpectRevision)
	}
	prev, err := contracts.ParseMCPSettings(f.settings)
	if err != nil {
		return nil, err
	}
	res := contracts.ConfigureResult{Extension: contracts.ExtensionMCP, DryRun: p.DryRun, Revision: f.revision + 1,
		Added: []string{}, Changed: []string{}, Removed: []string{}, Disconnected: []string{}, Live: []string{}, Widened: []string{}}
	old := map[string]contracts.ServerSettings{}
	for _, s := range prev.Servers {
		old[s.ID] = s
	}
	for _, s := range next.Servers {
		o, ok := old[s.ID]
		switch {
		case !ok:
			res.Added = append(res.Added, s.ID)
		case o.Digest() != s.Digest():
			res.Changed = append(res.Changed, s.ID)
			if st, ok := findServer(f.status, s.ID); ok && connected(st) {
				res.Live = append(res.Live, s.ID)
			}
			for _, tool := range s.ReadOnlyTools {
				if !slices.Contains(o.ReadOnlyTools, tool) {
					res.Widened = append(res.Widened, fmt.Sprintf("%s: tool %q now runs without approval (readOnlyTools)", s.ID, tool))
				}
			}
		}
		delete(old, s.ID)
	}
	for id := range old {
		res.Removed = append(res.Removed, id)
	}
	if len(res.Added)+len(res.Changed)+len(res.Removed) == 0 {
		res.Unchanged, res.Revision = true, f.revision
		return res, nil
	}
	if !p.DryRun {
		f.settings, f.revision = next.Canonical(), f.revision+1
		// Added servers appear in status, idle, without credentials.
		for _, id := range res.Added {
			i := slices.IndexFunc(next.Servers, func(s contracts.ServerSettings) bool { return s.ID == id })
			f.status.Servers = append(f.status.Servers, contracts.ServerStatus{ID: id, Enabled: true, Transport: next.Servers[i].Transport,
				State: contracts.StateIdle, Credentials: "none"})
		}
		f.status.Servers = slices.DeleteFunc(f.status.Servers, func(s contracts.ServerStatus) bool { return slices.Contains(res.Removed, s.ID) })
	}
	return res, nil
}

// set changes the fake's state under its lock.
func (f *fakePikod) set(change func(f *fakePikod)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// called returns the params of every request of method so far.
func (f *fakePikod) called(method string) []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []json.RawMessage
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c.params)
		}
	}
	return out
}

// waitCalled waits until method was requested n times and returns the
// params of the last.
func (f *fakePikod) waitCalled(method string, n int) json.RawMessage {
	f.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if got := f.called(method); len(got) >= n {
			return got[n-1]
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the console did not request %s %d times (it did %d)", method, n, len(f.called(method)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startLive runs the console on a client of f in a teatest program on an
// 80x24 terminal: every command runs, requests reach the fake.
func startLive(t *testing.T, f *fakePikod, o Options) *liveScreen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := rpc.Dial(ctx, f.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o.Instance, o.NoColor = "default", true
	m := newModel(c, o)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	t.Cleanup(func() {
		if err := tm.Quit(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
			t.Error(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(waitLong))
	})
	return &liveScreen{t: t, tm: tm}
}

// liveScreen keeps everything the program wrote; waits look at what was
// written since the last key pressed through it, so an earlier frame
// cannot satisfy them and several waits may follow one key.
type liveScreen struct {
	t    *testing.T
	tm   *teatest.TestModel
	buf  bytes.Buffer
	from int
}

func (s *liveScreen) drain() {
	b, _ := io.ReadAll(s.tm.Output())
	s.buf.Write(b)
}

// press types keys after setting the mark.
func (s *liveScreen) press(ks ...string) {
	s.drain()
	s.from = s.buf.Len()
	pressKeys(s.tm, ks...)
}

// typeText types s (as runes) after setting the mark.
func (s *liveScreen) typeText(text string) {
	s.drain()
	s.from = s.buf.Len()
	s.tm.Type(text)
}

// waitFor waits until want was written since the mark.
func (s *liveScreen) waitFor(want string) {
	s.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s.drain()
		if bytes.Contains(s.buf.Bytes()[s.from:], []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%q was not drawn; since the last key:\n%s", want, s.buf.Bytes()[s.from:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

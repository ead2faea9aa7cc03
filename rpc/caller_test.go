package rpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

// callerServer answers "declare" (params: a contracts.Caller whose Client
// and Via are declared for the connection) and "caller" (the request's
// Caller).
func callerServer() *Server {
	s := NewServer(Options{})
	s.Register("declare", func(_ context.Context, req *Request) (any, error) {
		var p contracts.Caller
		if err := DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		req.Conn().Declare(p.Client, p.Via)
		return nil, nil
	})
	s.Register("caller", func(_ context.Context, req *Request) (any, error) { return req.Caller(), nil })
	return s
}

func TestCallerIdentity(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	path := startServer(t, callerServer())
	ctx := callCtx(t)
	caller := func(c *Client) contracts.Caller {
		t.Helper()
		var got contracts.Caller
		if err := c.Call(ctx, "caller", nil, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	a, b := dial(t, path), dial(t, path)
	if got := caller(a); got.PID != os.Getpid() || got.Executable != exe || got.Client != (contracts.ClientInfo{}) || got.Via != "" {
		t.Fatalf("caller before any declaration = %+v, want pid %d executable %s and nothing declared", got, os.Getpid(), exe)
	}

	decl := contracts.Caller{Client: contracts.ClientInfo{Name: "claude-code", Version: "2.1.0"}, Via: "pikoctl mcp serve"}
	if err := a.Call(ctx, "declare", decl, nil); err != nil {
		t.Fatal(err)
	}
	got := caller(a)
	if got.PID != os.Getpid() || got.Executable != exe || got.Client != decl.Client || got.Via != decl.Via {
		t.Fatalf("caller after declaring = %+v, want %+v with the kernel's pid and executable", got, decl)
	}
	if other := caller(b); other.Client != (contracts.ClientInfo{}) || other.Via != "" {
		t.Errorf("another connection's caller = %+v: a declaration leaked across connections", other)
	}

	// A later declaration replaces the first, bounded.
	hostile := "\x1b]0;owned\x07" + strings.Repeat("A\x1b[2J", 2000)
	if err := a.Call(ctx, "declare", contracts.Caller{Client: contracts.ClientInfo{Name: hostile, Version: strings.Repeat("9", 500)}}, nil); err != nil {
		t.Fatal(err)
	}
	got = caller(a)
	if got.Client.Name == "" || got.Via != "" {
		t.Fatalf("caller after redeclaring = %+v, want a client and no via", got)
	}
	if n := utf8.RuneCountInString(got.Client.Name); n != contracts.MaxClientNameChars || !strings.HasSuffix(got.Client.Name, "…") {
		t.Errorf("declared name kept as %d characters (%q), want cut to %d ending in …", n, got.Client.Name, contracts.MaxClientNameChars)
	}
	if n := utf8.RuneCountInString(got.Client.Version); n != contracts.MaxClientVersionChars {
		t.Errorf("declared version kept as %d characters, want %d", n, contracts.MaxClientVersionChars)
	}
	if d := got.Describe(); strings.ContainsAny(d, "\x1b\x07") || !strings.Contains(d, "(declared)") {
		t.Errorf("Describe() = %q: want it sanitised and marked as declared", d)
	}
}

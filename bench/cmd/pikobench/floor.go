package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// The floor relay is the least a daemon built on pikod's mandated
// libraries can do for a call: sourcegraph/jsonrpc2 on a Unix socket
// (newline-delimited, one goroutine per request, as pikod answers them),
// the arguments handed as they came to one shared mcp-go stdio client, its
// content returned. No schema, grant, receipt, retained result, limit or
// log: what pikod's overhead over the floor costs is its bookkeeping, and
// what the floor costs over direct no pikod can save.
//
// pikobench runs it as a process of its own (the hidden first argument
// floorArg) so that its CPU is measured as pikod's is, from /proc.

const floorArg = "floor-relay"

// runFloorRelay serves extensions.mcp.call on socket for the stdio server
// fixture until SIGTERM or the server's exit.
func runFloorRelay(socket, fixture string) error {
	dc, err := startDirect(fixture)
	if err != nil {
		return err
	}
	defer dc.close()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	defer ln.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-dc.done:
		}
		ln.Close()
	}()
	h := jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		if r.Method != contracts.MethodMCPCall || r.Params == nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "the floor relay answers only " + contracts.MethodMCPCall}
		}
		var p contracts.CallParams
		if err := json.Unmarshal(*r.Params, &p); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
		}
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = p.Tool, p.Arguments
		res, err := dc.c.CallTool(ctx, req)
		if err != nil {
			return nil, err
		}
		content, err := json.Marshal(res.Content)
		if err != nil {
			return nil, err
		}
		return contracts.CallResult{Status: contracts.CallCompleted, Server: p.Server, Tool: p.Tool, Content: content, IsError: res.IsError}, nil
	}))
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		jc := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(nc), h)
		go func() {
			// Ends with the connection, or closes it at SIGTERM.
			select {
			case <-ctx.Done():
				jc.Close()
			case <-jc.DisconnectNotify():
			}
		}()
	}
}

// floorRelay is a running floor relay process.
type floorRelay struct {
	cmd    *exec.Cmd
	socket string
	dir    string
}

// startFloorRelay starts this program as a floor relay in front of the
// fixture and waits until its socket answers.
func (r *runner) startFloorRelay() (*floorRelay, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(r.cfg.stateRoot, "pkfl")
	if err != nil {
		return nil, err
	}
	fr := &floorRelay{socket: filepath.Join(dir, "floor.sock"), dir: dir}
	fr.cmd = exec.Command(self, floorArg, fr.socket, r.bin.fixture)
	var stderr syncBuffer
	fr.cmd.Stderr = &stderr
	if err := fr.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := fr.dial()
		if err == nil {
			err = pikodCall(c, readCall)
			c.Close()
			if err == nil {
				return fr, nil
			}
		}
		if time.Now().After(deadline) {
			fr.stop()
			return nil, fmt.Errorf("the floor relay did not answer within 30s: %v; its stderr: %s", err, clip(stderr.String()))
		}
	}
}

func (fr *floorRelay) dial() (*rpc.Client, error) { return rpc.Dial(context.Background(), fr.socket) }

func (fr *floorRelay) pid() int { return fr.cmd.Process.Pid }

func (fr *floorRelay) stop() {
	stopProcess(fr.cmd)
	os.RemoveAll(fr.dir)
}

package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// Socket suites: what the daemon holds in memory for its clients, how many
// clients it serves, the control lane, and half-closed connections. The
// memory figures come from the kernel (/proc/PID/status VmHWM: the peak
// resident set since pikod started).

// maxPeakRSS is the most memory pikod may have used at any moment of a
// memory test. Its request budget is 64 MiB; the rest is the Go runtime, the
// race detector's shadow memory and garbage not yet collected.
const maxPeakRSS = 200 << 20

// bigFrameBytes is the size of the large requests: a little under the
// 8 MiB frame cap, newline included.
const bigFrameBytes = 8<<20 - 64

// plainBin is pikod built without the race detector, for the memory
// tests: the race runtime's shadow memory grows with every byte the
// program touches, so a race build's peak says more about the detector
// than about pikod. Built once, on first use.
var plainBin = sync.OnceValues(func() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(binDir, "pikod-norace")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/pikod")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building pikod without -race: %v\n%s", err, b)
	}
	return out, nil
})

// withPlainBinary runs pikod built without the race detector.
func withPlainBinary(t testing.TB) option {
	t.Helper()
	bin, err := plainBin()
	if err != nil {
		t.Fatal(err)
	}
	return func(d *daemon) { d.bin = bin }
}

// peakRSS returns pid's VmHWM in bytes.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading /proc/%d/status: %v", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parsing VmHWM %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// bigCall is an extensions.mcp.call request of exactly size bytes
// (newline included) whose arguments hold a long array of zeros: many
// small values, the shape that costs most to decode into generic values.
// It names a server that is not configured, so pikod reads and decodes it
// whole and answers with an error naming the server.
func bigCall(id, size int) []byte {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"extensions.mcp.call","params":{"server":"absent","tool":"t","arguments":{"pad":[0`, id)
	const tail = "]}}}\n"
	b := make([]byte, 0, size)
	b = append(b, head...)
	for len(b) < size-len(tail)-1 {
		b = append(b, ",0"...)
	}
	if len(b) < size-len(tail) {
		b = append(b, ' ')
	}
	return append(b, tail...)
}

// callAnswer reads one response line and checks it answers a bigCall:
// the unknown server's error.
func callAnswer(r *bufio.Reader) (id string, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return "", fmt.Errorf("reading a response: %w", err)
	}
	var resp rawResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return "", fmt.Errorf("decoding response %.200q: %w", line, err)
	}
	if resp.Error == nil || resp.Error.Data == nil || resp.Error.Data.Reason != "unknown_server" {
		return string(resp.ID), fmt.Errorf("request %s answered %.300s, want the unknown_server error", resp.ID, line)
	}
	return string(resp.ID), nil
}

// helloAnswer reads one response line and checks it is a hello result for
// id, answered by pid.
func helloAnswer(r *bufio.Reader, pid int) (id string, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return "", fmt.Errorf("reading a response: %w", err)
	}
	var resp rawResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return "", fmt.Errorf("decoding response %.200q: %w", line, err)
	}
	if resp.Error != nil {
		return string(resp.ID), fmt.Errorf("request %s answered with an error: %v", resp.ID, resp.Error)
	}
	var hello contracts.HelloResult
	if err := json.Unmarshal(resp.Result, &hello); err != nil || hello.PID != pid {
		return string(resp.ID), fmt.Errorf("request %s answered %.200s, want a hello from pid %d", resp.ID, resp.Result, pid)
	}
	return string(resp.ID), nil
}

// TestSocketMemoryBounds sends requests a little under the 8 MiB frame cap:
// 40 pipelined on one connection, one on each of 40 connections, and 40
// lines that never end. Every complete request is answered, and pikod's
// peak resident memory stays under maxPeakRSS throughout. pikod is the
// build without the race detector.
func TestSocketMemoryBounds(t *testing.T) {
	const n = 40
	deadline := 5 * time.Minute

	t.Run("pipelined on one connection", func(t *testing.T) {
		d := startDaemon(t, withPlainBinary(t))
		pid := d.current().pid()
		before := peakRSS(t, pid)
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(deadline))
		wrote := make(chan error, 1)
		go func() {
			for i := range n {
				if _, err := c.Write(bigCall(i+1, bigFrameBytes)); err != nil {
					wrote <- fmt.Errorf("writing request %d: %w", i+1, err)
					return
				}
			}
			wrote <- nil
		}()
		r := bufio.NewReader(c)
		seen := map[string]bool{}
		for range n {
			id, err := callAnswer(r)
			if err != nil {
				t.Fatal(err)
			}
			seen[id] = true
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		if len(seen) != n {
			t.Errorf("%d distinct requests answered, want %d", len(seen), n)
		}
		checkPeakRSS(t, pid, fmt.Sprintf("after %d pipelined requests of %d bytes (%d MiB before)", n, bigFrameBytes, before>>20))
	})

	t.Run("one per connection", func(t *testing.T) {
		d := startDaemon(t, withPlainBinary(t))
		pid := d.current().pid()
		before := peakRSS(t, pid)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("unix", d.socket)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(deadline))
				go c.Write(bigCall(i+1, bigFrameBytes))
				if _, err := callAnswer(bufio.NewReader(c)); err != nil {
					errs <- fmt.Errorf("connection %d: %w", i+1, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		checkPeakRSS(t, pid, fmt.Sprintf("after %d connections with one request of %d bytes each (%d MiB before)", n, bigFrameBytes, before>>20))
	})

	t.Run("unterminated lines", func(t *testing.T) {
		d := startDaemon(t, withPlainBinary(t))
		pid := d.current().pid()
		before := peakRSS(t, pid)
		line := bytes.Repeat([]byte("x"), 7<<20)
		line = append([]byte(`{"jsonrpc":"2.0","id":1,"method":"system.hello","params":{"clientVersion":"`), line...)
		var conns []net.Conn
		var wg sync.WaitGroup
		defer func() {
			for _, c := range conns {
				c.Close()
			}
			wg.Wait()
		}()
		for range n {
			c, err := net.Dial("unix", d.socket)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// pikod stops reading what it cannot hold: this write may
				// block until the test closes the connection.
				_, _ = c.Write(line)
			}()
		}
		// Give pikod every chance to read what it is sent: poll until the
		// kernel queues stop draining (or a generous while has passed).
		var last int64
		for i := 0; i < 50; i++ {
			time.Sleep(100 * time.Millisecond)
			rss := peakRSS(t, pid)
			if i >= 10 && rss == last {
				break
			}
			last = rss
		}
		// pikod still answers another client.
		if _, err := rawHello(d.socket, callTimeout); err != nil {
			t.Errorf("hello while %d connections hold unterminated lines: %v", n, err)
		}
		checkPeakRSS(t, pid, fmt.Sprintf("with %d unterminated lines of %d bytes (%d MiB before)", n, len(line), before>>20))
	})
}

// TestSocketConnectionLimit opens 300 connections: pikod serves 256 at
// once and refuses the others with an error frame that says why, stays
// responsive on the ones it serves, serves new clients once some close,
// and its memory stays bounded.
func TestSocketConnectionLimit(t *testing.T) {
	const total, limit = 300, 256
	d := startDaemon(t, withPlainBinary(t))
	pid := d.current().pid()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	readers := make([]*bufio.Reader, 0, total)
	for i := range total {
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatalf("dialing connection %d: %v", i+1, err)
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
		conns = append(conns, c)
		readers = append(readers, bufio.NewReader(c))
	}
	// Every connection asks for hello; the first 256 are answered, the
	// others were refused when accepted.
	for i, c := range conns {
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"method":"system.hello"}`+"\n", i+1)
	}
	answered, refused, wrong := 0, 0, 0
	for i, r := range readers {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("connection %d: no answer and no refusal: %v", i+1, err)
		}
		var resp rawResponse
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("connection %d: decoding %q: %v", i+1, line, err)
		}
		switch {
		case resp.Error == nil && i < limit:
			answered++
		case resp.Error != nil && i >= limit:
			refused++
			if resp.Error.Data == nil || resp.Error.Data.Reason != "too_many_connections" ||
				!strings.Contains(resp.Error.Message, "256") || resp.Error.Code != 1009 {
				t.Errorf("connection %d refused with %+v (data %+v), want code 1009, reason too_many_connections and the limit", i+1, resp.Error, resp.Error.Data)
			}
			// Then the connection ends: EOF, or a reset when the hello
			// arrived after pikod had discarded what was queued and
			// before it closed (the refusal was read either way).
			if _, err := r.ReadBytes('\n'); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("connection %d: after the refusal got %v, want the connection ended", i+1, err)
			}
		default:
			if wrong++; wrong <= 3 {
				t.Errorf("connection %d (of %d, limit %d) answered %s", i+1, total, limit, line)
			}
		}
	}
	if answered != limit || refused != total-limit {
		t.Errorf("%d answered and %d refused, want %d and %d", answered, refused, limit, total-limit)
	}
	// pikoctl names the limit when it is refused.
	_, stderr, code := runCtl(t, d, "", "rpc", "system.hello")
	if code == 0 || !strings.Contains(stderr, "too many connections") {
		t.Errorf("pikoctl while every connection is taken: exit %d, stderr %q; want a refusal that names the limit", code, stderr)
	}
	// The served connections still work.
	fmt.Fprintf(conns[0], `{"jsonrpc":"2.0","id":"again","method":"system.hello"}`+"\n")
	if _, err := helloAnswer(readers[0], pid); err != nil {
		t.Errorf("first connection after the limit was reached: %v", err)
	}
	// Once clients leave, new ones are served.
	for _, c := range conns[:10] {
		c.Close()
	}
	poll(t, "a new client to be served", func() bool {
		_, err := rawHello(d.socket, callTimeout)
		return err == nil
	}, nil)
	checkPeakRSS(t, pid, fmt.Sprintf("with %d connections", total))
}

// TestSocketControlLane fills pikod with 64 slow tool calls and checks that
// system.hello, status and disconnect are answered while every one of them
// is still out, and that the disconnect ends them: the ones the server had
// are uncertain, the ones still waiting in pikod were never sent.
func TestSocketControlLane(t *testing.T) {
	const calls = 64
	d := callsDaemon(t)
	c := d.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	type outcome struct {
		res contracts.CallResult
		err error
		at  time.Time
	}
	outcomes := make(chan outcome, calls)
	started := time.Now()
	for range calls {
		go func() {
			var res contracts.CallResult
			err := c.Call(ctx, contracts.MethodMCPCall, contracts.CallParams{
				Server: "fx", Tool: "sleep", Arguments: json.RawMessage(`{"ms":60000}`)}, &res)
			outcomes <- outcome{res, err, time.Now()}
		}()
	}
	// Wait until the fixture is busy with some of them: its sleeps report
	// progress, which pikod forwards.
	var progress sync.Map
	c.OnNotification(func(method string, params json.RawMessage) {
		var p contracts.ProgressParams
		if method == contracts.NotifyMCPProgress && json.Unmarshal(params, &p) == nil {
			progress.Store(string(p.RequestID), true)
		}
	})
	poll(t, "the fixture to be sleeping", func() bool {
		n := 0
		progress.Range(func(any, any) bool { n++; return true })
		return n > 0
	}, nil)
	finished := func() int { return len(outcomes) }

	t0 := time.Now()
	hello, err := rawHello(d.socket, 2*time.Minute)
	helloTook := time.Since(t0)
	if err != nil {
		t.Fatalf("system.hello with %d calls out: %v", calls, err)
	}
	if hello.PID != d.current().pid() {
		t.Errorf("hello answered by pid %d", hello.PID)
	}
	if n := finished(); n != 0 {
		t.Errorf("system.hello was answered after %d of the %d calls had finished, want before any", n, calls)
	}
	t0 = time.Now()
	st := serverStatus(t, d, "fx")
	statusTook := time.Since(t0)
	if st.State != contracts.StateConnected {
		t.Errorf("status of fx with calls out: %+v", st)
	}
	if n := finished(); n != 0 {
		t.Errorf("status was answered after %d of the %d calls had finished, want before any", n, calls)
	}

	disconnectAt := time.Now()
	_, stderr, code := runCtl(t, d, "", "mcp", "disconnect", "fx")
	disconnectTook := time.Since(disconnectAt)
	if code != 0 {
		t.Fatalf("pikoctl mcp disconnect fx: exit %d, stderr %q", code, stderr)
	}
	t.Logf("with %d sleeping calls out: system.hello answered in %v, status in %v, pikoctl mcp disconnect in %v",
		calls, helloTook.Round(time.Millisecond), statusTook.Round(time.Millisecond), disconnectTook.Round(time.Millisecond))

	// A disconnect ends every call: the ones the server had end uncertain
	// or with the server's own answer to the cancellation; the ones still
	// waiting in pikod were never sent. None ran its course.
	atServer, notSent := 0, 0
	for range calls {
		o := <-outcomes
		if o.at.Before(disconnectAt) {
			t.Errorf("a call ended (%v, %+v) before the disconnect was asked for: hello and status did not come first",
				o.err, o.res.Status)
		}
		var we *contracts.Error
		switch {
		case errors.As(o.err, &we) && we.Data != nil && we.Data.NotSent:
			// Refused before anything was sent: still queued in pikod.
			notSent++
		case o.err != nil:
			t.Errorf("call answered with an error that does not say it was not sent: %v", o.err)
		case o.res.Status == contracts.CallFailed && o.res.NotSent:
			notSent++
		case o.res.Status == contracts.CallUncertain || o.res.Status == contracts.CallFailed:
			atServer++
		default:
			t.Errorf("call ended %q (error %+v) after %v; want it ended by the disconnect",
				o.res.Status, o.res.Error, o.at.Sub(started).Round(time.Millisecond))
		}
	}
	t.Logf("after the disconnect: %d calls ended at the server (uncertain or cancelled there), %d never sent", atServer, notSent)
	if atServer == 0 || notSent == 0 {
		t.Errorf("%d calls were at the server and %d waiting in pikod; want some of each (pikod bounds the calls to one server)", atServer, notSent)
	}
}

// TestSocketHalfClose: a client that sends its requests and then shuts
// down its side of the connection (socat, `nc -N`, a shell pipe) gets
// every answer before pikod closes; only a full close cancels.
func TestSocketHalfClose(t *testing.T) {
	socat, err := exec.LookPath("socat")
	if err != nil {
		t.Fatalf("socat is not installed (.ci/run installs it; Debian: apt-get install socat): %v", err)
	}
	d := callsDaemon(t)
	pid := d.current().pid()

	t.Run("the README's socat example", func(t *testing.T) {
		// Exactly as the README prints it, with the test's socket.
		script := `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"system.hello"}' | ` + socat + ` - UNIX-CONNECT:"$SOCK"`
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(minimalEnv(t.TempDir()), "SOCK="+d.socket)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("socat: %v", err)
		}
		if _, err := helloAnswer(bufio.NewReader(bytes.NewReader(out)), pid); err != nil {
			t.Errorf("socat printed %q: %v", out, err)
		}
	})

	t.Run("every request read before the shutdown is answered", func(t *testing.T) {
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		reqs := []string{
			`{"jsonrpc":"2.0","id":1,"method":"extensions.mcp.call","params":{"server":"fx","tool":"sleep","arguments":{"ms":1500}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"system.hello"}`,
			`{"jsonrpc":"2.0","id":3,"method":"extensions.mcp.call","params":{"server":"fx","tool":"echo","arguments":{"text":"after the shutdown"}}}`,
		}
		if _, err := io.WriteString(c, strings.Join(reqs, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got := map[string]rawResponse{}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading answers: %v (have %d)", err, len(got))
			}
			var resp rawResponse
			if err := json.Unmarshal(line, &resp); err != nil {
				continue // a notification (progress)
			}
			if len(resp.ID) > 0 {
				got[string(resp.ID)] = resp
			}
		}
		for _, id := range []string{"1", "2", "3"} {
			resp, ok := got[id]
			if !ok || resp.Error != nil {
				t.Errorf("request %s: answered %v (error %v); want an answer before pikod closed", id, ok, resp.Error)
				continue
			}
			if id != "2" {
				var res contracts.CallResult
				if json.Unmarshal(resp.Result, &res) != nil || res.Status != contracts.CallCompleted {
					t.Errorf("call %s answered %s, want completed", id, resp.Result)
				}
			}
		}
	})

	t.Run("a full close still cancels", func(t *testing.T) {
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"extensions.mcp.call","params":{"server":"fx","tool":"sleep","arguments":{"ms":30000}}}`+"\n")
		// The fixture reports progress once it sleeps.
		r := bufio.NewReader(c)
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := r.ReadBytes('\n'); err != nil {
			t.Fatalf("no progress from the sleeping call: %v", err)
		}
		c.Close()
		// The fixture says on stderr when a sleep is cancelled.
		waitServer(t, d, "fx", "to report the sleep cancelled", func(st contracts.ServerStatus) bool {
			return strings.Contains(st.StderrTail, "sleep cancelled")
		})
	})
}

// TestSocketResponseShapedFrames: a client that sends a response-shaped
// frame (result or error, and an id) gets nothing back for it, and its
// members never reach a later request that reuses the id.
func TestSocketResponseShapedFrames(t *testing.T) {
	d := startDaemon(t)
	c, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(callTimeout))
	// extensions.settings decodes its params strictly: a leaked member
	// would be refused as unknown, and missing params refuse the call for
	// lack of an extension.
	io.WriteString(c, `{"jsonrpc":"2.0","id":7,"result":{},"params":{"extension":"mcp"}}`+"\n")
	io.WriteString(c, `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"},"params":{"extension":"mcp"}}`+"\n")
	io.WriteString(c, `{"jsonrpc":"2.0","id":7,"method":"extensions.settings"}`+"\n")
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp rawResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatal(err)
	}
	if string(resp.ID) != "7" || resp.Error == nil || !strings.Contains(resp.Error.Message, "unknown extension") {
		t.Errorf("extensions.settings without params after response-shaped frames answered %s; want the unknown-extension refusal (params never leak)", line)
	}
}

// checkPeakRSS logs pikod's peak resident memory (VmHWM) with what it
// was measured after, and fails the test when it passed maxPeakRSS.
func checkPeakRSS(t *testing.T, pid int, what string) {
	t.Helper()
	peak := peakRSS(t, pid)
	t.Logf("pikod peak RSS %d MiB %s", peak>>20, what)
	if peak > maxPeakRSS {
		t.Errorf("pikod peak RSS %d MiB, want under %d MiB", peak>>20, maxPeakRSS>>20)
	}
}

package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pikod/pikod/contracts"
)

// DefaultMaxFrameBytes is the largest frame (one line, without its newline)
// either side reads or writes unless Options say otherwise.
const DefaultMaxFrameBytes = 8 << 20

// ErrFrameTooLarge is returned (wrapped) when a line exceeds the frame cap.
// Reading such a line ends the connection: the rest of the line is never
// buffered, so there is no way to resynchronise on the next line cheaply.
var ErrFrameTooLarge = errors.New("frame too large")

// frameReader splits a byte stream into newline-terminated frames of at
// most max bytes, never holding more than max bytes (plus the bufio buffer)
// of one line in memory.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	// grow, when set, runs before the line being read grows to n bytes;
	// an error ends the read with it. The server charges its request
	// budget here, so it reads no more than it may hold.
	grow func(n int) error
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next frame without its line ending. The slice is valid
// until the following call. A final line without a newline is a frame too.
func (f *frameReader) Next() ([]byte, error) {
	// Give back the memory of an earlier huge frame instead of pinning it
	// for the connection's lifetime.
	if cap(f.buf) > maxKeptBuffer {
		f.buf = nil
	}
	f.buf = f.buf[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		n := len(f.buf) + len(content)
		if n > f.max {
			return nil, fmt.Errorf("reading frame: line exceeds the %d-byte limit: %w", f.max, ErrFrameTooLarge)
		}
		if f.grow != nil && len(content) > 0 {
			if gerr := f.grow(n); gerr != nil {
				return nil, gerr
			}
		}
		if n > cap(f.buf) {
			// Double (append grows large slices by a quarter, which
			// leaves four times the line in garbage behind a long one),
			// never past the cap.
			buf := make([]byte, len(f.buf), min(max(2*cap(f.buf), n, 512), f.max))
			copy(buf, f.buf)
			f.buf = buf
		}
		switch {
		case err == nil:
			f.buf = append(f.buf, content...)
			return bytes.TrimSuffix(f.buf, []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			f.buf = append(f.buf, content...)
		case errors.Is(err, io.EOF) && n > 0:
			f.buf = append(f.buf, content...)
			return f.buf, nil
		default:
			return nil, err
		}
	}
}

// detach gives the caller the buffer of the frame just returned: the
// next frame is read into a new one. Only a large buffer is worth handing
// on (a small one is reused and its contents must be copied).
func (f *frameReader) detach() bool {
	if cap(f.buf) <= maxKeptBuffer {
		return false
	}
	f.buf = nil
	return true
}

// maxKeptBuffer is the largest line buffer a connection keeps between
// frames.
const maxKeptBuffer = 1 << 20

// stream is our jsonrpc2.ObjectStream: NDJSON with a frame cap, a write
// deadline on every write, and (on the server side) JSON-RPC error replies
// for lines that are not valid requests, so one bad line does not cost the
// connection.
type stream struct {
	nc           net.Conn
	fr           *frameReader
	max          int
	writeTimeout time.Duration
	log          zerolog.Logger
	// replyInvalid makes ReadObject answer invalid lines with an error
	// response and go on reading (server); otherwise an invalid line ends
	// the connection (client: a daemon that sends garbage is broken).
	replyInvalid bool

	// readerDone is closed when ReadObject has returned its final error,
	// which is the last thing jsonrpc2's read goroutine does before it
	// exits; owners wait on it.
	readerDone chan struct{}
	readerOnce sync.Once

	// ctx ends when the connection is torn down or a write to it fails:
	// the reader stops waiting for budget or for answers then.
	ctx    context.Context
	cancel context.CancelFunc

	// wmu serialises writes: jsonrpc2 serialises its own, but invalid-line
	// replies are written from the read side.
	wmu sync.Mutex

	// filter, when set, rewrites each outgoing frame (see Options.Filter).
	filter func([]byte, Outgoing) []byte

	// rmu guards results and expected (client side): the result of each
	// response to a call in flight, kept as received so that jsonrpc2,
	// which decodes a message's result into a generic value before
	// decoding it again, sees a placeholder instead (see readObject).
	rmu      sync.Mutex
	results  map[string]json.RawMessage
	expected map[string]bool

	// The fields below are the server side's; the client leaves them
	// zero.

	// acct is the connection's share of the request budget: a line is
	// charged as it is read, and the request it becomes stays charged
	// until dispatch releases it after the answer.
	acct *account
	// lineCharged is what the line being read holds of acct (reader
	// goroutine only), and lineDeadline whether a read deadline guards
	// it.
	lineCharged  int64
	lineDeadline bool
	// onEOF runs when the peer has shut down its sending side: it returns
	// once the requests already read are answered (or the peer is gone
	// for good), so a half-close never cancels them.
	onEOF func()

	// pmu guards cur: the request or notification just read. jsonrpc2
	// decodes a request through a map and encodes params again, which
	// would collapse duplicate keys and replace invalid text before pikod
	// could refuse them, and would hold several copies of large params;
	// so the server hands jsonrpc2 only the envelope and keeps the params
	// here, exactly as received. jsonrpc2 hands each request to dispatch
	// (which takes cur) before it reads the next line, and only requests
	// and notifications are ever put here (a response-shaped line never
	// is), so the params of one message can never reach another.
	pmu sync.Mutex
	cur *frame

	// peerErr, on the client, is the error the daemon sent for the whole
	// connection (an error response with a null id) before closing it.
	peerErr atomic.Pointer[contracts.Error]
}

// connectionError returns the error of an error response without an id
// (or with a null one): what a server says about the whole connection
// before closing it. Anything else is nil.
func connectionError(obj map[string]rawRef) *contracts.Error {
	_, hasMethod := obj["method"]
	raw, hasError := obj["error"]
	if id, ok := obj["id"]; hasMethod || !hasError || (ok && string(id) != "null") {
		return nil
	}
	var we contracts.Error
	if json.Unmarshal(raw, &we) != nil || we.Message == "" {
		return nil
	}
	return &we
}

// frame is a request or notification as the server read it.
type frame struct {
	// id is the id as json.Marshal gives it; "" for a notification.
	id string
	// params is the params member exactly as received; nil when absent.
	params json.RawMessage
	// charge is what the message holds of the connection's budget; its
	// taker releases it.
	charge int64
	// received is when its last byte was read.
	received time.Time
}

// lineIdleTimeout bounds the silence inside a large line: a peer that
// starts a line longer than smallLine and sends nothing more for this
// long is holding a frame's worth of the budget for nothing, and is
// disconnected.
var lineIdleTimeout = 30 * time.Second

// idKey normalises a JSON-RPC id to the form json.Marshal gives it.
func idKey(id json.RawMessage) string {
	if n := len(id); n > 0 && n <= 19 && id[0] >= '1' && id[0] <= '9' || string(id) == "0" {
		// A plain integer (validID bounds it) is its own key.
		if _, err := strconv.ParseUint(string(id), 10, 64); err == nil {
			return string(id)
		}
	}
	var v jsonrpc2.ID
	if err := json.Unmarshal(id, &v); err != nil {
		return string(id)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(id)
	}
	return string(b)
}

// take returns (and forgets) the message just read; nil when there is
// none (the client side).
func (s *stream) take() *frame {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	f := s.cur
	s.cur = nil
	return f
}

func (s *stream) put(f *frame) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.cur != nil && s.acct != nil {
		// Never happens with jsonrpc2 (it dispatches each request before
		// reading on); if it did, the budget must not leak.
		s.acct.release(s.cur.charge)
	}
	s.cur = f
}

func newStream(nc net.Conn, max int, writeTimeout time.Duration, replyInvalid bool, log zerolog.Logger) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	return &stream{
		nc:           nc,
		fr:           newFrameReader(nc, max),
		max:          max,
		writeTimeout: writeTimeout,
		log:          log,
		replyInvalid: replyInvalid,
		readerDone:   make(chan struct{}),
		ctx:          ctx,
		cancel:       cancel,
	}
}

// charge makes the stream account what it reads against acct (server).
func (s *stream) charge(acct *account) {
	s.acct = acct
	s.fr.grow = s.growLine
}

// growLine charges the line being read for n bytes. Up to smallLine it
// is charged as it grows; past that it takes what the largest request
// costs at once (see the budget's doc), and a read deadline stops a peer
// from sitting on it.
func (s *stream) growLine(n int) error {
	if int64(n) > s.lineCharged {
		want := int64(n)
		if n > smallLine {
			want = requestCharge(s.max)
		}
		if err := s.acct.charge(s.ctx, want-s.lineCharged); err != nil {
			return fmt.Errorf("waiting for request budget: %w", err)
		}
		s.lineCharged = want
	}
	if n > smallLine {
		// Set after any wait for budget: the deadline bounds the peer's
		// silence, not ours.
		if err := s.nc.SetReadDeadline(time.Now().Add(lineIdleTimeout)); err != nil {
			return fmt.Errorf("setting read deadline: %w", err)
		}
		s.lineDeadline = true
	}
	return nil
}

// settleLine turns the charge of the line just read into keep: the
// charge of the message it is (0 for anything that is not dispatched).
func (s *stream) settleLine(keep int64) error {
	if s.acct == nil {
		return nil
	}
	if s.lineDeadline {
		s.lineDeadline = false
		if err := s.nc.SetReadDeadline(time.Time{}); err != nil {
			s.acct.release(s.lineCharged)
			s.lineCharged = 0
			return fmt.Errorf("clearing read deadline: %w", err)
		}
	}
	have := s.lineCharged
	s.lineCharged = 0
	switch {
	case keep < have:
		s.acct.release(have - keep)
	case keep > have:
		if err := s.acct.charge(s.ctx, keep-have); err != nil {
			s.acct.release(have)
			return fmt.Errorf("waiting for request budget: %w", err)
		}
	}
	return nil
}

// ReadObject implements jsonrpc2.ObjectStream.
func (s *stream) ReadObject(v any) error {
	err := s.readObject(v)
	if err != nil {
		if s.acct != nil {
			s.acct.release(s.lineCharged)
			s.lineCharged = 0
		}
		s.readerOnce.Do(func() { close(s.readerDone) })
	}
	return err
}

func (s *stream) readObject(v any) error {
	for {
		line, err := s.fr.Next()
		if err != nil {
			switch {
			case errors.Is(err, ErrFrameTooLarge):
				s.log.Warn().Int("max_frame_bytes", s.max).Msg("closing connection: frame too large")
				if s.replyInvalid {
					// Best effort: tell the peer why before hanging up.
					_ = s.writeError(nil, &jsonrpc2.Error{
						Code:    contracts.CodeInvalidRequest,
						Message: fmt.Sprintf("invalid request: line exceeds the %d-byte frame limit; closing the connection", s.max),
					})
				}
			case errors.Is(err, os.ErrDeadlineExceeded) && s.lineDeadline:
				s.log.Warn().Dur("idle", lineIdleTimeout).Msg("closing connection: a long line stalled")
				if s.replyInvalid {
					_ = s.writeError(nil, &jsonrpc2.Error{
						Code: contracts.CodeInvalidRequest,
						Message: fmt.Sprintf("invalid request: nothing more of a long line arrived for %s; closing the connection",
							lineIdleTimeout),
					})
				}
			case errors.Is(err, io.EOF) && s.onEOF != nil:
				// The peer will send nothing more: answer what it sent.
				s.onEOF()
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if err := s.settleLine(0); err != nil {
				return err
			}
			continue
		}
		if s.replyInvalid {
			ok, err := s.readRequest(line, v)
			if ok || err != nil {
				return err
			}
			continue
		}
		obj, id, rerr := checkObject(line)
		if rerr == nil {
			if env, ok := s.keepResult(line, obj, id); ok {
				line = env
			}
			err := json.Unmarshal(line, v)
			if err == nil {
				return nil
			}
			rerr = &jsonrpc2.Error{Code: contracts.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
		} else if we := connectionError(obj); we != nil {
			// The daemon refuses the connection (too many of them) or
			// closes it (a frame too large), and says why first.
			s.peerErr.Store(we)
			return fmt.Errorf("pikod closed the connection: %s", we.Message)
		}
		return fmt.Errorf("reading message: %s", rerr.Message)
	}
}

// expect registers a call in flight with id (as json.Marshal gives it):
// its result will be kept for takeResult. forget ends that, dropping a
// result nobody took.
func (s *stream) expect(id string) {
	s.rmu.Lock()
	if s.expected == nil {
		s.expected, s.results = map[string]bool{}, map[string]json.RawMessage{}
	}
	s.expected[id] = true
	s.rmu.Unlock()
}

func (s *stream) forget(id string) {
	s.rmu.Lock()
	delete(s.expected, id)
	delete(s.results, id)
	s.rmu.Unlock()
}

// takeResult returns the result kept for the response to id.
func (s *stream) takeResult(id string) (json.RawMessage, bool) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	r, ok := s.results[id]
	delete(s.results, id)
	return r, ok
}

// keepResult keeps the result of a response to an expected call and
// returns the line with the result replaced by 0, so that jsonrpc2's
// decoding (twice, once into a generic value) costs the same for a
// 4 MB catalog as for an empty result. ok is false for anything else.
func (s *stream) keepResult(line []byte, obj map[string]rawRef, id json.RawMessage) (_ []byte, ok bool) {
	rref, has := obj["result"]
	result := json.RawMessage(rref)
	if !has || id == nil || len(result) < 64 {
		return nil, false
	}
	key := idKey(id)
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if !s.expected[key] {
		return nil, false
	}
	env := make([]byte, 0, len(id)+48)
	env = append(env, `{"jsonrpc":"2.0","id":`...)
	env = append(env, id...)
	env = append(env, `,"result":0}`...)
	if !s.fr.detach() {
		// The line's buffer is reused for the next one.
		result = bytes.Clone(result)
	}
	s.results[key] = result
	return env, true
}

// readRequest is the server's reading of one line: a request or a
// notification is handed to jsonrpc2 as its bare envelope (method and
// id) and kept for dispatch (put); a response is dropped, as pikod never
// asks its clients anything; anything else is answered with an error.
// ok reports whether v was filled.
func (s *stream) readRequest(line []byte, v any) (ok bool, _ error) {
	obj, id, rerr := checkObject(line)
	if rerr == nil {
		if _, isRequest := obj["method"]; !isRequest {
			s.log.Debug().Msg("ignoring a response: pikod sends no requests to its clients")
			return false, s.settleLine(0)
		}
		// checked by checkObject: a string, sent on as it came
		rawMethod := obj["method"]
		env := make([]byte, 0, len(rawMethod)+len(id)+48)
		env = append(env, `{"jsonrpc":"2.0","method":`...)
		env = append(env, rawMethod...)
		if id != nil {
			env = append(env, `,"id":`...)
			env = append(env, id...)
		}
		env = append(env, '}')
		if err := json.Unmarshal(env, v); err != nil {
			rerr = &jsonrpc2.Error{Code: contracts.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
		} else {
			charge := requestCharge(len(line))
			if err := s.settleLine(charge); err != nil {
				return false, err
			}
			params := json.RawMessage(obj["params"])
			if params != nil && !s.fr.detach() {
				// The line's buffer is reused for the next one.
				params = bytes.Clone(params)
			}
			f := &frame{params: params, charge: charge, received: time.Now()}
			if id != nil {
				f.id = idKey(id)
			}
			s.put(f)
			return true, nil
		}
	}
	if err := s.settleLine(0); err != nil {
		return false, err
	}
	// The id comes back: the filter is told it is the peer's own.
	return false, s.writeError(id, rerr, Outgoing{Request: &Request{ID: id}})
}

// checkMessage validates one line as a JSON-RPC 2.0 request or response
// object. On failure it returns the id to answer with (nil: null) and the
// error to send.
func checkMessage(line []byte) (json.RawMessage, *jsonrpc2.Error) {
	_, id, err := checkObject(line)
	return id, err
}

// checkObject parses line once and checks it; it returns the members and
// the id (nil when absent or null). The members are slices of line, not
// copies: a caller that keeps one past the line's life copies it.
func checkObject(line []byte) (obj map[string]rawRef, _ json.RawMessage, _ *jsonrpc2.Error) {
	err := json.Unmarshal(line, &obj)
	if err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn) || !json.Valid(line):
			return obj, nil, &jsonrpc2.Error{Code: contracts.CodeParseError, Message: "parse error: " + err.Error()}
		case bytes.TrimSpace(line)[0] == '[':
			return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: "invalid request: batch arrays are not supported; send one JSON object per line"}
		default:
			return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: "invalid request: a message must be a JSON object"}
		}
	}
	if obj == nil {
		return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: "invalid request: a message must be a JSON object"}
	}
	rawID, hasID := obj["id"]
	if hasID && !validID(json.RawMessage(rawID)) {
		return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: id must be a string of at most %d bytes, a non-negative integer or absent", maxIDBytes)}
	}
	var id json.RawMessage
	if hasID && string(rawID) != "null" {
		id = json.RawMessage(rawID)
	}
	if v := obj["jsonrpc"]; string(v) != `"2.0"` && !decodesTo(v, "2.0") {
		return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: `invalid request: "jsonrpc" must be "2.0"`}
	}
	rawMethod, hasMethod := obj["method"]
	_, hasResult := obj["result"]
	_, hasError := obj["error"]
	switch {
	case hasMethod && (hasResult || hasError):
		return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: "invalid request: a message cannot have both method and result or error"}
	case hasMethod:
		method, ok := stringValue(rawMethod)
		if !ok || method == "" {
			return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: "invalid request: method must be a non-empty string"}
		}
		if len(method) > maxMethodBytes {
			// Its name would come back in "method not found".
			return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: fmt.Sprintf("invalid request: method name longer than %d bytes", maxMethodBytes)}
		}
	case hasResult || hasError:
		if id == nil {
			return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: "invalid request: a response needs an id"}
		}
	default:
		return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: "invalid request: missing method"}
	}
	return obj, id, nil
}

// stringValue decodes a JSON string member; a string without escapes (as
// every method name is) is taken as it is, without a decoder.
func stringValue(raw []byte) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		body := raw[1 : n-1]
		for _, c := range body {
			if c < 0x20 || c >= 0x80 {
				// Control characters are invalid and non-ASCII bytes may
				// be invalid UTF-8: the decoder says what they are.
				goto decode
			}
		}
		return string(body), true
	}
decode:
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	return v, true
}

// decodesTo reports whether raw is a JSON string that decodes to want.
func decodesTo(raw []byte, want string) bool {
	v, ok := stringValue(raw)
	return ok && v == want
}

// rawRef is json.RawMessage without the copy: it keeps the slice of the
// input the decoder hands it.
type rawRef []byte

func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// maxMethodBytes bounds a method name: no method is longer than a few
// dozen bytes.
const maxMethodBytes = 256

// maxIDBytes bounds a string id as written (quotes and escapes included).
const maxIDBytes = 1024

// validID reports whether raw is an id jsonrpc2 can carry faithfully: null,
// a string (of at most maxIDBytes), or an integer in 0..MaxInt64.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case 'n':
		return string(raw) == "null"
	case '"':
		// Every answer carries the id back.
		var s string
		return len(raw) <= maxIDBytes && json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return err == nil && n <= math.MaxInt64
}

// WriteObject implements jsonrpc2.ObjectStream.
func (s *stream) WriteObject(obj any) error {
	return s.writeObjectFor(obj, Outgoing{})
}

// writeObjectFor is WriteObject for a frame the filter knows more of.
func (s *stream) writeObjectFor(obj any, out Outgoing) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	if len(data) > s.max {
		return fmt.Errorf("writing message: %d bytes exceed the %d-byte frame limit: %w (%w)",
			len(data), s.max, ErrFrameTooLarge, contracts.ErrResourceExhausted)
	}
	return s.writeFrame(data, out)
}

// writeResult writes a success response around result (compact JSON),
// with the member order jsonrpc2 gives its responses.
func (s *stream) writeResult(id jsonrpc2.ID, result json.RawMessage, out Outgoing) error {
	idJSON, err := json.Marshal(id)
	if err != nil {
		return fmt.Errorf("encoding response id: %w", err)
	}
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	// One allocation: the envelope, the result and the newline writeFrame adds.
	data := make([]byte, 0, len(idJSON)+len(result)+len(`{"id":,"result":,"jsonrpc":"2.0"}`)+1)
	data = append(data, `{"id":`...)
	data = append(data, idJSON...)
	data = append(data, `,"result":`...)
	data = append(data, result...)
	data = append(data, `,"jsonrpc":"2.0"}`...)
	return s.writeFrame(data, out)
}

// writeError writes an error response; id nil means null.
func (s *stream) writeError(id json.RawMessage, e *jsonrpc2.Error, out ...Outgoing) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		return fmt.Errorf("encoding error response: %w", err)
	}
	var o Outgoing
	if len(out) > 0 {
		o = out[0]
	}
	return s.writeFrame(data, o)
}

// writeFrame writes one line under the write deadline. A failed write
// closes the connection (on the client, unless the daemon already closed
// its end): a peer that does not read must not hold a goroutine (or the
// slot behind it) for longer than writeTimeout.
func (s *stream) writeFrame(data []byte, out Outgoing) error {
	if s.filter != nil {
		data = s.filter(data, out)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.writeTimeout > 0 {
		if err := s.nc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil {
			s.cancel()
			s.nc.Close()
			return fmt.Errorf("setting write deadline: %w", err)
		}
	}
	if _, err := s.nc.Write(append(data, '\n')); err != nil {
		// The peer is gone or not reading: nothing more will reach it.
		// A client whose daemon closed the connection leaves it open, so
		// its reader still gets the last thing the daemon said (why it
		// refused the connection) before the end of the stream.
		if s.replyInvalid || !errors.Is(err, syscall.EPIPE) {
			s.cancel()
			s.nc.Close()
		}
		return fmt.Errorf("writing frame: %w", err)
	}
	return nil
}

// Close implements jsonrpc2.ObjectStream.
func (s *stream) Close() error {
	s.cancel()
	return s.nc.Close()
}

// notify writes one notification as jsonrpc2 would, through the filter
// with out.
func (s *stream) notify(method string, params any, out Outgoing) error {
	n := &jsonrpc2.Request{Method: method, Notif: true}
	if err := n.SetParams(params); err != nil {
		return fmt.Errorf("encoding params: %w", err)
	}
	return s.writeObjectFor(n, out)
}

package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
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
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next frame without its line ending. The slice is valid
// until the following call. A final line without a newline is a frame too.
func (f *frameReader) Next() ([]byte, error) {
	// Give back the memory of an earlier huge frame instead of pinning it
	// for the connection's lifetime.
	if cap(f.buf) > 1<<20 {
		f.buf = nil
	}
	f.buf = f.buf[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		if len(f.buf)+len(content) > f.max {
			return nil, fmt.Errorf("reading frame: line exceeds the %d-byte limit: %w", f.max, ErrFrameTooLarge)
		}
		switch {
		case err == nil:
			f.buf = append(f.buf, content...)
			return bytes.TrimSuffix(f.buf, []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			f.buf = append(f.buf, content...)
		case errors.Is(err, io.EOF) && len(f.buf)+len(content) > 0:
			f.buf = append(f.buf, content...)
			return f.buf, nil
		default:
			return nil, err
		}
	}
}

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

	// wmu serialises writes: jsonrpc2 serialises its own, but invalid-line
	// replies are written from the read side.
	wmu sync.Mutex

	// filter, when set, rewrites each outgoing frame (see Options.Filter).
	filter func([]byte) []byte

	// pmu guards the fields that follow: the params of the request just
	// read, exactly as received. jsonrpc2 decodes a request through a map
	// and encodes params again, which would collapse duplicate keys and
	// replace invalid text before pikod could refuse them. jsonrpc2 hands
	// each request to dispatch before it reads the next line, so one slot
	// is enough (and memory stays bounded whatever a peer sends).
	pmu        sync.Mutex
	lastID     string
	lastParams json.RawMessage
}

// idKey normalises a JSON-RPC id to the form json.Marshal gives it.
func idKey(id json.RawMessage) string {
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

func (s *stream) keepParams(id, params json.RawMessage) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.lastID, s.lastParams = idKey(id), bytes.Clone(params)
}

// takeParams returns (and forgets) the original params of request id, if
// it is the request just read.
func (s *stream) takeParams(id jsonrpc2.ID) (json.RawMessage, bool) {
	b, err := json.Marshal(id)
	if err != nil {
		return nil, false
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.lastParams == nil || s.lastID != string(b) {
		return nil, false
	}
	p := s.lastParams
	s.lastID, s.lastParams = "", nil
	return p, true
}

func newStream(nc net.Conn, max int, writeTimeout time.Duration, replyInvalid bool, log zerolog.Logger) *stream {
	return &stream{
		nc:           nc,
		fr:           newFrameReader(nc, max),
		max:          max,
		writeTimeout: writeTimeout,
		log:          log,
		replyInvalid: replyInvalid,
		readerDone:   make(chan struct{}),
	}
}

// ReadObject implements jsonrpc2.ObjectStream.
func (s *stream) ReadObject(v any) error {
	err := s.readObject(v)
	if err != nil {
		s.readerOnce.Do(func() { close(s.readerDone) })
	}
	return err
}

func (s *stream) readObject(v any) error {
	for {
		line, err := s.fr.Next()
		if err != nil {
			if errors.Is(err, ErrFrameTooLarge) {
				s.log.Warn().Int("max_frame_bytes", s.max).Msg("closing connection: frame too large")
				if s.replyInvalid {
					// Best effort: tell the peer why before hanging up.
					_ = s.writeError(nil, &jsonrpc2.Error{
						Code:    contracts.CodeInvalidRequest,
						Message: fmt.Sprintf("invalid request: line exceeds the %d-byte frame limit; closing the connection", s.max),
					})
				}
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, params, rerr := parseMessage(line)
		if rerr == nil {
			if err := json.Unmarshal(line, v); err != nil {
				rerr = &jsonrpc2.Error{Code: contracts.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
			} else {
				if id != nil && params != nil {
					// Responses carry an id too; only requests are dispatched.
					s.keepParams(id, params)
				}
				return nil
			}
		}
		if !s.replyInvalid {
			return fmt.Errorf("reading message: %s", rerr.Message)
		}
		if err := s.writeError(id, rerr); err != nil {
			return err
		}
	}
}

// checkMessage validates one line as a JSON-RPC 2.0 request or response
// object. On failure it returns the id to answer with (nil: null) and the
// error to send.
func checkMessage(line []byte) (json.RawMessage, *jsonrpc2.Error) {
	id, _, err := parseMessage(line)
	return id, err
}

// parseMessage is checkMessage that also returns the params member exactly
// as the peer wrote it.
func parseMessage(line []byte) (json.RawMessage, json.RawMessage, *jsonrpc2.Error) {
	obj, id, err := checkObject(line)
	if err != nil {
		return id, nil, err
	}
	return id, obj["params"], nil
}

// checkObject parses line once and checks it; it returns the members and
// the id (nil when absent or null).
func checkObject(line []byte) (obj map[string]json.RawMessage, _ json.RawMessage, _ *jsonrpc2.Error) {
	if err := json.Unmarshal(line, &obj); err != nil {
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
	if hasID && !validID(rawID) {
		return obj, nil, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
			Message: "invalid request: id must be a string, a non-negative integer or absent"}
	}
	var id json.RawMessage
	if hasID && string(rawID) != "null" {
		id = rawID
	}
	var version string
	if err := json.Unmarshal(obj["jsonrpc"], &version); err != nil || version != "2.0" {
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
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil || method == "" {
			return obj, id, &jsonrpc2.Error{Code: contracts.CodeInvalidRequest,
				Message: "invalid request: method must be a non-empty string"}
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

// validID reports whether raw is an id jsonrpc2 can carry faithfully: null,
// a string, or an integer in 0..MaxInt64.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case 'n':
		return string(raw) == "null"
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return err == nil && n <= math.MaxInt64
}

// WriteObject implements jsonrpc2.ObjectStream.
func (s *stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	if len(data) > s.max {
		return fmt.Errorf("writing message: %d bytes exceed the %d-byte frame limit: %w (%w)",
			len(data), s.max, ErrFrameTooLarge, contracts.ErrResourceExhausted)
	}
	return s.writeFrame(data)
}

// writeError writes an error response; id nil means null.
func (s *stream) writeError(id json.RawMessage, e *jsonrpc2.Error) error {
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
	return s.writeFrame(data)
}

// writeFrame writes one line under the write deadline. A failed write
// closes the connection: a peer that does not read must not hold a
// goroutine (or the semaphore behind it) for longer than writeTimeout.
func (s *stream) writeFrame(data []byte) error {
	if s.filter != nil {
		data = s.filter(data)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.writeTimeout > 0 {
		if err := s.nc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil {
			s.nc.Close()
			return fmt.Errorf("setting write deadline: %w", err)
		}
	}
	if _, err := s.nc.Write(append(data, '\n')); err != nil {
		s.nc.Close()
		return fmt.Errorf("writing frame: %w", err)
	}
	return nil
}

// Close implements jsonrpc2.ObjectStream.
func (s *stream) Close() error {
	return s.nc.Close()
}

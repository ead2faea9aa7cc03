package approvals

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// Retained sources: limits of the store and of one read.
const (
	// DefaultSourceCapBytes is the default cap on the bytes of all
	// retained sources together (1 GiB). Beyond it the oldest are evicted.
	DefaultSourceCapBytes = 1 << 30
	// DefaultSourceReadChars is the window source.read returns when no
	// length is given.
	DefaultSourceReadChars = 65_536
	// MaxSourceReadChars is the largest window one source.read returns; a
	// longer length is shortened to it (eof tells the caller to go on).
	MaxSourceReadChars = 1 << 20
	// sourceIndexStride is the distance, in characters, between entries of
	// a source's sparse character index.
	sourceIndexStride = 1 << 16
	// InlineSourceBytes is the largest source kept inside the database
	// instead of a file of its own: most results are small, and a file per
	// call costs more than the call.
	InlineSourceBytes = 64 << 10
)

// SourceMeta describes one retained source. An evicted source keeps its
// metadata as a tombstone (Evicted, EvictedAt) so a late read can say what
// happened to it.
type SourceMeta struct {
	ID        string    `json:"id"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	Bytes     int64     `json:"bytes"`
	Chars     int64     `json:"chars"`
	CreatedAt time.Time `json:"createdAt"`
	Evicted   bool      `json:"evicted,omitempty"`
	EvictedAt time.Time `json:"evictedAt,omitzero"`
}

// sourceRecord is the stored form of a source: its metadata, its place in
// the eviction order and, while it is live, the byte offset of every
// sourceIndexStride-th character, so a read seeks instead of scanning.
type sourceRecord struct {
	SourceMeta
	Seq   uint64  `json:"seq"`
	Index []int64 `json:"index,omitempty"`
	// Inline sources live in sources/data/<id>, not in a file.
	Inline bool `json:"inline,omitempty"`
	// data is an inline source's text until it is committed.
	data []byte
}

var sourceIDPattern = regexp.MustCompile(`^src_[0-9a-f]{32}$`)

// SourceStore keeps the original results of executed calls: each in its own
// file under dir (named by its id), its metadata in sources/ of the
// database. The files together stay under a cap by evicting the oldest.
// It is safe for concurrent use.
type SourceStore struct {
	db  *DB
	dir string
	// cap is the bound on the bytes of live sources (SetCap changes it).
	cap atomic.Int64
	now func() time.Time

	// inlineMax is the largest source kept inline (InlineSourceBytes;
	// tests lower it to exercise files).
	inlineMax int

	// beforeRename, when set by tests, runs after a new source's temporary
	// file is written and synced; an error aborts the Put there.
	beforeRename func(tmp string) error

	// mu guards total. The metadata updates are serialised by the
	// database's group committer, so the total is exact.
	mu sync.Mutex
	// total is the bytes of all live sources.
	total int64
	// txOf and txTotal are the running total within the group commit
	// transaction txOf (see commitTx); only the committer touches them.
	txOf    *bolt.Tx
	txTotal int64

	// pmu guards the fields that follow: sources put with PutDeferred whose
	// metadata the writer goroutine has not committed yet.
	pmu     sync.Mutex
	pending map[string]sourceRecord
	queue   []sourceRecord
	closed  bool

	kick chan struct{} // wakes the writer
	// carrier, when set, is the ledger's receipt writer, which commits
	// the deferred sources with the receipts (Ledger.CarryDeferredSources).
	carrier atomic.Pointer[asyncWriter]
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the writer has flushed and ended
}

// OpenSourceStore opens the retained sources kept in dir (created 0700)
// and db. A capBytes of 0 or less means DefaultSourceCapBytes; now defaults
// to time.Now. It finishes what an interrupted Put left: temporary files and
// files without metadata are removed, and so are files of evicted sources.
func OpenSourceStore(db *DB, dir string, capBytes int64, now func() time.Time) (*SourceStore, error) {
	if capBytes <= 0 {
		capBytes = DefaultSourceCapBytes
	}
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the sources directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting the sources directory: %w", err)
	}
	s := &SourceStore{db: db, dir: dir, now: now, inlineMax: InlineSourceBytes,
		pending: map[string]sourceRecord{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.cap.Store(capBytes)
	live := map[string]bool{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources)
		if b == nil {
			return fmt.Errorf("database has no sources bucket: %w", contracts.ErrFailedPrecondition)
		}
		return b.Bucket(bucketSourceMeta).ForEach(func(k, v []byte) error {
			var rec sourceRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("source %s has unreadable metadata: %w", k, err)
			}
			if !rec.Evicted {
				live[rec.ID] = true
				s.total += rec.Bytes
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading retained sources: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the sources directory: %w", err)
	}
	for _, e := range entries {
		if !live[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("removing a leftover source file: %w", err)
			}
		}
	}
	go s.writer()
	return s, nil
}

// Cap returns the cap on the bytes of all live sources.
func (s *SourceStore) Cap() int64 { return s.cap.Load() }

// UsedBytes returns the bytes of all live sources.
func (s *SourceStore) UsedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Put retains text, the exact (already redacted) JSON of one call's
// result, and returns its metadata. The file is written to a temporary
// name, synced and renamed, so a source either exists whole or not at all.
// Then the oldest sources are evicted until the total is under the cap;
// the new source is never evicted, even when it alone is over the cap.
func (s *SourceStore) Put(server, tool string, text []byte) (SourceMeta, error) {
	rec, err := s.newRecord(server, tool, text)
	if err != nil {
		return SourceMeta{}, err
	}
	path := filepath.Join(s.dir, rec.ID)
	if !rec.Inline {
		if err := s.writeFile(path, text, true); err != nil {
			return SourceMeta{}, fmt.Errorf("retaining a result of %s/%s: %w", server, tool, err)
		}
	}
	if err := s.commit([]*sourceRecord{&rec}); err != nil {
		_ = os.Remove(path)
		return SourceMeta{}, fmt.Errorf("recording a retained result of %s/%s: %w", server, tool, err)
	}
	return rec.SourceMeta, nil
}

// PutDeferred retains text like Put, but without waiting for the disk: the
// file is written without fsync and its metadata is committed by a
// background writer that groups many sources in one transaction, within
// milliseconds. The source is readable at once. A crash in that window can
// lose it; use it for results of read-only calls, whose loss costs nothing
// but the record, never for the results of calls with effects.
func (s *SourceStore) PutDeferred(server, tool string, text []byte) (SourceMeta, error) {
	rec, err := s.newRecord(server, tool, text)
	if err != nil {
		return SourceMeta{}, err
	}
	s.pmu.Lock()
	closed := s.closed
	s.pmu.Unlock()
	if closed {
		return s.Put(server, tool, text)
	}
	path := filepath.Join(s.dir, rec.ID)
	if !rec.Inline {
		if err := s.writeFile(path, text, false); err != nil {
			return SourceMeta{}, fmt.Errorf("retaining a result of %s/%s: %w", server, tool, err)
		}
	}
	s.pmu.Lock()
	if s.closed {
		s.pmu.Unlock()
		if err := s.commit([]*sourceRecord{&rec}); err != nil {
			_ = os.Remove(path)
			return SourceMeta{}, fmt.Errorf("recording a retained result of %s/%s: %w", server, tool, err)
		}
		return rec.SourceMeta, nil
	}
	s.pending[rec.ID] = rec
	s.queue = append(s.queue, rec)
	s.pmu.Unlock()
	s.wakeWriter()
	return rec.SourceMeta, nil
}

// writer commits deferred sources in batches until Close.
func (s *SourceStore) writer() {
	defer close(s.done)
	for {
		select {
		case <-s.kick:
			if !linger(s.stop) {
				s.flush()
				return
			}
		case <-s.stop:
			s.flush()
			return
		}
		s.flush()
	}
}

// flush commits every queued deferred source. On failure the files are
// removed and the sources forgotten: they were never acknowledged as
// durable.
func (s *SourceStore) flush() {
	recs, batch := s.takeDeferred()
	if len(batch) == 0 {
		return
	}
	s.deferredDone(batch, s.commit(recs))
}

// takeDeferred takes the queued deferred sources, for one commit: recs
// point into batch, which deferredDone gets back with the commit's error.
func (s *SourceStore) takeDeferred() (recs []*sourceRecord, batch []sourceRecord) {
	s.pmu.Lock()
	batch = s.queue
	s.queue = nil
	s.pmu.Unlock()
	recs = make([]*sourceRecord, len(batch))
	for i := range batch {
		recs[i] = &batch[i]
	}
	return recs, batch
}

// deferredDone ends the wait of batch (taken by takeDeferred): committed,
// or, when err is not nil, forgotten with their files.
func (s *SourceStore) deferredDone(batch []sourceRecord, err error) {
	s.pmu.Lock()
	for _, r := range batch {
		delete(s.pending, r.ID)
	}
	s.pmu.Unlock()
	if err != nil {
		for _, r := range batch {
			if !r.Inline {
				_ = os.Remove(filepath.Join(s.dir, r.ID))
			}
		}
	}
}

// wakeWriter has the deferred sources committed soon: by the ledger's
// receipt writer when they ride with it (Ledger.CarryDeferredSources), so
// a read's result and its receipt share one commit, else by the store's
// own writer.
func (s *SourceStore) wakeWriter() {
	if w := s.carrier.Load(); w != nil && w.kickOpen() {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Close commits the deferred sources and stops the writer. Later
// PutDeferred calls commit synchronously.
func (s *SourceStore) Close() error {
	s.pmu.Lock()
	if s.closed {
		s.pmu.Unlock()
		return nil
	}
	s.closed = true
	s.pmu.Unlock()
	close(s.stop)
	<-s.done
	return nil
}

func (s *SourceStore) newRecord(server, tool string, text []byte) (sourceRecord, error) {
	id, err := newSourceID()
	if err != nil {
		return sourceRecord{}, fmt.Errorf("retaining a result: %w", err)
	}
	rec := sourceRecord{SourceMeta: SourceMeta{
		ID: id, Server: server, Tool: tool, Bytes: int64(len(text)),
		CreatedAt: s.now().UTC(),
	}}
	rec.Chars, rec.Index = indexRunes(text)
	if len(text) <= s.inlineMax {
		rec.Inline, rec.data = true, bytes.Clone(text)
	}
	return rec, nil
}

// commit records recs (in order) in one durable transaction, shared with
// concurrent writes (groupCommitter), then evicts the oldest sources until
// the total is under the cap; the sources being committed are never
// evicted by their own commit.
func (s *SourceStore) commit(recs []*sourceRecord) error {
	var after func()
	return s.db.group.update(func(tx *bolt.Tx) error {
		var err error
		after, err = s.commitTx(tx, recs)
		return err
	}, func() { after() })
}

// commitTx is commit inside tx: it returns what to do once tx is on disk.
// It runs inside a group commit, and one group commits at a time (see
// groupCommitter), so the running total of a group's earlier writes (txTotal, valid
// while txOf is the transaction) needs no lock.
func (s *SourceStore) commitTx(tx *bolt.Tx, recs []*sourceRecord) (after func(), _ error) {
	keep := map[string]bool{}
	var added int64
	for _, r := range recs {
		keep[r.ID] = true
		added += r.Bytes
	}
	var evicted []string
	total := s.baseTotal(tx) + added
	b := tx.Bucket(bucketSources)
	meta, order, data := b.Bucket(bucketSourceMeta), b.Bucket(bucketSourceOrder), b.Bucket(bucketSourceData)
	for _, rec := range recs {
		if rec.Inline {
			if err := data.Put([]byte(rec.ID), rec.data); err != nil {
				return nil, err
			}
		}
		seq, err := order.NextSequence()
		if err != nil {
			return nil, err
		}
		rec.Seq = seq
		if err := putSource(meta, *rec); err != nil {
			return nil, err
		}
		if err := order.Put(seqKey(seq), []byte(rec.ID)); err != nil {
			return nil, err
		}
	}
	// Oldest first; collect before deleting, as bbolt cursors may
	// skip entries after a delete.
	var drop [][]byte
	c := order.Cursor()
	for k, v := c.First(); k != nil && total > s.Cap() && !keep[string(v)]; k, v = c.Next() {
		old, err := getSource(meta, v)
		if err != nil {
			return nil, err
		}
		if err := s.evictTx(meta, data, old); err != nil {
			return nil, err
		}
		total -= old.Bytes
		evicted = append(evicted, old.ID)
		drop = append(drop, append([]byte(nil), k...))
	}
	for _, k := range drop {
		if err := order.Delete(k); err != nil {
			return nil, err
		}
	}
	return s.settleTx(tx, total, evicted), nil
}

// StagedSource is a call's result made ready to retain by Stage: a large
// one is already in its file, on disk; its metadata (and a small one's
// text) is committed with the call's receipt by Ledger.Settle.
type StagedSource struct {
	store *SourceStore
	rec   sourceRecord
}

// Meta is the metadata the source will have once committed.
func (st *StagedSource) Meta() SourceMeta { return st.rec.SourceMeta }

// Stage prepares text, the exact (already redacted) JSON of one call's
// result, to be retained in the transaction that records the call's end
// (Ledger.Settle), so a call with effects costs one commit for its end, not
// two. A result too large to keep inline is written to its file and synced
// here, as Put does. Discard a staged source whose commit failed.
func (s *SourceStore) Stage(server, tool string, text []byte) (*StagedSource, error) {
	rec, err := s.newRecord(server, tool, text)
	if err != nil {
		return nil, err
	}
	if !rec.Inline {
		if err := s.writeFile(filepath.Join(s.dir, rec.ID), text, true); err != nil {
			return nil, fmt.Errorf("retaining a result of %s/%s: %w", server, tool, err)
		}
	}
	return &StagedSource{store: s, rec: rec}, nil
}

// Discard removes the file of a staged source that was not committed.
func (st *StagedSource) Discard() {
	if !st.rec.Inline {
		_ = os.Remove(filepath.Join(st.store.dir, st.rec.ID))
	}
}

// writeFile writes text to path through a temporary file in the same
// directory, so the name never shows a partial file. With durable, the file
// is synced before the rename and the directory after it.
func (s *SourceStore) writeFile(path string, text []byte, durable bool) (err error) {
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("creating a source file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes files 0600 already; say so for umask-proof clarity.
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("restricting a source file: %w", err)
	}
	if _, err := f.Write(text); err != nil {
		return fmt.Errorf("writing a source file: %w", err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing a source file: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing a source file: %w", err)
	}
	if s.beforeRename != nil {
		if err := s.beforeRename(tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("naming a source file: %w", err)
	}
	if !durable {
		return nil
	}
	if d, err := os.Open(s.dir); err == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			os.Remove(path)
			return fmt.Errorf("syncing the sources directory: %w", serr)
		}
	}
	return nil
}

// Meta returns a source's metadata, tombstones included.
func (s *SourceStore) Meta(id string) (SourceMeta, error) {
	rec, err := s.record(id)
	return rec.SourceMeta, err
}

func (s *SourceStore) record(id string) (sourceRecord, error) {
	s.pmu.Lock()
	rec, found := s.pending[id]
	s.pmu.Unlock()
	if found {
		return rec, nil
	}
	if sourceIDPattern.MatchString(id) {
		err := s.db.bolt.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketSources).Bucket(bucketSourceMeta).Get([]byte(id))
			if v == nil {
				return nil
			}
			found = true
			return json.Unmarshal(v, &rec) // Unmarshal copies out of the page.
		})
		if err != nil {
			return sourceRecord{}, fmt.Errorf("reading source %s: %w", id, err)
		}
	}
	if !found {
		return sourceRecord{}, contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownSource,
			"no retained source %q: use the originalResultSourceId of a call result (a source goes when retention prunes its receipt)", contracts.SafeText(id, contracts.OneLine, 80))
	}
	return rec, nil
}

// Read returns a window of source id: length characters (code points) of
// its text from offset. A length of 0 means DefaultSourceReadChars; a
// longer one than MaxSourceReadChars is shortened to it. An offset at or
// past the end gives empty text and eof. Bytes that are not valid UTF-8
// count as one character each. An evicted source is an error of class
// ErrNotFound with reason source_evicted; an unknown one, unknown_source.
func (s *SourceStore) Read(id string, offset, length int64) (contracts.SourceReadResult, error) {
	if offset < 0 || length < 0 {
		return contracts.SourceReadResult{}, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"offset and length must not be negative (offset %d, length %d)", offset, length)
	}
	switch {
	case length == 0:
		length = DefaultSourceReadChars
	case length > MaxSourceReadChars:
		length = MaxSourceReadChars
	}
	rec, err := s.record(id)
	if err != nil {
		return contracts.SourceReadResult{}, err
	}
	if rec.Evicted {
		return contracts.SourceReadResult{}, s.evicted(rec)
	}
	res := contracts.SourceReadResult{SourceID: id, Offset: offset, Total: rec.Chars}
	if offset >= rec.Chars {
		res.EOF = true
		return res, nil
	}
	length = min(length, rec.Chars-offset)
	k := offset / sourceIndexStride
	if k >= int64(len(rec.Index)) {
		return contracts.SourceReadResult{}, damaged(id, "its character index is short")
	}
	skip := offset - k*sourceIndexStride
	var src io.ReaderAt
	if rec.Inline {
		text, err := s.inlineData(rec)
		if err != nil {
			return contracts.SourceReadResult{}, err
		}
		src = bytes.NewReader(text)
	} else {
		f, err := os.Open(filepath.Join(s.dir, id))
		if err != nil {
			return contracts.SourceReadResult{}, damaged(id, "its file cannot be opened")
		}
		defer f.Close()
		src = f
	}
	// Every character is at most 4 bytes, so this holds the window.
	start := rec.Index[k]
	want := min((skip+length)*utf8.UTFMax, rec.Bytes-start)
	buf := make([]byte, want)
	if _, err := src.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return contracts.SourceReadResult{}, damaged(id, "its data cannot be read")
	}
	from, n := skipRunes(buf, 0, skip)
	to, m := skipRunes(buf, from, length)
	if n < skip || m < length {
		return contracts.SourceReadResult{}, damaged(id, "its file is shorter than recorded")
	}
	res.Text = string(buf[from:to])
	res.EOF = offset+length >= rec.Chars
	return res, nil
}

// inlineData returns an inline source's text: from the pending record, or
// from sources/data/.
func (s *SourceStore) inlineData(rec sourceRecord) ([]byte, error) {
	if rec.data != nil {
		return rec.data, nil
	}
	var out []byte
	err := s.db.bolt.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketSources).Bucket(bucketSourceData).Get([]byte(rec.ID)))
		return nil
	})
	if err != nil || out == nil {
		return nil, damaged(rec.ID, "its inline data is missing")
	}
	return out, nil
}

func damaged(id, why string) error {
	return contracts.Errorf(contracts.ErrInternal, contracts.ReasonSourceDamaged, "retained source %s is damaged: %s", id, why)
}

// skipRunes advances over n characters of b from byte i, decoding as
// indexRunes does. It returns the new offset and how many it passed (fewer
// than n when b ends first).
func skipRunes(b []byte, i int, n int64) (int, int64) {
	var done int64
	for done < n && i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRune(b[i:])
			i += size
		}
		done++
	}
	return i, done
}

// indexRunes counts the characters of text and records the byte offset of
// every sourceIndexStride-th one.
func indexRunes(text []byte) (int64, []int64) {
	var n int64
	var index []int64
	for i := 0; i < len(text); {
		if n%sourceIndexStride == 0 {
			index = append(index, int64(i))
		}
		if text[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRune(text[i:])
			i += size
		}
		n++
	}
	return n, index
}

// newSourceID is "src_" and 32 hex digits, time first like newID, so that
// sources are appended to their buckets in the order they come.
func newSourceID() (string, error) {
	return "src_" + hex.EncodeToString(timeOrdered()), nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func putSource(meta *bolt.Bucket, rec sourceRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return meta.Put([]byte(rec.ID), v)
}

func getSource(meta *bolt.Bucket, id []byte) (sourceRecord, error) {
	var rec sourceRecord
	v := meta.Get(id)
	if v == nil {
		return rec, fmt.Errorf("source %s is in the eviction order but has no metadata: %w", id, contracts.ErrFailedPrecondition)
	}
	if err := json.Unmarshal(v, &rec); err != nil {
		return rec, fmt.Errorf("source %s has unreadable metadata: %w", id, err)
	}
	return rec, nil
}

// Text returns the whole text of source id when it is at most max bytes
// (an approved call's result rebuilt for the caller who waited on it). A
// larger one is an error of class ErrResourceExhausted (reason
// source_too_large): read it in windows with Read. Evicted and unknown
// sources are errors as for Read.
func (s *SourceStore) Text(id string, max int64) ([]byte, error) {
	rec, err := s.record(id)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Evicted:
		return nil, s.evicted(rec)
	case rec.Bytes > max:
		return nil, contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonSourceTooLarge,
			"source %s holds %d bytes, more than the %d read at once: read it in windows with source.read", id, rec.Bytes, max)
	case rec.Inline:
		return s.inlineData(rec)
	}
	text, err := os.ReadFile(filepath.Join(s.dir, id))
	if err != nil {
		return nil, damaged(id, "its file cannot be read")
	}
	if int64(len(text)) != rec.Bytes {
		return nil, damaged(id, "its file is not the length recorded")
	}
	return text, nil
}

// evicted is the error for reading an evicted source.
func (s *SourceStore) evicted(rec sourceRecord) error {
	return contracts.Errorf(contracts.ErrNotFound, contracts.ReasonSourceEvicted,
		"source %s was evicted at %s to keep retained sources within their bounds (retention.sources: at most %d bytes); its result is no longer available",
		rec.ID, rec.EvictedAt.Format(time.RFC3339), s.Cap())
}

package approvals

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
	bolt "go.etcd.io/bbolt"
)

// fakeClock is a deterministic clock: each call advances one second.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

func openSources(t *testing.T, capBytes int64) (*SourceStore, *DB, string) {
	t.Helper()
	db, _ := openTemp(t)
	dir := filepath.Join(t.TempDir(), "sources")
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s, err := OpenSourceStore(db, dir, capBytes, clock.now)
	if err != nil {
		t.Fatalf("OpenSourceStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// These tests look at files; TestSourceInline covers inline sources.
	s.inlineMax = -1
	return s, db, dir
}

// runeWindow returns the characters [off, off+n) of s, as Read counts them.
func runeWindow(s string, off, n int64) string {
	i := 0
	for ; off > 0 && i < len(s); off-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	j := i
	for ; n > 0 && j < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[j:])
		j += size
	}
	return s[i:j]
}

func TestSourceTwentyMegabytes(t *testing.T) {
	result, text := testsupport.BigTextResult(t)

	s, _, _ := openSources(t, 0)
	meta, err := s.Put("srv", "tool", result)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	whole := string(result)
	total := int64(utf8.RuneCountInString(whole))
	if meta.Chars != total || meta.Bytes != int64(len(result)) {
		t.Fatalf("Put meta = %d chars, %d bytes; want %d, %d", meta.Chars, meta.Bytes, total, len(result))
	}

	var got strings.Builder
	for off := int64(0); ; {
		w, err := s.Read(meta.ID, off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if w.Total != total || w.Offset != off {
			t.Fatalf("Read(%d): total %d offset %d, want %d %d", off, w.Total, w.Offset, total, off)
		}
		got.WriteString(w.Text)
		n := int64(utf8.RuneCountInString(w.Text))
		off += n
		if w.EOF != (off == total) {
			t.Fatalf("Read window ending at %d of %d: eof = %v", off, total, w.EOF)
		}
		if w.EOF {
			break
		}
		if n != 1<<20 {
			t.Fatalf("Read(%d) returned %d characters before eof", off-n, n)
		}
	}
	if got.String() != whole {
		t.Fatalf("windows concatenated differ from the original (%d vs %d bytes)", got.Len(), len(whole))
	}

	for _, tc := range []struct{ off, n int64 }{
		{0, 10}, {1, 65536}, {65535, 3}, {65536, 1}, {65537, 70000}, {3*65536 + 17, 5000},
		{total - 5, 100}, {total / 2, 1 << 20}, {total - 1, 0},
	} {
		w, err := s.Read(meta.ID, tc.off, tc.n)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", tc.off, tc.n, err)
		}
		n := tc.n
		if n == 0 {
			n = DefaultSourceReadChars
		}
		if want := runeWindow(whole, tc.off, n); w.Text != want {
			t.Errorf("Read(%d, %d) = %d bytes, want %d bytes of the rune slice", tc.off, tc.n, len(w.Text), len(want))
		}
		if wantEOF := tc.off+n >= total; w.EOF != wantEOF {
			t.Errorf("Read(%d, %d).EOF = %v, want %v", tc.off, tc.n, w.EOF, wantEOF)
		}
	}
	for _, off := range []int64{total, total + 10} {
		w, err := s.Read(meta.ID, off, 10)
		if err != nil || w.Text != "" || !w.EOF || w.Total != total {
			t.Errorf("Read(%d past the end) = %+v, %v; want empty text and eof", off, w, err)
		}
	}
	if w, err := s.Read(meta.ID, 0, 5<<20); err != nil || utf8.RuneCountInString(w.Text) != MaxSourceReadChars {
		t.Errorf("Read with a length over the maximum: %d characters, %v; want %d", utf8.RuneCountInString(w.Text), err, MaxSourceReadChars)
	}
	if !strings.Contains(whole, "TAIL-MARK") || !strings.HasPrefix(text, "HEAD-MARK") {
		t.Fatal("test text lost its marks")
	}
}

func TestSourceEviction(t *testing.T) {
	s, _, dir := openSources(t, 10<<10)
	put := func(size int) SourceMeta {
		t.Helper()
		m, err := s.Put("srv", "tool", bytes.Repeat([]byte("a"), size))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		return m
	}
	live := func(m SourceMeta) bool {
		_, err := os.Stat(filepath.Join(dir, m.ID))
		_, rerr := s.Read(m.ID, 0, 1)
		return err == nil && rerr == nil
	}
	a, b := put(4<<10), put(4<<10)
	c := put(4 << 10)
	if live(a) || !live(b) || !live(c) {
		t.Fatalf("after 3×4 KiB under a 10 KiB cap: live a=%v b=%v c=%v, want only a evicted", live(a), live(b), live(c))
	}
	if got := s.UsedBytes(); got != 8<<10 {
		t.Errorf("UsedBytes = %d, want %d", got, 8<<10)
	}
	_, err := s.Read(a.ID, 0, 10)
	we := contracts.ToError(err)
	if !errors.Is(err, contracts.ErrNotFound) || we.Reason() != "source_evicted" ||
		!strings.Contains(we.Message, "evicted at") || !strings.Contains(we.Message, "10240 bytes") {
		t.Errorf("Read(evicted) = %v (reason %q), want ErrNotFound source_evicted naming the time and cap", err, we.Reason())
	}
	if m, err := s.Meta(a.ID); err != nil || !m.Evicted || m.EvictedAt.IsZero() {
		t.Errorf("Meta(evicted) = %+v, %v; want a tombstone", m, err)
	}

	// One source over the cap stays, and evicts everything else.
	big := put(20 << 10)
	if live(b) || live(c) || !live(big) {
		t.Errorf("after a 20 KiB source: live b=%v c=%v big=%v, want only big", live(b), live(c), live(big))
	}
	d := put(1 << 10)
	if live(big) || !live(d) {
		t.Errorf("after one more: live big=%v d=%v, want big evicted", live(big), live(d))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != d.ID {
		t.Errorf("sources directory holds %d files, want only %s", len(entries), d.ID)
	}
}

func TestSourceUnknown(t *testing.T) {
	s, _, _ := openSources(t, 0)
	for _, id := range []string{"", "src_00000000000000000000000000000000", "../../etc/passwd", "src_x"} {
		_, err := s.Read(id, 0, 10)
		if !errors.Is(err, contracts.ErrNotFound) || contracts.ToError(err).Reason() != "unknown_source" {
			t.Errorf("Read(%q) = %v, want ErrNotFound unknown_source", id, err)
		}
	}
	m, err := s.Put("srv", "tool", []byte(`{"content":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ off, n int64 }{{-1, 10}, {0, -1}} {
		if _, err := s.Read(m.ID, tc.off, tc.n); !errors.Is(err, contracts.ErrInvalidArgument) {
			t.Errorf("Read(%d, %d) = %v, want ErrInvalidArgument", tc.off, tc.n, err)
		}
	}
}

func TestSourcePermissionsAndAtomicity(t *testing.T) {
	db, _ := openTemp(t)
	dir := filepath.Join(t.TempDir(), "sources")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSourceStore(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("sources directory mode = %v, want 0700", fi.Mode().Perm())
	}
	s.inlineMax = -1
	m, err := s.Put("srv", "tool", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, m.ID)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("source file: %v, %v; want mode 0600", fi, err)
	}

	countMeta := func() int {
		n := 0
		_ = db.bolt.View(func(tx *bolt.Tx) error {
			n = tx.Bucket(bucketSources).Bucket(bucketSourceMeta).Stats().KeyN
			return nil
		})
		return n
	}
	// A failure after the data is written and synced leaves nothing.
	s.beforeRename = func(tmp string) error {
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("temporary file missing before rename: %v", err)
		}
		return errors.New("injected")
	}
	if _, err := s.Put("srv", "tool", []byte("partial")); err == nil {
		t.Fatal("Put with a failing rename succeeded")
	}
	s.beforeRename = nil
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed Put the directory holds %d files, want 1", len(entries))
	}
	if n := countMeta(); n != 1 {
		t.Errorf("after a failed Put: %d metadata records, want 1", n)
	}
	if got := s.UsedBytes(); got != 5 {
		t.Errorf("UsedBytes after a failed Put = %d, want 5", got)
	}

	// A failed metadata commit removes the renamed file.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("srv", "tool", []byte("no database")); err == nil {
		t.Fatal("Put on a closed database succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed commit the directory holds %d files, want 1", len(entries))
	}
}

func TestSourceReopenCleansLeftovers(t *testing.T) {
	s, db, dir := openSources(t, 0)
	m, err := s.Put("srv", "tool", []byte(`{"content":[{"type":"text","text":"héllo"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	stray := []string{".tmp-123", "src_0123456789abcdef0123456789abcdef"}
	for _, name := range stray {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := OpenSourceStore(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stray {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s after reopen: %v", name, err)
		}
	}
	if s2.UsedBytes() != m.Bytes {
		t.Errorf("UsedBytes after reopen = %d, want %d", s2.UsedBytes(), m.Bytes)
	}
	off := int64(len(`{"content":[{"type":"text","text":"`))
	w, err := s2.Read(m.ID, off, 5)
	if err != nil || w.Text != "héllo" {
		t.Errorf("Read after reopen = %q, %v; want %q", w.Text, err, "héllo")
	}
}

func testMigrationSources(t *testing.T) {
	// A database written by schema 3 gains sources/.
	db, _ := reopenAtSchema(t, schemaOf(t, "sources")-1, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSources) })
	s, err := OpenSourceStore(db, filepath.Join(t.TempDir(), "sources"), 0, nil)
	if err != nil {
		t.Fatalf("OpenSourceStore after migration: %v", err)
	}
	m, err := s.Put("srv", "tool", []byte("abc"))
	if err != nil {
		t.Fatalf("Put after migration: %v", err)
	}
	if w, err := s.Read(m.ID, 0, 0); err != nil || w.Text != "abc" || !w.EOF {
		t.Errorf("Read after migration = %+v, %v", w, err)
	}
}

func TestSourcePutDeferred(t *testing.T) {
	s, db, dir := openSources(t, 0)
	text := []byte(`{"content":[{"type":"text","text":"deferred é"}]}`)
	var ids []string
	for i := 0; i < 50; i++ {
		m, err := s.PutDeferred("srv", "read", text)
		if err != nil {
			t.Fatalf("PutDeferred: %v", err)
		}
		// Readable at once, committed or not.
		r, err := s.Read(m.ID, 0, 0)
		if err != nil || r.Text != string(text) || !r.EOF {
			t.Fatalf("Read(%s) right after PutDeferred = %+v, %v", m.ID, r, err)
		}
		ids = append(ids, m.ID)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close every deferred source is committed: a new store over the
	// same database and directory knows them all and keeps their files.
	s2, err := OpenSourceStore(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, id := range ids {
		r, err := s2.Read(id, 0, 0)
		if err != nil || r.Text != string(text) {
			t.Fatalf("after reopen, Read(%s) = %+v, %v", id, r, err)
		}
	}
	if got, want := s2.UsedBytes(), int64(50*len(text)); got != want {
		t.Errorf("UsedBytes after reopen = %d, want %d", got, want)
	}
	// After Close, PutDeferred still works, synchronously.
	m, err := s.PutDeferred("srv", "read", text)
	if err != nil {
		t.Fatalf("PutDeferred after Close: %v", err)
	}
	if _, err := s2.Meta(m.ID); err != nil {
		t.Errorf("PutDeferred after Close did not commit: %v", err)
	}
}

func TestSourceInline(t *testing.T) {
	s, db, dir := openSources(t, 10<<10)
	s.inlineMax = InlineSourceBytes
	text := []byte(`{"content":[{"type":"text","text":"inline é 🙂"}]}`)
	a, err := s.Put("srv", "tool", text)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.PutDeferred("srv", "tool", text)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("inline sources wrote %d files, want none", len(entries))
	}
	for _, id := range []string{a.ID, d.ID} {
		if r, err := s.Read(id, 6, 0); err != nil || r.Text != string([]rune(string(text))[6:]) {
			t.Errorf("Read(%s, 6) = %+v, %v", id, r, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenSourceStore(db, dir, 10<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r, err := s2.Read(d.ID, 0, 0); err != nil || r.Text != string(text) {
		t.Errorf("after reopen, Read(deferred inline) = %+v, %v", r, err)
	}
	// Eviction of inline sources drops their data and leaves tombstones.
	for i := 0; i < 3; i++ {
		if _, err := s2.Put("srv", "tool", bytes.Repeat([]byte("b"), 4<<10)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s2.Read(a.ID, 0, 1)
	if contracts.ToError(err).Reason() != "source_evicted" {
		t.Errorf("Read(evicted inline) = %v, want source_evicted", err)
	}
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSources).Bucket(bucketSourceData).Get([]byte(a.ID)); v != nil {
			t.Errorf("evicted inline source still has %d bytes of data", len(v))
		}
		return nil
	})
}

func TestMigrationSourceData(t *testing.T) {
	db, _ := reopenAtSchema(t, 4, func(tx *bolt.Tx) error { return tx.Bucket(bucketSources).DeleteBucket(bucketSourceData) })
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSources).Bucket(bucketSourceData) == nil {
			t.Error("migration 5 did not create sources/data/")
		}
		return nil
	})
}

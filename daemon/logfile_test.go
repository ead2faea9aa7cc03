package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestLogFileBounded: months of log events never take more than twice the
// limit, every event stays whole in one file, the newest events are in
// pikod.log and the ones before them in pikod.log.1.
func TestLogFileBounded(t *testing.T) {
	dir := t.TempDir()
	const limit = MinLogMaxBytes
	l, err := OpenLog(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers, events = 4, 2000
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range events {
				line := fmt.Sprintf(`{"level":"info","writer":%d,"n":%d,"message":"call"}`+"\n", w, i)
				if _, err := l.Write([]byte(line)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	last := `{"level":"info","message":"the last event"}` + "\n"
	if _, err := l.Write([]byte(last)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(filepath.Join(dir, "pikod.log"))
	if err != nil {
		t.Fatal(err)
	}
	prev, err := os.ReadFile(filepath.Join(dir, "pikod.log.1"))
	if err != nil {
		t.Fatalf("no pikod.log.1 after %d events over a %d-byte limit: %v", writers*events, limit, err)
	}
	for name, b := range map[string][]byte{"pikod.log": cur, "pikod.log.1": prev} {
		if len(b) > limit {
			t.Errorf("%s is %d bytes, over the %d-byte limit", name, len(b), limit)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if !json.Valid(line) {
				t.Fatalf("%s line %d is not a whole event: %q", name, i+1, line)
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode().Perm(), err)
		}
	}
	if !bytes.HasSuffix(cur, []byte(last)) {
		t.Error("the last event written is not at the end of pikod.log")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the state directory holds %d files, want pikod.log and pikod.log.1", len(entries))
	}

	// Opening again appends to what is there, counting it.
	l, err = OpenLog(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.size != int64(len(cur)) {
		t.Errorf("reopened log counts %d bytes, the file has %d", l.size, len(cur))
	}
	if _, err := OpenLog(dir, 100); err == nil {
		t.Error("a 100-byte limit was accepted")
	}
}

package vault

import (
	"strings"
	"testing"
)

func TestRedactWindow(t *testing.T) {
	secret := "sk-" + strings.Repeat("q7", 20)
	r := NewRedactor()
	r.SetValues([]string{secret})
	if r.Longest() < len(secret) {
		t.Fatalf("Longest = %d, want at least %d", r.Longest(), len(secret))
	}
	text := []byte("head " + secret + " tail \xff")
	start := strings.Index(string(text), secret)
	for _, w := range [][2]int{{0, start + 5}, {start + 5, len(text)}, {start + 2, start + 8}, {0, len(text)}} {
		out, changed := r.RedactWindow(text, w[0], w[1])
		if !changed || strings.Contains(string(out), secret[2:8]) || !strings.Contains(string(out), Redacted) {
			t.Errorf("window %v: %q (changed %v)", w, out, changed)
		}
	}
	out, changed := r.RedactWindow(text, 0, 4)
	if changed || string(out) != "head" {
		t.Errorf("a window away from the secret: %q (changed %v)", out, changed)
	}
}

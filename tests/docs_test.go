package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docText returns a file of the module (README.md, docs/...), with a
// newline in front so that readmeSection finds a heading on line one.
func docText(t *testing.T, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return "\n" + string(b)
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// slug is the anchor GitHub gives a heading.
func slug(h string) string {
	return strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// TestDocsLinks: the README is a front page of at most 300 lines, and
// every relative link of the README and docs/ reaches a file that exists
// and, with #anchor, a heading of that file.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(docText(t, "README.md"), "\n") - 1; n > 300 {
		t.Errorf("README.md has %d lines; the front page keeps to 300 (the rest goes to docs/)", n)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		a := map[string]bool{}
		if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
			text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(b), "")
			for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
				a[slug(m[1])] = true
			}
		}
		anchors[rel] = a
		return a
	}
	links := 0
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			u := m[1]
			if strings.Contains(u, "://") || strings.HasPrefix(u, "mailto:") {
				continue
			}
			links++
			path, frag, _ := strings.Cut(u, "#")
			target := rel
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(rel), path))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, u)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", rel, u, target, frag)
			}
		}
	}
	if links < 50 {
		t.Errorf("found only %d relative links: the check is not reading the docs", links)
	}
}

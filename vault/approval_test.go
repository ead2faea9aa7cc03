package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestApprovalPassphrase(t *testing.T) {
	var log bytes.Buffer
	cfg := fileConfig(t, &log)
	v := mustOpen(t, cfg)
	const pass = "correct horse battery"

	if has, err := v.HasApprovalPassphrase(); err != nil || has {
		t.Fatalf("HasApprovalPassphrase on a new vault = %v, %v; want false", has, err)
	}
	if _, err := v.CheckApprovalPassphrase(NewSecret(pass)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("CheckApprovalPassphrase without a hash = %v, want ErrNotFound", err)
	}
	if err := v.SetApprovalPassphrase(NewSecret(pass)); err != nil {
		t.Fatal(err)
	}
	if has, err := v.HasApprovalPassphrase(); err != nil || !has {
		t.Fatalf("HasApprovalPassphrase after set = %v, %v; want true", has, err)
	}

	// Only the hash is stored, with its parameters and a salt.
	stored, err := v.Get(approvalItem)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(stored), "$argon2id$v=19$m=65536,t=3,p=4$") || bytes.Contains(stored, []byte(pass)) {
		t.Errorf("stored item %q is not an argon2id hash with its parameters", stored)
	}
	h, err := parseArgonHash(string(stored))
	if err != nil || len(h.salt) != argonSaltLen || len(h.key) != argonKeyLen {
		t.Fatalf("parsing the stored hash: %+v, %v", h, err)
	}

	for _, tc := range []struct {
		try  string
		want bool
	}{
		{pass, true},
		{pass + " ", false},
		{"Correct horse battery", false},
		{"", false},
	} {
		if ok, err := v.CheckApprovalPassphrase(NewSecret(tc.try)); err != nil || ok != tc.want {
			t.Errorf("CheckApprovalPassphrase(%q) = %v, %v; want %v", tc.try, ok, err, tc.want)
		}
	}

	// A second set draws a new salt: the same passphrase, another hash.
	if err := v.SetApprovalPassphrase(NewSecret(pass)); err != nil {
		t.Fatal(err)
	}
	again, _ := v.Get(approvalItem)
	if bytes.Equal(again, stored) {
		t.Error("setting the same passphrase twice stored the same hash: the salt is not random")
	}

	// It survives a reopen, and nothing on disk or in the log holds it.
	v.Close()
	v = mustOpen(t, cfg)
	if ok, err := v.CheckApprovalPassphrase(NewSecret(pass)); err != nil || !ok {
		t.Errorf("after reopening: %v, %v", ok, err)
	}
	filepath.WalkDir(filepath.Dir(cfg.Dir), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pass)) {
				t.Errorf("%s holds the passphrase", p)
			}
		}
		return nil
	})
	if strings.Contains(log.String(), pass) {
		t.Errorf("the log holds the passphrase:\n%s", log.String())
	}

	if err := v.ClearApprovalPassphrase(); err != nil {
		t.Fatal(err)
	}
	if has, err := v.HasApprovalPassphrase(); err != nil || has {
		t.Errorf("after clear: %v, %v", has, err)
	}
	if err := v.ClearApprovalPassphrase(); err != nil {
		t.Errorf("clearing twice: %v", err)
	}
}

func TestApprovalPassphraseRefused(t *testing.T) {
	v := mustOpen(t, fileConfig(t, nil))
	for _, tc := range []struct {
		pass, reason string
	}{
		{"short", "passphrase_too_short"},
		{"seven77", "passphrase_too_short"},
		{strings.Repeat("x", contracts.PassphraseMaxBytes+1), "passphrase_too_long"},
		{"has a\nnewline", "passphrase_invalid"},
		{"bad utf8 \xff\xfe", "passphrase_invalid"},
	} {
		err := v.SetApprovalPassphrase(NewSecret(tc.pass))
		if reason(err) != tc.reason {
			t.Errorf("SetApprovalPassphrase(%q) = %v, want reason %s", tc.pass, err, tc.reason)
		}
		if err != nil && len(tc.pass) > 4 && strings.Contains(err.Error(), tc.pass) {
			t.Errorf("the error %q repeats the passphrase", err)
		}
	}
	if has, _ := v.HasApprovalPassphrase(); has {
		t.Error("a refused passphrase was stored")
	}
}

func TestParseArgonHashBounds(t *testing.T) {
	good := argonHash{time: 1, memory: 64, threads: 1, salt: make([]byte, 16), key: make([]byte, 32)}.String()
	if _, err := parseArgonHash(good); err != nil {
		t.Fatalf("parsing %q: %v", good, err)
	}
	for _, s := range []string{
		"",
		"plain text",
		strings.Replace(good, "argon2id", "argon2i", 1),
		strings.Replace(good, "v=19", "v=16", 1),
		strings.Replace(good, "m=64", "m=4294967295", 1), // 4 TiB
		strings.Replace(good, "t=1", "t=1000", 1),
		strings.Replace(good, "p=1", "p=0", 1),
		strings.Replace(good, "p=1", "p=255", 1),
		strings.Replace(good, ",t=1", ",x=1", 1),
		good[:strings.LastIndexByte(good, '$')] + "$AAAA",
	} {
		if _, err := parseArgonHash(s); reason(err) != "passphrase_hash_invalid" {
			t.Errorf("parseArgonHash(%q) = %v, want passphrase_hash_invalid", s, err)
		}
	}
}

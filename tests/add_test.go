package tests

import (
	"os"
	"strings"
	"testing"
)

// TestAddShapes adds servers the way 'claude mcp add' and 'codex mcp add'
// are typed: flags after the command belong to the command, -e and
// --header take credentials to the vault, --transport http takes the URL
// after the name.
func TestAddShapes(t *testing.T) {
	d := startDaemon(t)
	tok := "ghp_" + randomToken(t, 36)
	// Claude's stdio shape, with a flag of the command's own (-y style).
	ctlOK(t, d, "", "mcp", "add", "seq", fixtureBin, "--tools", "2")
	// -e before --, a credential among them; --read-only grants.
	_, errOut, code := runCtl(t, d, "", "mcp", "add", "gh", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN="+tok, "-e", "LOG_LEVEL=debug", "--read-only", "echo", "--", fixtureBin, "--name", "gh")
	if code != 0 || !strings.Contains(errOut, "stored env.GITHUB_PERSONAL_ACCESS_TOKEN for gh in the vault") {
		t.Fatalf("add with -e exited %d:\n%s", code, errOut)
	}
	// The remote shape, with a header in curl's form and a bearer token.
	_, errOut, code = runCtl(t, d, "", "mcp", "add", "--transport", "http", "learn", "https://learn.example.com/mcp",
		"--header", "X-Team: blue", "--header", "Authorization: Bearer "+tok)
	if code != 0 || !strings.Contains(errOut, "stored headers.Authorization for learn in the vault") {
		t.Fatalf("add --transport http exited %d:\n%s", code, errOut)
	}
	// The older form still works.
	ctlOK(t, d, "", "mcp", "add", "old", "--stdio", "--", fixtureBin, "--tools", "1")

	srv, _ := savedServers(t, d)
	if s := srv["seq"]; s.Transport != "stdio" || s.Command != fixtureBin || strings.Join(s.Args, " ") != "--tools 2" {
		t.Errorf("seq = %+v, want the command's own --tools 2 kept as its arguments", s)
	}
	gh := srv["gh"]
	if gh.Env["LOG_LEVEL"] != "debug" || gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "" || strings.Join(gh.Args, " ") != "--name gh" || len(gh.ReadOnlyTools) != 1 {
		t.Errorf("gh = %+v", gh)
	}
	if l := srv["learn"]; l.Transport != "http" || l.URL != "https://learn.example.com/mcp" || l.Headers["X-Team"] != "blue" || l.Headers["Authorization"] != "" {
		t.Errorf("learn = %+v", l)
	}
	if o := srv["old"]; strings.Join(o.Args, " ") != "--tools 1" {
		t.Errorf("old = %+v", o)
	}
	// The credential is in the vault and reaches the server, never the
	// settings file.
	cfg := ctlOK(t, d, "", "mcp", "config")
	if strings.Contains(cfg, tok) {
		t.Errorf("the settings hold the credential")
	}
	db, _ := os.ReadFile(d.stateDir + "/pikod.db")
	if strings.Contains(string(db), tok) {
		t.Errorf("pikod.db holds the credential in the clear")
	}
	if st := serverStatus(t, d, "gh"); st.Credentials != "stored" {
		t.Errorf("gh credentials = %q, want stored", st.Credentials)
	}
	// Mistakes name the way out.
	for args, want := range map[string]string{
		"add nocmd":                              "needs the command to run",
		"add --transport http nourl":             "needs the URL",
		"add --transport ftp x y":                "--transport must be stdio, http or sse",
		"add web --header X=1 -- " + "/bin/true": "--header is for http and sse servers",
	} {
		if e := ctlFails(t, d, 2, append([]string{"mcp"}, strings.Fields(args)...)...); !strings.Contains(e, want) {
			t.Errorf("%s: %q, want %q", args, e, want)
		}
	}
}

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Skills (the MCP Skills extension, SEP-2640): listing, loading with the
// size, digest and frontmatter checks, supporting files, pins, refresh
// after list_changed, both protocol eras, and the fixture's read log
// proving that nothing is read ahead of need.

// readLog returns the URIs a fixture's --read-log holds.
func readLog(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the read log: %v", err)
	}
	return strings.Fields(string(b))
}

func skillsList(t testing.TB, d *daemon, server string) contracts.SkillListResult {
	t.Helper()
	var res contracts.SkillListResult
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: server}, &res)
	return res
}

func skillByName(t testing.TB, l contracts.SkillListResult, name string) contracts.SkillInfo {
	t.Helper()
	for _, s := range l.Skills {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no skill %q in %+v", name, l.Skills)
	return contracts.SkillInfo{}
}

func loadSkill(t testing.TB, d *daemon, server, skill string) contracts.SkillLoadResult {
	t.Helper()
	var res contracts.SkillLoadResult
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: server, Op: contracts.SkillOpLoad, Skill: skill}, &res)
	if res.ReceiptKind != contracts.ReceiptSkillLoad || res.ReceiptID == "" || res.OriginalResultSourceID == "" ||
		!slices.Equal(res.Verified, []string{"size", "digest", "frontmatter"}) || res.Evidence != contracts.SkillEvidence {
		t.Fatalf("load %s: %+v, want a verified load with a receipt, a source and the evidence note", skill, res)
	}
	return res
}

func TestSkills(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := t.TempDir()
	logs := map[string]string{}
	var servers []srv
	for _, tamper := range []string{"size", "digest", "frontmatter"} {
		id := "sk-" + tamper
		logs[id] = filepath.Join(dir, id+".reads")
		servers = append(servers, stdioFixture(id, "--skills", "--skill-tamper", tamper, "--page-size", "2", "--read-log", logs[id]).
			with("readOnlyTools", []string{"rotate-skill"}))
	}
	logs["modern"] = filepath.Join(dir, "modern.reads")
	servers = append(servers, stdioFixture("modern", "--protocol", "modern", "--skills", "--read-log", logs["modern"]).
		with("protocol", map[string]string{"pin": modernVersion}))
	servers = append(servers, stdioFixture("plain"))
	configureMCP(t, d, mcpSettings(t, servers...))
	for id := range logs {
		connectServer(t, d, id)
	}
	connectServer(t, d, "plain")
	const sz = "sk-size"

	// Connecting and listing read no file of any skill.
	l := skillsList(t, d, sz)
	if !l.Complete || len(l.Skills) != 4 {
		t.Fatalf("list: complete %v, %d skills; want complete, the 4 listed over 2 pages: %+v", l.Complete, len(l.Skills), l.Skills)
	}
	gw := skillByName(t, l, "git-workflow")
	if gw.URI != "skill://git-workflow/SKILL.md" || len(gw.Files) != 3 || gw.Pin != "" || gw.Problem != "" || gw.Digest == "" ||
		!strings.Contains(string(gw.Frontmatter), `"owner":"platform"`) {
		t.Errorf("git-workflow listed as %+v", gw)
	}
	if daily := skillByName(t, l, "daily"); !daily.Dynamic || !strings.Contains(daily.Problem, `"dynamic"`) {
		t.Errorf("daily listed as %+v, want dynamic with a problem saying it cannot be verified", daily)
	}
	var cat contracts.CatalogResult
	d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: sz}, &cat)
	if len(cat.Skills) != 4 {
		t.Errorf("the catalog has %d skills, want the 4 listed", len(cat.Skills))
	}
	for id, path := range logs {
		if id != "modern" {
			skillsList(t, d, id)
		}
		if got := readLog(t, path); len(got) != 0 {
			t.Errorf("%s: connecting and listing read %q, want nothing", id, got)
		}
	}

	// Loading reads SKILL.md only, verified, as evidence.
	res := loadSkill(t, d, sz, "git-workflow")
	if !strings.HasPrefix(res.Text, "---\nname: git-workflow\n") || !strings.Contains(res.Text, "# Git workflow") ||
		res.Truncated || len(res.Files) != 3 || res.Digest != gw.Digest {
		t.Errorf("load git-workflow: %+v", res)
	}
	if got := readLog(t, logs[sz]); !slices.Equal(got, []string{"skill://git-workflow/SKILL.md"}) {
		t.Errorf("loading read %q, want SKILL.md only", got)
	}
	refunds := loadSkill(t, d, sz, "skill://acme/billing/refunds/SKILL.md")
	if strings.Contains(refunds.Text, "\x1b") || !strings.Contains(refunds.Text, `\u{001B}[31mRED`) {
		t.Errorf("the refunds skill's ANSI escape is not made safe: %q", refunds.Text)
	}
	hidden := loadSkill(t, d, sz, "skill://hidden/SKILL.md")
	if !strings.Contains(hidden.Text, "Found by its URI.") {
		t.Errorf("a skill no listing shows, loaded by its URI: %+v", hidden)
	}
	if l := skillsList(t, d, sz); skillByName(t, l, "git-workflow").Pin != contracts.SkillPinLoaded {
		t.Errorf("after the load, git-workflow's pin is %q, want loaded", skillByName(t, l, "git-workflow").Pin)
	}

	// Supporting files: read on demand, verified against their entries.
	var guide contracts.SkillReadResult
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: "git-workflow", File: "references/GUIDE.md"}, &guide)
	if !strings.Contains(guide.Text, "(revision 0)") || !slices.Equal(guide.Verified, []string{"size", "digest"}) ||
		guide.ReceiptKind != contracts.ReceiptSkillRead || guide.Path != "references/GUIDE.md" {
		t.Errorf("read GUIDE.md: %+v", guide)
	}
	var logo contracts.SkillReadResult
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: "git-workflow",
		File: "skill://git-workflow/assets/logo.bin"}, &logo)
	if !logo.Binary || logo.Size != 64 || logo.Text != "" {
		t.Errorf("read logo.bin: %+v, want binary, 64 bytes, no text", logo)
	}
	reads := len(readLog(t, logs[sz]))
	for _, tc := range []struct{ skill, file, reason string }{
		{"git-workflow", "references/MISSING.md", "skill_file_unlisted"},
		{"git-workflow", "../refunds/SKILL.md", "skill_file_unlisted"},
		{"tampered", "notes.md", "skill_not_loaded"},
	} {
		we := d.callErr(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: tc.skill, File: tc.file})
		if we.Reason() != tc.reason || !strings.Contains(we.Message, "nothing was read") {
			t.Errorf("read %s of %s: %+v, want %s", tc.file, tc.skill, we, tc.reason)
		}
	}
	for _, tc := range []struct{ skill, reason string }{
		{"daily", "skill_dynamic"}, {"no-such-skill", "unknown_skill"}, {"skill://nope/SKILL.md", "upstream_error"},
	} {
		if we := d.callErr(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpLoad, Skill: tc.skill}); we.Reason() != tc.reason {
			t.Errorf("load %s: %+v, want %s", tc.skill, we, tc.reason)
		}
	}
	if got := readLog(t, logs[sz]); len(got) != reads {
		t.Errorf("refused reads and loads read %q, want nothing more", got[reads:])
	}
	if we := d.callErr(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: "plain"}); we.Reason() != "skills_not_offered" {
		t.Errorf("skills of a server without the extension: %+v, want skills_not_offered", we)
	}

	// A tampered skill: refused on the check that fails, through pikoctl,
	// having read its SKILL.md and nothing else.
	for _, tc := range []struct{ server, check, detail string }{
		{"sk-size", "size", "SKILL.md is 166 bytes, and its entry says 167"},
		{"sk-digest", "digest", "SKILL.md has the SHA-256 sha256:"},
		{"sk-frontmatter", "frontmatter", `field "description" differs: SKILL.md has "A skill whose entry disagrees with its SKILL.md", the entry has "A skill whose entry agrees with its SKILL.md"`},
	} {
		before := len(readLog(t, logs[tc.server]))
		stdout, stderr, code := runCtl(t, d, "", "mcp", "skill", tc.server, "tampered")
		t.Logf("$ pikoctl mcp skill %s tampered   # exit %d\n%s%s", tc.server, code, stdout, stderr)
		if code == 0 || stdout != "" || !strings.Contains(stderr, `skill "skill://tampered/SKILL.md" of server "`+tc.server+`" failed the `+tc.check+` check`) ||
			!strings.Contains(stderr, tc.detail) || !strings.Contains(stderr, "none of its other files was read") || strings.Contains(stderr, "If you can read this") {
			t.Errorf("pikoctl mcp skill %s tampered: exit %d, stdout %q, stderr %q; want the %s check named", tc.server, code, stdout, stderr, tc.check)
		}
		if got := readLog(t, logs[tc.server])[before:]; !slices.Equal(got, []string{"skill://tampered/SKILL.md"}) {
			t.Errorf("%s: the refused skill read %q, want its SKILL.md only", tc.server, got)
		}
		we := d.callErr(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: tc.server, Op: contracts.SkillOpLoad, Skill: "tampered"})
		if we.Reason() != "skill_"+tc.check+"_mismatch" {
			t.Errorf("%s: load tampered: reason %q, want skill_%s_mismatch", tc.server, we.Reason(), tc.check)
		}
		if tc.server != sz {
			if out, _, code := runCtl(t, d, "", "mcp", "skill", tc.server, "git-workflow"); code != 0 || !strings.Contains(out, "verified: size, digest, frontmatter") {
				t.Errorf("%s: the untampered skill: exit %d\n%s", tc.server, code, out)
			}
		}
	}

	// A changed skill: the server rotates a file and says its resources
	// changed; the refreshed listing (which reads no file) shows the skill
	// changed, its files cannot be read until it is loaded again.
	reads = len(readLog(t, logs[sz]))
	var call contracts.CallResult
	d.callInto(t, contracts.MethodMCPCall, contracts.CallParams{Server: sz, Tool: "rotate-skill"}, &call)
	poll(t, "git-workflow to show as changed", func() bool {
		return skillByName(t, skillsList(t, d, sz), "git-workflow").Pin == contracts.SkillPinChanged
	}, func() string { return string(d.call(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz})) })
	if got := readLog(t, logs[sz]); len(got) != reads {
		t.Errorf("the refresh read %q, want nothing", got[reads:])
	}
	if we := d.callErr(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: "git-workflow", File: "references/GUIDE.md"}); we.Reason() != "skill_changed" {
		t.Errorf("read of a changed skill: %+v, want skill_changed", we)
	}
	out, _, code := runCtl(t, d, "", "mcp", "skills", sz)
	if code != 0 || !strings.Contains(out, "SKILL") || !strings.Contains(out, "CHANGED since it was loaded") || !strings.Contains(out, "unverifiable") {
		t.Errorf("pikoctl mcp skills: exit %d\n%s", code, out)
	}
	loadSkill(t, d, sz, "git-workflow")
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: "git-workflow", File: "references/GUIDE.md"}, &guide)
	if !strings.Contains(guide.Text, "(revision 1)") {
		t.Errorf("GUIDE.md after the second load: %q, want revision 1", guide.Text)
	}
	if out, _, code := runCtl(t, d, "", "mcp", "skill", sz, "git-workflow", "--file", "references/GUIDE.md"); code != 0 ||
		!strings.Contains(out, "(revision 1)") || !strings.Contains(out, "verified: size, digest") {
		t.Errorf("pikoctl mcp skill --file: exit %d\n%s", code, out)
	}

	// The 2026-07-28 era: the extension declared in server/discover.
	if l := skillsList(t, d, "modern"); len(l.Skills) != 3 {
		t.Errorf("modern: %d skills listed, want 3", len(l.Skills))
	}
	loadSkill(t, d, "modern", "git-workflow")
	if got := readLog(t, logs["modern"]); !slices.Equal(got, []string{"skill://git-workflow/SKILL.md"}) {
		t.Errorf("modern: read %q, want SKILL.md once", got)
	}

	// Pins outlive the daemon: after a restart the fixture serves GUIDE.md
	// at revision 0 again, which is not what was loaded.
	d.restart()
	for _, id := range []string{sz} {
		connectServer(t, d, id)
	}
	l = skillsList(t, d, sz)
	if p := skillByName(t, l, "git-workflow").Pin; p != contracts.SkillPinChanged {
		t.Errorf("after a restart, git-workflow's pin is %q, want changed (loaded at revision 1, served at 0)", p)
	}
	if p := skillByName(t, l, "refunds").Pin; p != contracts.SkillPinLoaded {
		t.Errorf("after a restart, refunds' pin is %q, want loaded", p)
	}
	var raw json.RawMessage
	d.callInto(t, contracts.MethodMCPSkills, contracts.SkillsParams{Server: sz, Op: contracts.SkillOpRead, Skill: "refunds", File: "examples/email.md"}, &raw)
}

// TestSkillsBridge reads skills through 'pikoctl mcp serve' with the
// official Go SDK's client: a skill's files are resources; reading SKILL.md
// loads the skill (verified, tagged with its server), a supporting file is
// served only once the skill is loaded, a tampered skill is refused, and
// listing reads nothing.
func TestSkillsBridge(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	reads := filepath.Join(t.TempDir(), "reads")
	configureMCP(t, d, mcpSettings(t, stdioFixture("sk", "--skills", "--skill-tamper", "digest", "--read-log", reads)))
	h := startHost(t, d, []string{gosdkClientBin})
	h.do(map[string]any{"op": "init"})
	var list struct {
		Resources []struct {
			URI, Name, Description string
		} `json:"resources"`
	}
	b, _ := json.Marshal(h.do(map[string]any{"op": "listResources"}))
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	uris := map[string]string{}
	for _, r := range list.Resources {
		uris[r.URI] = r.Description
	}
	for _, u := range []string{"skill://git-workflow/SKILL.md", "skill://git-workflow/references/GUIDE.md", "skill://tampered/SKILL.md",
		"skill://acme/billing/refunds/examples/email.md"} {
		if _, ok := uris[u]; !ok {
			t.Errorf("resources/list through the bridge lacks %s: %v", u, slices.Collect(mapsKeys(uris)))
		}
	}
	if _, ok := uris["skill://reports/daily/SKILL.md"]; ok {
		t.Errorf("the dynamic skill, which pikod does not load, is exposed")
	}
	if d := uris["skill://git-workflow/SKILL.md"]; !strings.Contains(d, "skill git-workflow of server sk") {
		t.Errorf("SKILL.md's description %q does not name the skill and its server", d)
	}
	read := func(uri string) (string, string) {
		_, ch := h.send(map[string]any{"op": "readResource", "uri": uri})
		m := h.answer(ch)
		if e, ok := m["error"]; ok {
			return "", fmt.Sprint(e)
		}
		b, _ := json.Marshal(m["result"])
		return string(b), ""
	}
	if got := readLog(t, reads); len(got) != 0 {
		t.Fatalf("listing through the bridge read %q, want nothing", got)
	}
	if _, e := read("skill://git-workflow/references/GUIDE.md"); !strings.Contains(e, "is not loaded") {
		t.Errorf("GUIDE.md before its skill was loaded: error %q, want not loaded", e)
	}
	text, e := read("skill://git-workflow/SKILL.md")
	if e != "" || !strings.Contains(text, "[pikod: skill git-workflow of server sk, SKILL.md, verified (size, digest, frontmatter).") ||
		!strings.Contains(text, "# Git workflow") {
		t.Errorf("SKILL.md through the bridge: %s %s", text, e)
	}
	if text, e := read("skill://git-workflow/references/GUIDE.md"); e != "" || !strings.Contains(text, "(revision 0)") || !strings.Contains(text, "verified (size, digest)") {
		t.Errorf("GUIDE.md after the load: %s %s", text, e)
	}
	if _, e := read("skill://tampered/SKILL.md"); !strings.Contains(e, "failed the digest check") {
		t.Errorf("the tampered skill through the bridge: error %q, want the digest check named", e)
	}
	want := []string{"skill://git-workflow/SKILL.md", "skill://git-workflow/references/GUIDE.md", "skill://tampered/SKILL.md"}
	if got := readLog(t, reads); !slices.Equal(got, want) {
		t.Errorf("the bridge read %q, want %q", got, want)
	}
}

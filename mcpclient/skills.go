package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// Skills (the MCP Skills extension, SEP-2640). A server that declares the
// extension lists its skills with skills/list, each entry a manifest: the
// URI of its SKILL.md, its frontmatter, and every file with a digest and a
// size. The listing is part of the catalog (read with the other lists,
// bounded by the same limits, read again when the server says its
// resources changed). No file of a skill is read ahead of need: loading
// reads SKILL.md, and a supporting file is read when asked for, each
// verified against the entry it was loaded from before any of it is used.
// Digests come from the same server as the files: a match proves the two
// agree, not that either can be trusted, and skill text stays the
// server's data.

const (
	methodSkillsList = "skills/list"
	methodSkillsGet  = "skills/get"
	skillFileName    = "SKILL.md"
	// maxHeldSkills bounds the entries a session keeps of the skills it
	// loaded; the oldest is forgotten first (its files then need a new
	// load).
	maxHeldSkills = 256
)

// SkillPins keeps what the owner loaded of each skill: the digest of its
// files (skillEntry.Digest) at the last load, so a skill whose files
// change afterwards shows as changed until it is loaded again. The daemon
// stores them in pikod.db.
type SkillPins interface {
	// LoadSkills returns the pins of one server's skills, by Key.
	LoadSkills(server string) (map[string]SkillPin, error)
	// PinSkill records a load.
	PinSkill(server string, pin SkillPin) error
}

// SkillPin is one skill's last load. Key is SkillKey of its URI: a store
// keeps the URI and name (the server's text) redacted, and finds the pin by
// the key.
type SkillPin struct {
	Key, URI, Name, Digest string
	LoadedAt               time.Time
}

// SkillKey is the key of a skill's pin: the hex SHA-256 of its URI.
func SkillKey(uri string) string {
	sum := sha256.Sum256([]byte(uri))
	return hex.EncodeToString(sum[:])
}

// skillEntry is one Skill entry of a server, checked. Problem says why it
// cannot be loaded; an entry without a URI cannot even be named.
type skillEntry struct {
	URI         string
	Frontmatter json.RawMessage
	Name        string
	Description string
	Dynamic     bool
	Files       []contracts.SkillFile
	Bytes       int64
	// Digest is the SHA-256 over the files' URIs and digests, sorted
	// (hex): what a load pins. Empty for a dynamic or invalid entry.
	Digest  string
	Problem string
	// tooLarge says the entry is past the extension's limits.
	tooLarge bool
}

// file returns the entry's file with that URI.
func (e *skillEntry) file(uri string) (contracts.SkillFile, bool) {
	i := slices.IndexFunc(e.Files, func(f contracts.SkillFile) bool { return f.URI == uri })
	if i < 0 {
		return contracts.SkillFile{}, false
	}
	return e.Files[i], true
}

// root is the skill's directory: its SKILL.md URI without "/SKILL.md".
func (e *skillEntry) root() string { return strings.TrimSuffix(e.URI, "/"+skillFileName) }

// parseSkillEntry checks one Skill entry against the extension: a uri
// ending in /SKILL.md whose last path segment before it is
// frontmatter.name; a frontmatter object with string name and description;
// resources "dynamic" or a complete list of files (each once, each the
// SKILL.md or under the skill's directory, SKILL.md among them), each with
// a sha256 digest and a size.
func parseSkillEntry(raw json.RawMessage) skillEntry {
	var e skillEntry
	var top struct {
		URI         *string         `json:"uri"`
		Frontmatter json.RawMessage `json:"frontmatter"`
		Resources   json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		e.Problem = "the entry is not a JSON object"
		return e
	}
	if top.URI == nil || *top.URI == "" {
		e.Problem = `the entry has no "uri"`
		return e
	}
	e.URI = *top.URI
	fail := func(format string, args ...any) skillEntry {
		e.Problem, e.Digest = fmt.Sprintf(format, args...), ""
		return e
	}
	var fm map[string]json.RawMessage
	if len(bytes.TrimSpace(top.Frontmatter)) == 0 || json.Unmarshal(top.Frontmatter, &fm) != nil || fm == nil {
		return fail(`its "frontmatter" is not an object`)
	}
	e.Frontmatter = top.Frontmatter
	if json.Unmarshal(fm["name"], &e.Name) != nil || e.Name == "" {
		return fail(`its frontmatter has no string "name"`)
	}
	if json.Unmarshal(fm["description"], &e.Description) != nil || e.Description == "" {
		return fail(`its frontmatter has no string "description"`)
	}
	if len(e.URI) > maxURIBytes {
		return fail("its uri is longer than %d bytes", maxURIBytes)
	}
	if !strings.HasSuffix(e.URI, "/"+skillFileName) {
		return fail("its uri does not end in /%s", skillFileName)
	}
	if last := e.root()[strings.LastIndexByte(e.root(), '/')+1:]; last != e.Name {
		return fail("its uri's last path segment %s is not its name", strconv.Quote(clip(last, 80)))
	}
	res := bytes.TrimSpace(top.Resources)
	if string(res) == `"dynamic"` {
		e.Dynamic = true
		return fail(`its resources are "dynamic": the server publishes no digests to verify its files against, and pikod loads only skills it can verify`)
	}
	var files []struct {
		URI    *string      `json:"uri"`
		Digest *string      `json:"digest"`
		Size   *json.Number `json:"size"`
	}
	if len(res) == 0 || res[0] != '[' || json.Unmarshal(res, &files) != nil {
		return fail(`its "resources" is neither a list of files nor "dynamic"`)
	}
	seen := map[string]bool{}
	for i, f := range files {
		if f.URI == nil || *f.URI == "" || f.Digest == nil || f.Size == nil {
			return fail("resources[%d] lacks a uri, a digest or a size", i)
		}
		rel, ok := strings.CutPrefix(*f.URI, e.root()+"/")
		if !ok || rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "../") || rel == ".." {
			return fail("resources[%d] %s is not a file of the skill's directory", i, strconv.Quote(clip(*f.URI, 200)))
		}
		if seen[*f.URI] {
			return fail("resources[%d] %s is listed twice", i, strconv.Quote(clip(*f.URI, 200)))
		}
		seen[*f.URI] = true
		if !validDigest(*f.Digest) {
			return fail(`resources[%d] has a digest that is not "sha256:" and 64 lowercase hex digits`, i)
		}
		size, err := f.Size.Int64()
		if err != nil || size < 0 {
			return fail("resources[%d] has a size that is not a whole number of bytes", i)
		}
		e.Files = append(e.Files, contracts.SkillFile{URI: *f.URI, Path: rel, Digest: *f.Digest, Size: size})
		e.Bytes += size
	}
	if !seen[e.URI] {
		return fail("its resources do not list its %s", skillFileName)
	}
	e.Digest = contracts.SkillSetDigest(e.Files)
	switch {
	case len(e.Files) > contracts.MaxSkillFiles:
		e.tooLarge = true
		return fail("it lists %d files, more than the %d pikod loads", len(e.Files), contracts.MaxSkillFiles)
	case e.Bytes > contracts.MaxSkillBytes:
		e.tooLarge = true
		return fail("its files hold %d bytes, more than the %d pikod loads", e.Bytes, contracts.MaxSkillBytes)
	}
	return e
}

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// skillIndex indexes a catalog's skills; built with the offer index,
// read-only after.
type skillIndex struct {
	ordered []*skillEntry
	byURI   map[string]*skillEntry
}

func newSkillIndex(raw []json.RawMessage) skillIndex {
	x := skillIndex{byURI: map[string]*skillEntry{}}
	for _, r := range raw {
		e := parseSkillEntry(r)
		if e.URI != "" {
			if _, dup := x.byURI[e.URI]; dup {
				e.Problem = "the listing has more than one entry with this uri"
				x.byURI[e.URI].Problem = e.Problem
			} else {
				x.byURI[e.URI] = &e
			}
		}
		x.ordered = append(x.ordered, &e)
	}
	return x
}

// SkillList is a server's listing, checked, with pin states.
type SkillList struct {
	Skills   []contracts.SkillInfo
	Complete bool
	Problem  string
}

// info renders an entry for the wire, with its pin state.
func (s *Supervisor) skillInfo(e *skillEntry, pins map[string]SkillPin) contracts.SkillInfo {
	out := contracts.SkillInfo{URI: e.URI, Name: contracts.SafeText(s.redact(e.Name), contracts.Exact, 200),
		Description: contracts.SafeText(s.redact(e.Description), contracts.Lines, 4000),
		Frontmatter: e.Frontmatter, Files: e.Files, Dynamic: e.Dynamic, Bytes: e.Bytes, Digest: e.Digest}
	if e.Problem != "" {
		out.Problem = s.clean(e.Problem, 1000)
	}
	if p, ok := pins[SkillKey(e.URI)]; ok && e.URI != "" {
		out.LoadedDigest, out.LoadedAt = p.Digest, p.LoadedAt.UTC().Format(time.RFC3339)
		out.Pin = contracts.SkillPinLoaded
		if p.Digest != e.Digest {
			out.Pin = contracts.SkillPinChanged
		}
	}
	return out
}

// skillPins reads a server's skill pins; a store that fails is logged and
// shows every skill as never loaded (which grants nothing: pins only
// inform).
func (s *Supervisor) skillPins(sess *session) map[string]SkillPin {
	if s.opts.SkillPins == nil {
		return nil
	}
	pins, err := s.opts.SkillPins.LoadSkills(sess.cfg.ID)
	if err != nil {
		sess.log.Error().Err(err).Msg("reading skill pins")
		return nil
	}
	return pins
}

// openSkills opens a request of a server's skills: the server must declare
// the Skills extension (and, to read files, resources).
func (s *Supervisor) openSkills(ctx context.Context, id string) (*session, *conn, *Catalog, func(), error) {
	sess, c, cat, release, err := s.open(ctx, id, featureResources)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !c.caps.skills {
		release()
		return nil, nil, nil, nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillsNotOffered,
			"server %q does not offer skills (its capabilities declare no extension %q); nothing was sent", id, contracts.SkillsExtension),
			"its resources may still hold skill files: 'pikoctl mcp resources "+id+"' lists them")
	}
	return sess, c, cat, release, nil
}

// Skills returns a server's skills from its catalog (connecting it first).
func (s *Supervisor) Skills(ctx context.Context, id string) (SkillList, error) {
	sess, _, cat, release, err := s.openSkills(ctx, id)
	if err != nil {
		return SkillList{}, err
	}
	release()
	pins := s.skillPins(sess)
	out := SkillList{Skills: []contracts.SkillInfo{}, Complete: cat.Complete, Problem: cat.Problem}
	for _, e := range cat.offers().skills.ordered {
		out.Skills = append(out.Skills, s.skillInfo(e, pins))
	}
	return out, nil
}

// skillRequest is one request about one skill: the open session and
// connection, the entry the listing has for it (nil when it has none) and
// the URI of its SKILL.md. release ends the request.
type skillRequest struct {
	sess    *session
	c       *conn
	listed  *skillEntry
	uri     string
	release func()
}

// openSkill opens a request of server's skill ref: openSkills, then
// resolveSkill.
func (s *Supervisor) openSkill(ctx context.Context, server, ref string) (*skillRequest, error) {
	sess, c, cat, release, err := s.openSkills(ctx, server)
	if err != nil {
		return nil, err
	}
	listed, uri, err := s.resolveSkill(server, ref, cat)
	if err != nil {
		release()
		return nil, err
	}
	return &skillRequest{sess: sess, c: c, listed: listed, uri: uri, release: release}, nil
}

// resolveSkill finds the listed entry ref names: a SKILL.md URI, or a name
// exactly one entry has. A URI the listing does not have is not an error
// (nil entry, the URI): the listing may be partial, and skills/get answers
// for every skill the server serves.
func (s *Supervisor) resolveSkill(server, ref string, cat *Catalog) (*skillEntry, string, error) {
	if ref == "" {
		return nil, "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingSkill,
			`missing "skill": name one of the server's skills (its name, or the URI of its SKILL.md)`)
	}
	x := cat.offers().skills
	if e, ok := x.byURI[ref]; ok {
		return e, ref, nil
	}
	if strings.Contains(ref, "://") {
		if err := checkURI(ref); err != nil {
			return nil, "", err
		}
		if !strings.HasSuffix(ref, "/"+skillFileName) {
			return nil, "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidSkill,
				"%s is not the URI of a SKILL.md: a skill is named by its SKILL.md's URI (or by its name)", s.quote(ref))
		}
		return nil, ref, nil
	}
	var matches []*skillEntry
	var names []string
	for _, e := range x.ordered {
		if e.Name == ref && e.URI != "" {
			matches = append(matches, e)
		}
		if e.Name != "" {
			names = append(names, e.Name)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], matches[0].URI, nil
	case 0:
		msg := fmt.Sprintf("server %q lists no skill named %s", server, s.quote(ref))
		if !cat.Complete {
			msg += "; its catalog is incomplete (" + s.clean(cat.Problem, 300) + ")"
		}
		hint := "list its skills with 'pikoctl mcp skills " + server + "', or name a skill by the URI of its SKILL.md"
		slices.Sort(names)
		if close := closeNames(ref, slices.Compact(names), 5); len(close) > 0 {
			quoted := make([]string, len(close))
			for i, n := range close {
				quoted[i] = s.quote(n)
			}
			hint = "did you mean " + strings.Join(quoted, ", ") + "? " + hint
		}
		return nil, "", contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownSkill, "%s; nothing was sent", msg), hint)
	}
	uris := make([]string, len(matches))
	for i, e := range matches {
		uris[i] = s.quote(e.URI)
	}
	return nil, "", contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAmbiguousSkill,
		"server %q lists %d skills named %s (%s); nothing was sent", server, len(matches), s.quote(ref), strings.Join(uris, ", ")),
		"name the skill by the URI of its SKILL.md")
}

// getSkill sends skills/get for uri and checks the entry it answers.
func (s *Supervisor) getSkill(ctx context.Context, sess *session, c *conn, uri string) (*skillEntry, error) {
	params, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return nil, err
	}
	raw, err := s.ask(ctx, sess, c, methodSkillsGet, params, "skills/get "+s.quote(uri))
	if err != nil {
		return nil, err
	}
	var res struct {
		Skill json.RawMessage `json:"skill"`
	}
	if json.Unmarshal(raw, &res) != nil || len(res.Skill) == 0 {
		return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, `the server's answer to skills/get is not {"skill": {...}}`)
	}
	e := parseSkillEntry(res.Skill)
	if e.URI != uri {
		return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult,
			"the server answered skills/get for %s with the entry of %s", s.quote(uri), s.quote(e.URI))
	}
	return &e, nil
}

// SkillLookup is the entry skills/get answered for one skill, and whether
// the listing has it (and differs).
type SkillLookup struct {
	Skill           contracts.SkillInfo
	Listed, Differs bool
}

// GetSkill sends skills/get for the skill ref names.
func (s *Supervisor) GetSkill(ctx context.Context, server, ref string) (*SkillLookup, error) {
	r, err := s.openSkill(ctx, server, ref)
	if err != nil {
		return nil, err
	}
	defer r.release()
	sess, c, listed, uri := r.sess, r.c, r.listed, r.uri
	e, err := s.getSkill(ctx, sess, c, uri)
	if err != nil {
		return nil, err
	}
	out := &SkillLookup{Skill: s.skillInfo(e, s.skillPins(sess)), Listed: listed != nil}
	if listed != nil {
		out.Differs = listed.Digest != e.Digest || !bytes.Equal(contracts.CanonicalJSON(listed.Frontmatter), contracts.CanonicalJSON(e.Frontmatter))
	}
	return out, nil
}

// SkillOutcome is a verified file of a skill.
type SkillOutcome struct {
	// Skill is the entry the file was verified against; File the file.
	Skill contracts.SkillInfo
	File  contracts.SkillFile
	// Result is the raw ReadResourceResult exactly as received; Data the
	// file's bytes, verified; MimeType the server's. Blob says the server
	// sent the bytes as a blob (base64), not as text.
	Result   json.RawMessage
	Data     []byte
	MimeType string
	Blob     bool
	// Verified names the checks Data passed.
	Verified []string
}

// LoadSkill loads the skill ref names: its entry (listed, or from
// skills/get), then its SKILL.md, which must have the entry's size and
// digest and a frontmatter identical to the entry's. The first check that
// fails refuses the skill, and nothing else of it is read; one that passes
// all of them is held (its supporting files may be read) and pinned.
func (s *Supervisor) LoadSkill(ctx context.Context, server, ref string) (*SkillOutcome, error) {
	r, err := s.openSkill(ctx, server, ref)
	if err != nil {
		return nil, err
	}
	defer r.release()
	sess, c, e, uri := r.sess, r.c, r.listed, r.uri
	if e == nil {
		if e, err = s.getSkill(ctx, sess, c, uri); err != nil {
			return nil, err
		}
	}
	if e.Problem != "" {
		uri, problem := s.quote(e.URI), s.clean(e.Problem, 500)
		var err error
		switch {
		case e.Dynamic:
			err = contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillDynamic, "skill %s of server %q cannot be loaded: %s; nothing of it was read", uri, server, problem)
		case e.tooLarge:
			err = contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillTooLarge, "skill %s of server %q cannot be loaded: %s; nothing of it was read", uri, server, problem)
		default:
			err = contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonInvalidSkillEntry, "skill %s of server %q cannot be loaded: %s; nothing of it was read", uri, server, problem)
		}
		return nil, contracts.WithHint(err, "the entry is the server's: tell its maintainer")
	}
	if !c.caps.resources {
		return nil, sess.notOffered("the resources a skill's files are read from", "resources", contracts.ReasonResourcesNotOffered)
	}
	file, _ := e.file(e.URI)
	out, err := s.readSkillFile(ctx, sess, c, e, file)
	if err != nil {
		return nil, err
	}
	var detail string
	if fm, perr := parseFrontmatter(out.Data); perr != nil {
		detail = "has a frontmatter pikod cannot read (" + s.clean(perr.Error(), 300) + "), so it cannot be compared with the entry's"
	} else if diffs := frontmatterDiff(fm, e.Frontmatter, 5); len(diffs) > 0 {
		for i := range diffs {
			diffs[i] = s.clean(diffs[i], 400)
		}
		detail = "has a frontmatter that is not the entry's: " + strings.Join(diffs, "; ")
	}
	if detail != "" {
		subject, rest := s.skillRefusal(server, e, file)
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrUpstream, contracts.ReasonSkillFrontmatterMismatch,
			"%s failed the frontmatter check: SKILL.md %s; %s", subject, detail, rest), mismatchHint)
	}
	out.Verified = append(out.Verified, "frontmatter")
	pin := SkillPin{Key: SkillKey(e.URI), URI: e.URI, Name: e.Name, Digest: e.Digest, LoadedAt: time.Now().UTC()}
	sess.held.put(e)
	if store := s.opts.SkillPins; store != nil {
		if err := store.PinSkill(server, pin); err != nil {
			sess.log.Error().Err(err).Str("skill", s.clip(e.URI, 200)).Msg("pinning a loaded skill")
		}
	}
	out.Skill = s.skillInfo(e, map[string]SkillPin{pin.Key: pin})
	sess.log.Info().Str("skill", s.clip(e.URI, 200)).Str("digest", e.Digest).Msg("skill loaded")
	return out, nil
}

// ReadSkillFile reads one supporting file of a loaded skill: the file must
// be one the entry the skill was loaded from lists, and must have that
// entry's size and digest. A skill whose listed entry changed since it was
// loaded must be loaded again first.
func (s *Supervisor) ReadSkillFile(ctx context.Context, server, ref, name string) (*SkillOutcome, error) {
	if name == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingFile,
			`missing "file": name one of the skill's files (its path, like references/GUIDE.md, or its URI)`)
	}
	r, err := s.openSkill(ctx, server, ref)
	if err != nil {
		return nil, err
	}
	defer r.release()
	sess, c, listed, uri := r.sess, r.c, r.listed, r.uri
	held := sess.held.get(uri)
	loadHint := "load it with 'pikoctl mcp skill " + server + " " + uri + "' (which verifies its SKILL.md), then read the file"
	switch {
	case held != nil && listed != nil && listed.Digest != held.Digest:
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillChanged,
			"skill %s of server %q changed since it was loaded (its files or their digests differ from the entry it was loaded from); nothing was read",
			s.quote(uri), server), loadHint)
	case held == nil && listed != nil && listed.Problem == "":
		// Loaded before this session (a restart): the pin says whether
		// the listed entry is the one loaded.
		if p, ok := s.skillPins(sess)[SkillKey(uri)]; ok && p.Digest == listed.Digest {
			held = listed
		}
	}
	if held == nil {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillNotLoaded,
			"skill %s of server %q is not loaded (or changed since it was); its files are read only for a loaded skill; nothing was read",
			s.quote(uri), server), loadHint)
	}
	fileURI := name
	if !strings.Contains(name, "://") {
		fileURI = held.root() + "/" + strings.TrimPrefix(name, "./")
	}
	file, ok := held.file(fileURI)
	if !ok {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSkillFileUnlisted,
			"skill %s of server %q lists no file %s: a file its entry does not list is a verification failure, not a file of the skill; nothing was read",
			s.quote(uri), server, s.quote(fileURI)),
			"its files are in 'pikoctl mcp skills "+server+"'; if the server added one since, load the skill again to see it")
	}
	if !c.caps.resources {
		return nil, sess.notOffered("the resources a skill's files are read from", "resources", contracts.ReasonResourcesNotOffered)
	}
	out, err := s.readSkillFile(ctx, sess, c, held, file)
	if err != nil {
		return nil, err
	}
	out.Skill = s.skillInfo(held, s.skillPins(sess))
	return out, nil
}

// readSkillFile sends resources/read for one file of a skill and checks its
// bytes against the file's entry: size first, then digest.
func (s *Supervisor) readSkillFile(ctx context.Context, sess *session, c *conn, e *skillEntry, f contracts.SkillFile) (*SkillOutcome, error) {
	params, err := json.Marshal(map[string]string{"uri": f.URI})
	if err != nil {
		return nil, err
	}
	raw, err := s.ask(ctx, sess, c, string(mcp.MethodResourcesRead), params, "resources/read "+s.quote(f.URI))
	if err != nil {
		return nil, err
	}
	data, mime, blob, err := fileBytes(raw, f.URI)
	subject, rest := s.skillRefusal(sess.cfg.ID, e, f)
	name := s.clean(f.Path, 200)
	if err != nil {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrUpstream, contracts.ReasonSkillUnreadable,
			"%s: the answer to resources/read of %s is not the file (%s); %s", subject, name, s.clean(err.Error(), 300), rest),
			"the server's answer is not a read of the file: tell its maintainer")
	}
	if int64(len(data)) != f.Size {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrUpstream, contracts.ReasonSkillSizeMismatch,
			"%s failed the size check: %s is %d bytes, and its entry says %d; %s", subject, name, len(data), f.Size, rest), mismatchHint)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != f.Digest {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrUpstream, contracts.ReasonSkillDigestMismatch,
			"%s failed the digest check: %s has the SHA-256 %s, and its entry says %s; %s", subject, name, got, f.Digest, rest), mismatchHint)
	}
	return &SkillOutcome{File: f, Result: raw, Data: data, MimeType: mime, Blob: blob, Verified: []string{"size", "digest"}}, nil
}

// skillRefusal names what a failed check refuses (a skill, or one of its
// files, of server) and says what becomes of the rest.
func (s *Supervisor) skillRefusal(server string, e *skillEntry, f contracts.SkillFile) (subject, rest string) {
	if f.URI != e.URI {
		return fmt.Sprintf("file %s of skill %s of server %q", s.quote(f.Path), s.quote(e.URI), server), "the file is refused (nothing of it is used)"
	}
	return fmt.Sprintf("skill %s of server %q", s.quote(e.URI), server), "the skill is refused, and none of its other files was read"
}

// mismatchHint is what to do about a skill file that fails a check.
const mismatchHint = "the server's entry and its file disagree (tampered, corrupted, or changed since it was listed): a later listing may agree; otherwise tell the server's maintainer"

// fileBytes returns the bytes of the contents for uri in a
// ReadResourceResult: its text (UTF-8) or its blob (base64). Exactly one
// element must be for uri; blob says which it was.
func fileBytes(raw json.RawMessage, uri string) (data []byte, mime string, blob bool, err error) {
	var res struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, "", false, fmt.Errorf("the answer is not a ReadResourceResult")
	}
	found := -1
	for i, c := range res.Contents {
		if c.URI == uri {
			if found >= 0 {
				return nil, "", false, fmt.Errorf("it holds more than one element for the file")
			}
			found = i
		}
	}
	if found < 0 {
		return nil, "", false, fmt.Errorf("none of its %d elements is for the file", len(res.Contents))
	}
	c := res.Contents[found]
	switch {
	case c.Text != nil && c.Blob == nil:
		return []byte(*c.Text), c.MimeType, false, nil
	case c.Blob != nil && c.Text == nil:
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		if err != nil {
			return nil, "", false, fmt.Errorf("its blob is not valid base64")
		}
		return b, c.MimeType, true, nil
	}
	return nil, "", false, fmt.Errorf("its element for the file has not exactly one of text and blob")
}

// heldSkills keeps the entries of the skills a session loaded, so their
// supporting files are read against the entry a load verified, not a later
// one.
type heldSkills struct {
	// mu guards the fields that follow.
	mu    sync.Mutex
	byURI map[string]*skillEntry
	order []string
}

func (h *heldSkills) put(e *skillEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byURI == nil {
		h.byURI = map[string]*skillEntry{}
	}
	if _, ok := h.byURI[e.URI]; ok {
		h.order = slices.DeleteFunc(h.order, func(u string) bool { return u == e.URI })
	}
	h.byURI[e.URI] = e
	h.order = append(h.order, e.URI)
	for len(h.order) > maxHeldSkills {
		delete(h.byURI, h.order[0])
		h.order = h.order[1:]
	}
}

func (h *heldSkills) get(uri string) *skillEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byURI[uri]
}

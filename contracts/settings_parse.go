package contracts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxProblems bounds the list one rejected input produces, so a hostile
// settings file cannot turn into a huge error reply.
const maxProblems = 100

// maxJSONDepth bounds nesting while reading settings. The schema is at most
// four levels deep; the limit only keeps a hostile input from recursing
// without end.
const maxJSONDepth = 32

// ParseMCPSettings decodes the mcp settings object strictly and validates it.
// Unlike json.Unmarshal it keeps going after the first mistake: unknown or
// repeated properties, wrong types and every rule Validate checks are all
// returned together as Problems (an ErrInvalidArgument), each naming the
// server and the field. Keys match exactly, not case-insensitively.
func ParseMCPSettings(raw []byte) (*MCPSettings, error) {
	root, err := readJSON(raw)
	if err != nil {
		return nil, Problems{{Message: err.Error()}}
	}
	w := &walker{}
	s := w.settings(root)
	if s == nil {
		return nil, w.result(nil)
	}
	if err := w.result(s.validate()); err != nil {
		return nil, err
	}
	return s, nil
}

// Canonical returns s as compact JSON with fields in struct order and map
// keys sorted: the same settings always give the same bytes, and
// ParseMCPSettings reads them back to an equal value.
func (s *MCPSettings) Canonical() []byte {
	c := MCPSettings{Servers: []ServerSettings{}}
	if s != nil {
		for i := range s.Servers {
			c.Servers = append(c.Servers, s.Servers[i].canonical())
		}
		c.Retention = s.Retention
	}
	return marshalCanonical(c)
}

// Digest returns the hex SHA-256 of the server entry's canonical JSON. It
// changes whenever any setting of the server changes, so approvals bind to
// it and a saved configuration uses it to find the servers it changed.
func (s *ServerSettings) Digest() string {
	sum := sha256.Sum256(marshalCanonical(s.canonical()))
	return hex.EncodeToString(sum[:])
}

// ConnectionDigest is the digest of what decides how the server is started
// or reached and what pikod declared to it: every setting but its roots and
// the policy pikod itself enforces (tools, readOnlyTools, autonomousTools,
// timeoutMs). A saved change that keeps it keeps the live connection: the
// policy applies at once, without restarting the server.
func (s *ServerSettings) ConnectionDigest() string {
	c := s.canonical()
	c.Roots = nil
	c.clearPolicy()
	sum := sha256.Sum256(marshalCanonical(c))
	return hex.EncodeToString(sum[:])
}

// ApprovalDigest is the settings fingerprint an approval of a call of tool
// binds to: every setting but pikod's live policy, and whether tool is
// still selected. Granting or revoking other tools, granting this one, or
// a new timeout keeps the prepared actions; deselecting the tool, or any
// change to how the server is started or reached, what it was declared or
// its roots, makes them stale.
func (s *ServerSettings) ApprovalDigest(tool string) string {
	c := s.canonical()
	selected := c.Tools == nil || slices.Contains(*c.Tools, tool)
	c.clearPolicy()
	sum := sha256.Sum256(marshalCanonical(struct {
		Settings ServerSettings `json:"settings"`
		Selected bool           `json:"selected"`
	}{c, selected}))
	return hex.EncodeToString(sum[:])
}

// clearPolicy zeroes the settings pikod applies to a live connection.
func (s *ServerSettings) clearPolicy() {
	s.Tools, s.ReadOnlyTools, s.AutonomousTools, s.TimeoutMs = nil, nil, nil, 0
}

// canonical returns a copy whose JSON form parses back to the same value: an
// explicit empty tools list must stay [] rather than become null.
func (s *ServerSettings) canonical() ServerSettings {
	c := *s
	if c.Tools != nil && *c.Tools == nil {
		empty := []string{}
		c.Tools = &empty
	}
	return c
}

func marshalCanonical(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Settings hold only strings, numbers, booleans and Protocol,
		// whose MarshalJSON cannot fail.
		panic("contracts: encoding settings: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// jsonKind is the type of one decoded JSON value.
type jsonKind int

const (
	kindNull jsonKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k jsonKind) String() string {
	return [...]string{"null", "boolean", "number", "string", "list", "object"}[k]
}

// jsonValue is a generic decode that, unlike map[string]any, keeps object
// members in order and keeps repeated keys, so both can be reported.
type jsonValue struct {
	kind    jsonKind
	boolean bool
	number  json.Number
	str     string
	elems   []*jsonValue
	members []jsonMember
}

type jsonMember struct {
	key   string
	value *jsonValue
}

// readJSON decodes exactly one JSON value from raw.
func readJSON(raw []byte) (*jsonValue, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("settings are empty: give a JSON object such as {\"servers\": []}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, jsonError(raw, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("settings are not valid JSON: unexpected data after the top-level value at byte %d: give exactly one object", dec.InputOffset())
	}
	return v, nil
}

// jsonError describes a syntax error by position only (line, column and
// byte): the offending text may be part of a secret.
func jsonError(raw []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, errTooDeep):
		return fmt.Errorf("settings are %w: flatten them", errTooDeep)
	case errors.As(err, &se):
		pos := min(max(int(se.Offset)-1, 0), len(raw))
		line := 1 + bytes.Count(raw[:pos], []byte("\n"))
		col := 1 + utf8.RuneCount(raw[bytes.LastIndexByte(raw[:pos], '\n')+1:pos])
		return fmt.Errorf("settings are not valid JSON: syntax error at line %d, column %d (byte %d): fix the JSON", line, col, se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("settings are not valid JSON: the input ends too early: close every object, list and string")
	}
	return fmt.Errorf("settings are not valid JSON at byte %d: %w", dec.InputOffset(), err)
}

var errTooDeep = fmt.Errorf("nested more than %d levels deep", maxJSONDepth)

func readValue(dec *json.Decoder, depth int) (*jsonValue, error) {
	if depth > maxJSONDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &jsonValue{kind: kindNull}, nil
	case bool:
		return &jsonValue{kind: kindBool, boolean: t}, nil
	case json.Number:
		return &jsonValue{kind: kindNumber, number: t}, nil
	case string:
		return &jsonValue{kind: kindString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &jsonValue{kind: kindArray}
			for dec.More() {
				e, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
			_, err := dec.Token()
			return v, err
		case '{':
			v := &jsonValue{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				e, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, jsonMember{key, e})
			}
			_, err := dec.Token()
			return v, err
		}
	}
	return nil, fmt.Errorf("unexpected token %T", tok)
}

// indexedProblem is a Problem with the position of its server (-1 for
// problems outside any server), used to order and de-duplicate the list.
type indexedProblem struct {
	index int
	Problem
	// covers marks decode problems (wrong type, out of range) after which
	// Validate's findings on the same field or below it would only repeat
	// the same mistake.
	covers bool
}

// walker turns a jsonValue into MCPSettings, recording every problem.
type walker struct {
	probs []indexedProblem
	index int
	label string
}

func (w *walker) add(field, format string, args ...any) {
	w.probs = append(w.probs, indexedProblem{index: w.index, Problem: Problem{Server: w.label, Field: field, Message: fmt.Sprintf(format, args...)}})
}

// typeErr records a value of the wrong type at field.
func (w *walker) typeErr(field string, v *jsonValue, want string) {
	switch {
	case v.kind != kindNull:
		w.add(field, "must be %s, not a %s", want, v.kind)
	case field == "servers" || field == "id" || field == "transport" || strings.HasSuffix(field, ".uri"):
		w.add(field, "must be %s, not null", want)
	default:
		w.add(field, "must be %s, not null: omit the property to use its default", want)
	}
	w.probs[len(w.probs)-1].covers = true
}

// result merges decode problems with Validate's, dropping what a decode
// problem already covers, and orders them by server.
func (w *walker) result(validated []indexedProblem) error {
	covering := make(map[int][]string)
	for _, p := range w.probs {
		if p.covers {
			covering[p.index] = append(covering[p.index], p.Field)
		}
	}
	all := w.probs
	for _, v := range validated {
		if !covered(covering[v.index], v.Field) {
			all = append(all, v)
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].index < all[j].index })
	out := make(Problems, 0, min(len(all), maxProblems+1))
	for i, p := range all {
		if i == maxProblems {
			out = append(out, Problem{Message: fmt.Sprintf("%d more problems not shown: fix the ones above first", len(all)-maxProblems)})
			break
		}
		out = append(out, p.Problem)
	}
	return out
}

// covered reports whether field is one of fields or lies below one.
func covered(fields []string, field string) bool {
	for _, f := range fields {
		if f == "" || field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[") {
			return true
		}
	}
	return false
}

// members iterates an object's members once per key, reporting repeated
// keys. path is the object's own path ("" for the top level).
func (w *walker) members(obj *jsonValue, path string, fn func(key, field string, v *jsonValue)) {
	seen := make(map[string]bool, len(obj.members))
	for i, m := range obj.members {
		field := joinPath(path, keyLabel(m.key, i))
		if seen[m.key] {
			w.add(field, "property appears more than once: keep one")
			continue
		}
		seen[m.key] = true
		fn(m.key, field, m.value)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	if strings.HasPrefix(key, "[") {
		return path + key
	}
	return path + "." + key
}

// keyLabel names an object key in a field path. A key that is not a plain
// name, or that could itself be a credential, is named by its position so
// its text never reaches an error message.
func keyLabel(key string, pos int) string {
	if plainKey(key) {
		return key
	}
	return "[#" + strconv.Itoa(pos) + "]"
}

func plainKey(key string) bool {
	if key == "" || len(key) > 64 || looksLikeCredential(key) {
		return false
	}
	for _, r := range key {
		if r <= ' ' || r > '~' || r == '.' || r == '[' || r == ']' {
			return false
		}
	}
	return true
}

// sortedKeyLabels labels map keys for Validate, which sees a Go map without
// the input order: odd keys are numbered in sorted order.
func sortedKeyLabels[V any](m map[string]V) ([]string, map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	labels := make(map[string]string, len(keys))
	for i, k := range keys {
		labels[k] = keyLabel(k, i)
	}
	return keys, labels
}

// unknown reports a property the schema does not have.
func (w *walker) unknown(key, field string) {
	msg := "unknown property: remove it"
	if looksSecretName(key) {
		msg = fmt.Sprintf("unknown property: credentials do not belong in settings; store them with %q", secretCommand(w.label))
	}
	w.add(field, "%s", msg)
}

// unknownOf reports key, suggesting the known property it differs from only
// in case.
func (w *walker) unknownOf(key, field string, known []string) {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			w.add(field, "unknown property: property names are case-sensitive; did you mean %q?", k)
			return
		}
	}
	w.unknown(key, field)
}

var topLevelKeys = []string{"servers", "retention"}

func (w *walker) settings(root *jsonValue) *MCPSettings {
	w.index = -1
	if root.kind != kindObject {
		what := "a " + root.kind.String()
		if root.kind == kindNull {
			what = "null"
		}
		w.add("", "settings must be a JSON object like {\"servers\": []}, not %s", what)
		return nil
	}
	s := &MCPSettings{}
	found := false
	w.members(root, "", func(key, field string, v *jsonValue) {
		if key == "mcpServers" {
			// Claude Desktop's and Cursor's file, given to configure.
			w.add(field, "unknown property: mcpServers is the Claude Desktop and Cursor format: add those servers with 'pikoctl mcp import FILE'")
			return
		}
		if key == "retention" {
			s.Retention = w.retention(v)
			return
		}
		if key != "servers" {
			w.unknownOf(key, field, topLevelKeys)
			return
		}
		found = true
		if v.kind != kindArray {
			w.typeErr("servers", v, "a list of server objects (it may be empty)")
			return
		}
		elems := v.elems
		if len(elems) > MaxServers {
			// The entries past the limit must go anyway; checking them
			// would only let a hostile input cost more.
			w.add("servers", "%d servers configured; at most %d are allowed: remove some", len(elems), MaxServers)
			elems = elems[:MaxServers]
		}
		s.Servers = make([]ServerSettings, 0, len(elems))
		for i, e := range elems {
			s.Servers = append(s.Servers, w.server(e, i))
			w.index, w.label = -1, ""
		}
	})
	if !found {
		w.add("servers", "required: give the list of servers (it may be empty)")
		return nil
	}
	if s.Servers == nil {
		return nil
	}
	return s
}

var serverKeys = []string{
	"id", "enabled", "transport", "command", "args", "cwd", "env", "url",
	"headers", "allowPrivateNetwork", "oauth", "tools", "readOnlyTools",
	"autonomousTools", "resources", "prompts", "roots", "sampling",
	"elicitation", "timeoutMs", "maxBytes", "artifactDirectory", "protocol",
	"browser", "tlsPin",
}

func (w *walker) server(v *jsonValue, i int) ServerSettings {
	w.index = i
	w.label = "servers[" + strconv.Itoa(i) + "]"
	var s ServerSettings
	if v.kind != kindObject {
		w.typeErr("", v, "a server object")
		return s
	}
	for _, m := range v.members {
		if m.key == "id" {
			if m.value.kind == kindString && validServerID(m.value.str) {
				w.label = m.value.str
			}
			break
		}
	}
	w.members(v, "", func(key, field string, val *jsonValue) {
		switch key {
		case "id":
			s.ID = w.str(field, val)
		case "enabled":
			s.Enabled = w.boolPtr(field, val)
		case "transport":
			s.Transport = w.str(field, val)
		case "command":
			s.Command = w.str(field, val)
		case "args":
			s.Args = w.strList(field, val)
		case "cwd":
			s.Cwd = w.str(field, val)
		case "env":
			s.Env = w.strMap(field, val)
		case "url":
			s.URL = w.str(field, val)
		case "headers":
			s.Headers = w.strMap(field, val)
		case "allowPrivateNetwork":
			s.AllowPrivateNetwork = w.bool(field, val)
		case "oauth":
			s.OAuth = w.oauth(field, val)
		case "tools":
			if val.kind != kindArray {
				w.typeErr(field, val, "a list of tool names")
				return
			}
			list := w.strList(field, val)
			if list == nil {
				list = []string{}
			}
			s.Tools = &list
		case "readOnlyTools":
			s.ReadOnlyTools = w.strList(field, val)
		case "autonomousTools":
			s.AutonomousTools = w.strList(field, val)
		case "resources":
			s.Resources = w.boolPtr(field, val)
		case "prompts":
			s.Prompts = w.boolPtr(field, val)
		case "roots":
			s.Roots = w.roots(field, val)
		case "sampling":
			s.Sampling = w.bool(field, val)
		case "elicitation":
			s.Elicitation = w.bool(field, val)
		case "timeoutMs":
			s.TimeoutMs = w.int(field, val, MinTimeoutMs, MaxTimeoutMs, timeoutMsRange)
		case "maxBytes":
			s.MaxBytes = w.int(field, val, MinMaxBytes, MaxMaxBytes, maxBytesRange)
		case "artifactDirectory":
			s.ArtifactDirectory = w.str(field, val)
		case "protocol":
			s.Protocol = w.protocol(field, val)
		case "browser":
			s.Browser = w.browser(field, val)
		case "tlsPin":
			s.TLSPin = w.str(field, val)
		default:
			w.unknownOf(key, field, serverKeys)
		}
	})
	return s
}

func (w *walker) str(field string, v *jsonValue) string {
	if v.kind != kindString {
		w.typeErr(field, v, "a string")
		return ""
	}
	return v.str
}

func (w *walker) bool(field string, v *jsonValue) bool {
	if v.kind != kindBool {
		w.typeErr(field, v, "true or false")
		return false
	}
	return v.boolean
}

func (w *walker) boolPtr(field string, v *jsonValue) *bool {
	if v.kind != kindBool {
		w.typeErr(field, v, "true or false")
		return nil
	}
	b := v.boolean
	return &b
}

// int reads a whole number. Unlike Validate it sees an explicit 0, which is
// out of range like any other value: omit the property for the default.
func (w *walker) int(field string, v *jsonValue, lo, hi int, rangeMsg string) int {
	if v.kind != kindNumber {
		w.typeErr(field, v, "a whole number")
		return 0
	}
	n, err := strconv.ParseInt(string(v.number), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			w.add(field, "%s", rangeMsg)
		} else {
			w.add(field, "must be a whole number without fraction or exponent")
		}
		w.probs[len(w.probs)-1].covers = true
		return 0
	}
	if n < int64(lo) || n > int64(hi) {
		w.add(field, "%s", rangeMsg)
		w.probs[len(w.probs)-1].covers = true
		return 0
	}
	return int(n)
}

// strList reads a list of strings. An element of the wrong type keeps its
// place as "" so later positions stay right. An empty list reads as nil,
// which is what it means for every list but tools.
func (w *walker) strList(field string, v *jsonValue) []string {
	if v.kind != kindArray {
		w.typeErr(field, v, "a list of strings")
		return nil
	}
	if len(v.elems) == 0 {
		return nil
	}
	out := make([]string, len(v.elems))
	for i, e := range v.elems {
		out[i] = w.str(field+"["+strconv.Itoa(i)+"]", e)
	}
	return out
}

// strMap reads an object of strings; an empty object reads as nil.
func (w *walker) strMap(field string, v *jsonValue) map[string]string {
	if v.kind != kindObject {
		w.typeErr(field, v, "an object of strings")
		return nil
	}
	if len(v.members) == 0 {
		return nil
	}
	// Label keys as Validate will (sorted order), so both name a key alike.
	_, labels := sortedKeyLabels(memberSet(v))
	out := make(map[string]string, len(v.members))
	seen := make(map[string]bool, len(v.members))
	for _, m := range v.members {
		f := joinPath(field, labels[m.key])
		if seen[m.key] {
			w.add(f, "property appears more than once: keep one")
			continue
		}
		seen[m.key] = true
		out[m.key] = w.str(f, m.value)
	}
	return out
}

func memberSet(v *jsonValue) map[string]struct{} {
	m := make(map[string]struct{}, len(v.members))
	for _, e := range v.members {
		m[e.key] = struct{}{}
	}
	return m
}

var (
	retentionKeys = []string{"receipts", "sources", "actions"}
	boundsKeys    = []string{"maxAge", "maxCount", "maxBytes"}
)

// retention reads the retention object; Validate checks its values.
func (w *walker) retention(v *jsonValue) *RetentionSettings {
	if v.kind != kindObject {
		w.typeErr("retention", v, `an object like {"receipts": {"maxAge": "180d"}}`)
		return nil
	}
	r := &RetentionSettings{}
	w.members(v, "retention", func(key, f string, v *jsonValue) {
		var dst **RetentionBounds
		switch key {
		case "receipts":
			dst = &r.Receipts
		case "sources":
			dst = &r.Sources
		case "actions":
			dst = &r.Actions
		default:
			w.unknownOf(key, f, retentionKeys)
			return
		}
		if v.kind != kindObject {
			w.typeErr(f, v, `an object like {"maxAge": "30d"}`)
			return
		}
		b := &RetentionBounds{}
		w.members(v, f, func(key, f string, v *jsonValue) {
			switch key {
			case "maxAge":
				b.MaxAge = w.str(f, v)
			case "maxBytes":
				if v.kind == kindNumber {
					b.MaxBytes = string(v.number)
				} else {
					b.MaxBytes = w.str(f, v)
				}
			case "maxCount":
				b.MaxCount = int64(w.int(f, v, 1, 1<<31, "must be 1 to 2147483648 (omit it for no limit)"))
			default:
				w.unknownOf(key, f, boundsKeys)
			}
		})
		*dst = b
	})
	return r
}

var oauthKeys = []string{"clientId", "issuer", "grantType", "callbackPort", "scope", "clientMetadataUrl",
	"tokenEndpointAuthMethod", "idpTokenEndpoint", "idpClientId", "assertionFile", "dpop"}

func (w *walker) oauth(field string, v *jsonValue) *OAuthSettings {
	if v.kind != kindObject {
		w.typeErr(field, v, "an object (use {} for discovery and dynamic registration)")
		return nil
	}
	o := &OAuthSettings{}
	w.members(v, field, func(key, f string, v *jsonValue) {
		switch key {
		case "clientId":
			o.ClientID = w.str(f, v)
		case "issuer":
			o.Issuer = w.str(f, v)
		case "grantType":
			o.GrantType = w.str(f, v)
		case "callbackPort":
			o.CallbackPort = w.int(f, v, 1024, 65535, callbackPortRange)
		case "scope":
			o.Scope = w.str(f, v)
		case "clientMetadataUrl":
			o.ClientMetadataURL = w.str(f, v)
		case "tokenEndpointAuthMethod":
			o.TokenEndpointAuthMethod = w.str(f, v)
		case "idpTokenEndpoint":
			o.IdPTokenEndpoint = w.str(f, v)
		case "idpClientId":
			o.IdPClientID = w.str(f, v)
		case "assertionFile":
			o.AssertionFile = w.str(f, v)
		case "dpop":
			o.DPoP = w.dpop(f, v)
		default:
			w.unknownOf(key, f, oauthKeys)
		}
	})
	return o
}

var browserKeys = []string{"preset"}

// browser reads the browser object of a server.
func (w *walker) browser(field string, v *jsonValue) *BrowserSettings {
	if v.kind != kindObject {
		w.typeErr(field, v, `an object such as {"preset": "playwright"}`)
		return nil
	}
	b := &BrowserSettings{}
	w.members(v, field, func(key, f string, v *jsonValue) {
		switch key {
		case "preset":
			b.Preset = w.str(f, v)
		default:
			w.unknownOf(key, f, browserKeys)
		}
	})
	return b
}

// dpop reads true, false or "auto".
func (w *walker) dpop(field string, v *jsonValue) DPoPMode {
	switch {
	case v.kind == kindBool && v.boolean:
		return DPoPOn
	case v.kind == kindBool:
		return DPoPOff
	case v.kind == kindString && v.str == string(DPoPAuto):
		return DPoPAuto
	case v.kind == kindString && (v.str == "true" || v.str == "false"):
		w.add(field, "must be the boolean %s, not the string %q", v.str, v.str)
		return ""
	case v.kind == kindString:
		w.add(field, `must be true, false or "auto", not %q`, SafeText(v.str, OneLine, 40))
		return ""
	}
	w.typeErr(field, v, `true, false or "auto"`)
	return ""
}

func (w *walker) roots(field string, v *jsonValue) []Root {
	if v.kind != kindArray {
		w.typeErr(field, v, "a list of {\"uri\", \"name\"} objects")
		return nil
	}
	if len(v.elems) == 0 {
		return nil
	}
	out := make([]Root, len(v.elems))
	for i, e := range v.elems {
		f := field + "[" + strconv.Itoa(i) + "]"
		if e.kind != kindObject {
			w.typeErr(f, e, "an object with \"uri\" and optional \"name\"")
			continue
		}
		w.members(e, f, func(key, kf string, v *jsonValue) {
			switch key {
			case "uri":
				out[i].URI = w.str(kf, v)
			case "name":
				out[i].Name = w.str(kf, v)
			default:
				w.unknownOf(key, kf, []string{"uri", "name"})
			}
		})
	}
	return out
}

// protocol reads "legacy", "auto", a bare version or {"pin": VERSION}. On a
// shape problem it returns nil: the problem says it all.
func (w *walker) protocol(field string, v *jsonValue) *Protocol {
	switch v.kind {
	case kindString:
		if v.str == ProtocolLegacy || v.str == ProtocolAuto {
			return &Protocol{Mode: v.str}
		}
		return &Protocol{Pin: v.str}
	case kindObject:
		var p *Protocol
		ok := true
		w.members(v, field, func(key, f string, v *jsonValue) {
			if key != "pin" {
				w.unknownOf(key, f, []string{"pin"})
				ok = false
				return
			}
			if v.kind != kindString {
				w.typeErr(f, v, "a version string such as \""+ProtocolVersions[0]+"\"")
				ok = false
				return
			}
			p = &Protocol{Pin: v.str}
		})
		if p == nil && ok {
			w.add(field, "a protocol object must have \"pin\": a version such as %q", ProtocolVersions[0])
			w.probs[len(w.probs)-1].covers = true
		}
		if !ok {
			return nil
		}
		return p
	}
	w.typeErr(field, v, "\"legacy\", \"auto\" or {\"pin\": VERSION}")
	return nil
}

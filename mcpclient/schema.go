package mcpclient

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pikod/pikod/contracts"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaPrinter renders the validator's messages in English.
var schemaPrinter = message.NewPrinter(language.English)

// SchemaCache compiles JSON Schemas (a tool's inputSchema or outputSchema)
// and keeps the compiled forms, keyed by the SHA-256 of the schema's
// canonical JSON, so formatting alone never causes a second compilation.
// It is bounded (least recently used entries go first) and safe for
// concurrent use.
//
// Schemas are Draft 2020-12 unless their $schema names another draft
// (draft-07 and the others the library knows are honoured). Every
// reference outside the schema document itself is refused: tool schemas
// come from servers, and following file:, http: or any other external ref
// would let a server make pikod read files or reach the network. Local
// refs (#/$defs/..., #/definitions/..., anchors, the document's own $id)
// work. Patterns Go's regexp cannot compile (ECMAScript lookarounds,
// backreferences) are not enforced rather than making the tool
// uncallable; the server still checks its own input.
type SchemaCache struct {
	max int
	// redact removes secret values from messages before they are cut
	// (Options.Redact); nil removes nothing.
	redact func(string) string

	// compiles counts compilations (tests check cache hits with it).
	compiles atomic.Int64

	// mu guards the fields that follow.
	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *schemaEntry, by canonical digest
	lru     *list.List                 // front: most recently used
	// exact maps the digest of a schema's exact bytes to its canonical
	// digest, so a schema seen before is found without canonicalising it.
	exact map[[32]byte][32]byte
}

type schemaEntry struct {
	key [32]byte
	sch *jsonschema.Schema
	err error // a schema that does not compile stays refused
}

// NewSchemaCache returns a cache of at most max compiled schemas (256
// when max <= 0).
func NewSchemaCache(max int) *SchemaCache {
	if max <= 0 {
		max = 256
	}
	return &SchemaCache{max: max, entries: map[[32]byte]*list.Element{}, lru: list.New(), exact: map[[32]byte][32]byte{}}
}

// maxSchemaProblems and maxSchemaMessage bound validation messages.
const (
	maxSchemaProblems = 8
	maxSchemaMessage  = 2000
)

// Validate checks instance (JSON text) against schema. An empty or null
// schema accepts any object. A mismatch is ErrInvalidArgument with reason
// "arguments_invalid" and a message listing the failing locations and
// keywords (never the values); a schema that does not compile is
// ErrFailedPrecondition with reason "tool_schema_invalid".
func (c *SchemaCache) Validate(schema json.RawMessage, instance []byte) error {
	return argumentsError(c.check(schema, instance))
}

// check returns a description of how instance fails schema ("" when it
// matches), or an error when the schema or the instance cannot be read.
func (c *SchemaCache) check(schema []byte, instance []byte) (string, error) {
	sch, err := c.compiled(schema)
	if err != nil {
		return "", err
	}
	return c.checkCompiled(sch, instance)
}

// validateCompiled is Validate with the schema compiled already.
func (c *SchemaCache) validateCompiled(sch *jsonschema.Schema, instance []byte) error {
	return argumentsError(c.checkCompiled(sch, instance))
}

// argumentsError turns a check's outcome into Validate's error: err as it
// is, a problem as arguments_invalid, nil when the arguments match.
func argumentsError(problem string, err error) error {
	if err != nil {
		return err
	}
	if problem != "" {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsInvalid,
			"arguments do not match the tool's input schema: %s", problem)
	}
	return nil
}

func (c *SchemaCache) checkCompiled(sch *jsonschema.Schema, instance []byte) (string, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsInvalidJSON,
			"the value to validate is not JSON: %v", err)
	}
	err = sch.Validate(inst)
	if err == nil {
		return "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return c.clean(err.Error(), maxSchemaMessage), nil
	}
	return c.describeValidation(ve), nil
}

// compiled returns the compiled schema, compiling it on a miss.
func (c *SchemaCache) compiled(schema []byte) (*jsonschema.Schema, error) {
	trimmed := bytes.TrimSpace(schema)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	// Hashing the exact bytes is cheap and canonicalising is not; a server
	// sends the same bytes every time, so the canonical digest is looked up
	// by the exact one first.
	exact := sha256.Sum256(schema)
	c.mu.Lock()
	if key, ok := c.exact[exact]; ok {
		if e, ok := c.hitLocked(key); ok {
			c.mu.Unlock()
			return e.sch, e.err
		}
	}
	c.mu.Unlock()

	canon := canonicalSchemaBytes(schema)
	key := sha256.Sum256(canon)
	c.mu.Lock()
	if len(c.exact) >= 4*c.max {
		clear(c.exact)
	}
	c.exact[exact] = key
	if e, ok := c.hitLocked(key); ok {
		c.mu.Unlock()
		return e.sch, e.err
	}
	c.mu.Unlock()

	// Two callers missing at once both compile; the result is the same.
	sch, err := c.compileSchema(canon, key)
	c.compiles.Add(1)

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*schemaEntry)
		return e.sch, e.err
	}
	c.entries[key] = c.lru.PushFront(&schemaEntry{key: key, sch: sch, err: err})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*schemaEntry).key)
	}
	return sch, err
}

// schemaBase is where a tool's schema lives for reference resolution: a
// host that cannot exist, so a relative ref resolves to a URL that is
// plainly not the document and is refused by the loader.
const schemaBase = "https://schema.pikod.invalid/"

func (c *SchemaCache) compileSchema(schema []byte, key [32]byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, c.schemaInvalid(fmt.Errorf("it is not JSON: %w", err))
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(refusingLoader{})
	comp.UseRegexpEngine(lenientRegexp)
	loc := schemaBase + hex.EncodeToString(key[:8]) + ".json"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, c.schemaInvalid(err)
	}
	sch, err := comp.Compile(loc)
	if err != nil {
		return nil, c.schemaInvalid(err)
	}
	return sch, nil
}

// clean is a message quoting a schema or an instance: redacted, then safe
// for a terminal in one line and cut to max characters.
func (c *SchemaCache) clean(s string, max int) string {
	if c.redact != nil {
		s = c.redact(s)
	}
	return contracts.SafeText(s, contracts.OneLine, max)
}

func (c *SchemaCache) schemaInvalid(err error) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonToolSchemaInvalid,
		"the tool's schema cannot be used: %s", c.clean(err.Error(), maxSchemaMessage)),
		"the server publishes a broken schema; report it to the server's authors")
}

// errExternalRef marks every load the compiler asks for: only the tool's
// own schema document is ever read.
var errExternalRef = errors.New("pikod follows only references inside the tool's own schema")

// refusingLoader is the compiler's URL loader: it refuses everything, so
// neither the file system nor the network is ever touched. (The library's
// meta-schemas are built in and never reach the loader.)
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	// Quoted whole: the compile error is redacted, then cut.
	return nil, fmt.Errorf("external $ref %q is not followed: %w", url, errExternalRef)
}

// lenientRegexp compiles patterns with Go's regexp; a pattern it cannot
// compile (ECMAScript-only syntax) matches everything instead of failing the
// whole schema.
func lenientRegexp(pattern string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return unenforcedPattern(pattern), nil
	}
	return re, nil
}

type unenforcedPattern string

func (p unenforcedPattern) String() string        { return string(p) }
func (unenforcedPattern) MatchString(string) bool { return true }

// describeValidation lists the leaf failures: where in the instance
// (a JSON Pointer) and which keyword failed. Messages that would quote the
// instance's values (pattern, format, bounds) are replaced by ones naming
// only the schema's side.
func (c *SchemaCache) describeValidation(ve *jsonschema.ValidationError) string {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	var parts []string
	for i, e := range leaves {
		if i == maxSchemaProblems {
			parts = append(parts, fmt.Sprintf("and %d more", len(leaves)-i))
			break
		}
		loc := "/" + strings.Join(escapePointer(e.InstanceLocation), "/")
		parts = append(parts, fmt.Sprintf("at %s: %s", c.clean(loc, 200), c.clean(leafMessage(e.ErrorKind), 300)))
	}
	if len(parts) == 0 {
		return "the value does not match"
	}
	return c.clean(strings.Join(parts, "; "), maxSchemaMessage)
}

func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}

func leafMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return fmt.Sprintf("pattern: does not match %q", k.Want)
	case *kind.Format:
		return fmt.Sprintf("format: not a valid %s", k.Want)
	case *kind.Minimum:
		return "minimum: less than " + k.Want.RatString()
	case *kind.Maximum:
		return "maximum: greater than " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return "exclusiveMinimum: not greater than " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return "exclusiveMaximum: not less than " + k.Want.RatString()
	case *kind.MultipleOf:
		return "multipleOf: not a multiple of " + k.Want.RatString()
	case *kind.ContentEncoding:
		return fmt.Sprintf("contentEncoding: not %s", k.Want)
	case *kind.ContentMediaType:
		return fmt.Sprintf("contentMediaType: not %s", k.Want)
	case *kind.FalseSchema:
		return "false schema: no value is allowed here"
	}
	msg := k.LocalizedString(schemaPrinter)
	if kw := k.KeywordPath(); len(kw) > 0 && !strings.HasPrefix(msg, kw[len(kw)-1]) {
		msg = kw[len(kw)-1] + ": " + msg
	}
	return msg
}

// Check returns a description of how instance fails schema ("" when it
// matches), or an error when the schema or the instance cannot be read.
func (c *SchemaCache) Check(schema, instance []byte) (string, error) {
	return c.check(schema, instance)
}

// hitLocked returns the cached entry of the canonical digest key, moved
// to the front of the LRU; c.mu is held.
func (c *SchemaCache) hitLocked(key [32]byte) (*schemaEntry, bool) {
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*schemaEntry), true
}

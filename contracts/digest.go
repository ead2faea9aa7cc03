package contracts

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The digests pikod stores and compares, in one place. Each is the hex
// SHA-256 of its parts, each part length-prefixed so that no two inputs
// share an encoding. Their encodings are frozen (TestDigestsFrozen): a
// change would unpin every trusted tool, void every pending approval and
// move every skill's pin. Credentials' identity (vault.Identity) and the
// receipt chain (approvals) hash their own records the same way, in their
// own packages.

// SHA256Hex is the hex SHA-256 of b: a result's, an artifact's or a
// schema's digest as pikod reports it.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON re-encodes v with sorted object keys; invalid or empty
// input is returned as is.
func CanonicalJSON(v json.RawMessage) []byte {
	if len(bytes.TrimSpace(v)) == 0 {
		return nil
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return v
	}
	out, err := json.Marshal(x) // maps marshal with sorted keys
	if err != nil {
		return v
	}
	return out
}

// ToolDigest is the hex SHA-256 of a tool definition: name, title,
// description, input and output schema and annotations, each schema and
// annotation object re-encoded canonically (sorted keys) so that
// formatting alone never changes it.
func ToolDigest(name, title, description string, input, output, annotations json.RawMessage) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(name), []byte(title), []byte(description),
		CanonicalJSON(input), CanonicalJSON(output), CanonicalJSON(annotations)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ToolExecutionDigest is a tool's digest (ToolDigest) with its execution
// object hashed too when it has one, so the digests of tools without one
// are ToolDigest's.
func ToolExecutionDigest(base string, execution json.RawMessage) string {
	exec := CanonicalJSON(execution)
	if len(exec) == 0 {
		return base
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:", len(base), base, len(exec))
	h.Write(exec)
	return hex.EncodeToString(h.Sum(nil))
}

// ActionDigest is the hex SHA-256 of the server, tool, exact argument bytes
// and the four fingerprints, each field length-prefixed so that no two
// different actions share an encoding.
func ActionDigest(server, tool string, args []byte, fp Fingerprints) string {
	return KindDigest(ReceiptApproved, server, tool, args, fp)
}

// KindDigest is ActionDigest of an action of kind: a task creation or
// cancellation (mcp_task_create, mcp_task_cancel) also binds its kind, so
// an approval of one is never the approval of a plain call with the same
// arguments. For every other kind it equals ActionDigest.
func KindDigest(kind, server, tool string, args []byte, fp Fingerprints) string {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	switch kind {
	case ReceiptTaskCreate, ReceiptTaskCancel:
		field([]byte("pikod task action v1"))
		field([]byte(kind))
	default:
		field([]byte("pikod action v1"))
	}
	field([]byte(server))
	field([]byte(tool))
	field(args)
	field([]byte(fp.Settings))
	field(binary.BigEndian.AppendUint64(nil, fp.CredentialGeneration))
	field(binary.BigEndian.AppendUint64(nil, fp.ConnectionGeneration))
	field([]byte(fp.Tool))
	return hex.EncodeToString(h.Sum(nil))
}

// SkillSetDigest is the hex SHA-256 of a skill's files: each URI and digest,
// length-prefixed, in URI order. It moves when any file is rotated, added
// or removed, and only then.
func SkillSetDigest(files []SkillFile) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b SkillFile) int { return strings.Compare(a.URI, b.URI) })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%d:%s%d:%s", len(f.URI), f.URI, len(f.Digest), f.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ProposalDigest is the ProposalDigest of a proposed answer.
func ProposalDigest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}
